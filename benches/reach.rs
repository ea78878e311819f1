//! Reach query for `DeepseekV2Model.forward` over the whole `sglang/` package of the newest
//! pinned release (`target/sglang-corpus/<newest>-full/sglang`, about 4,700 files).
//!
//! - `scan`: read every `.py` file (parallel), parse none;
//! - `reach (related prefilter)`: scan + the identifier-closure prefilter + parse the related files
//!   + build the graph + answer: what `pysplice reach` does;
//! - `graph (class prefilter, baseline)`: scan + parse every file with a `class` statement + build
//!   the whole graph: what the query would cost without the closure.
//!
//! Run `bash scripts/fetch-corpus.sh` first; without the corpus the bench says so and exits.

use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use pysplice::project::{Project, ScanOptions, Scope};

/// SGLang's conventions (`EntryClass`, draft models by name).
fn sglang() -> ScanOptions {
    ScanOptions::default().with_conventions(pysplice::recipes::sglang_models::conventions())
}

fn package_dir() -> Option<PathBuf> {
    let root = std::env::var_os("PYSPLICE_CORPUS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target/sglang-corpus"),
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

criterion_group!(benches, bench);
criterion_main!(benches);
