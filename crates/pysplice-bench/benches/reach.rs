//! Reach query for `DeepseekV2Model.forward` over the whole `sglang/` package of the newest
//! pinned release (`target/sglang-corpus/<newest>-full/sglang`, about 4,700 files).
//!
//! - `scan`: read every `.py` file (parallel), parse none;
//! - `reach (related prefilter)`: scan + the identifier-closure prefilter + parse the related files
//!   + build the graph + answer: what `pysplice reach` does;
//! - `graph (class prefilter, baseline)`: scan + parse every file with a `class` statement + build
//!   the whole graph: what the query would cost without the closure.
//!
//! - `chain/N`: one module holding a chain of N classes (`class C1(C0)`, ...), `reach C0.f`:
//!   the method resolution orders of a deep hierarchy (memoised, cut at 1,000 classes); needs no
//!   corpus.
//!
//! Run `bash scripts/fetch-corpus.sh` first; without the corpus the bench says so and runs only
//! the chains.

use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use pysplice::project::{Project, ScanOptions, Scope};

/// SGLang's conventions (`EntryClass`, draft models by name).
fn sglang() -> ScanOptions {
    ScanOptions::default().with_conventions(
        pysplice::Conventions::default()
            .with_entry_list("EntryClass")
            .with_draft_markers(["eagle", "nextn", "mtp", "medusa", "dflash", "draft"]),
    )
}

fn package_dir() -> Option<PathBuf> {
    let root = std::env::var_os("PYSPLICE_CORPUS").map_or_else(
        || Path::new(pysplice_test_support::WORKSPACE).join("target/sglang-corpus"),
        PathBuf::from,
    );
    let mut fulls: Vec<PathBuf> = std::fs::read_dir(&root)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().ends_with("-full")))
        .filter(|p| p.join(".complete").exists())
        .collect();
    fulls.sort_by_key(|p| {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        name.trim_end_matches("-full")
            .split('.')
            .map(|part| part.parse::<u64>().unwrap_or(0))
            .collect::<Vec<_>>()
    });
    fulls.pop().map(|p| p.join("sglang"))
}

/// `class C0` with method `f`, then `class Ci(C{i-1})` up to `n - 1`.
fn chain_source(n: usize) -> String {
    let mut source = String::from("class C0:\n    def f(self):\n        pass\n");
    for i in 1..n {
        source.push_str(&format!("class C{i}(C{}):\n    pass\n", i - 1));
    }
    source
}

fn chains(c: &mut Criterion) {
    let mut group = c.benchmark_group("reach");
    group.sample_size(10).measurement_time(Duration::from_secs(10));
    for n in [1_000, 4_000, 20_000] {
        let source = chain_source(n);
        group.bench_function(format!("chain/{n}"), |b| {
            b.iter(|| {
                let project = Project::from_sources("pkg", vec![("m.py".into(), source.clone())]);
                project.reach("C0.f").map(|r| r.runners.len()).unwrap_or(0)
            });
        });
    }
    group.finish();
}

fn bench(c: &mut Criterion) {
    let Some(dir) = package_dir() else {
        eprintln!("reach bench: no full SGLang package under target/sglang-corpus; run `bash scripts/fetch-corpus.sh`");
        return;
    };
    let mut group = c.benchmark_group("reach");
    group.sample_size(10).measurement_time(Duration::from_secs(20));
    group.bench_function("scan", |b| {
        b.iter(|| {
            Project::scan_with(&dir, &sglang())
                .map(|p| p.files().len())
                .unwrap_or(0)
        });
    });
    group.bench_function("reach (related prefilter)", |b| {
        b.iter(|| {
            let project = Project::scan_with(&dir, &sglang()).expect("corpus is readable");
            project
                .reach("DeepseekV2Model.forward")
                .map(|r| r.entries.len())
                .unwrap_or(0)
        });
    });
    group.bench_function("graph (class prefilter, baseline)", |b| {
        b.iter(|| {
            let project = Project::scan_with(&dir, &sglang()).expect("corpus is readable");
            let graph = project.graph(&Scope::Classes);
            graph.classes().len()
        });
    });
    group.finish();
}

criterion_group!(benches, chains, bench);
criterion_main!(benches);
