//! Parse + outline of the newest pinned SGLang release's `deepseek_v2.py` (about 150 KB), and, for
//! scale, CPython's `ast.parse` of the same text timed the same way (best of several repeats).
//!
//! `bash scripts/fetch-corpus.sh && cargo bench -p pysplice-bench --bench parse_outline`

use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, Throughput};
use pysplice::{ParsedFile, SourceFile};

const VERSION: &str = "0.5.23";
const FILE: &str = "sglang/srt/models/deepseek_v2.py";

/// Parses and outlines `text`, returning something that depends on the whole result.
fn parse_outline(text: String) -> usize {
    let parsed = ParsedFile::parse(SourceFile::new("deepseek_v2.py", text)).expect("the corpus file parses");
    parsed.definitions().len()
}

/// Best time per parse over `repeats` rounds of `number` parses, as Python's `timeit.repeat` reports.
fn best_of(text: &str, number: usize, repeats: usize) -> Duration {
    let mut best = Duration::MAX;
    for _ in 0..repeats {
        let copies: Vec<String> = (0..number).map(|_| text.to_owned()).collect();
        let start = Instant::now();
        for copy in copies {
            black_box(parse_outline(copy));
        }
        best = best.min(start.elapsed() / number as u32);
    }
    best
}

/// CPython's best time per `ast.parse(text)`, or why it could not be measured.
fn cpython_best_of(path: &Path, number: usize, repeats: usize) -> Result<(Duration, String), String> {
    let script = "import ast, sys, timeit\n\
                  src = open(sys.argv[1], encoding='utf-8').read()\n\
                  n, r = int(sys.argv[2]), int(sys.argv[3])\n\
                  print(min(timeit.repeat(lambda: ast.parse(src), number=n, repeat=r)) / n)\n\
                  print(sys.version.split()[0])";
    let output = Command::new("python3")
        .args(["-c", script])
        .arg(path)
        .args([number.to_string(), repeats.to_string()])
        .output()
        .map_err(|err| format!("cannot run python3: {err}"))?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let mut lines = stdout.lines();
    let seconds: f64 = lines
        .next()
        .and_then(|line| line.trim().parse().ok())
        .ok_or_else(|| format!("unexpected output from python3: {stdout}"))?;
    let version = lines.next().unwrap_or("?").to_string();
    Ok((Duration::from_secs_f64(seconds), version))
}

fn megabytes_per_second(bytes: usize, per_parse: Duration) -> f64 {
    bytes as f64 / per_parse.as_secs_f64() / 1e6
}

fn main() {
    let path = pysplice_test_support::corpus_root().join(VERSION).join(FILE);
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!(
            "parse_outline: {} is missing; run `bash scripts/fetch-corpus.sh` first (nothing benchmarked)",
            path.display()
        );
        return;
    };
    let bytes = text.len();

    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("parse_outline");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_function(format!("deepseek_v2.py ({VERSION})"), |b| {
        b.iter_batched(|| text.clone(), parse_outline, BatchSize::SmallInput);
    });
    // The parser alone, without the conversion to pysplice's tree and the outline, for scale.
    group.bench_function(format!("deepseek_v2.py ({VERSION}), rustpython-parser only"), |b| {
        b.iter(|| rustpython_parser::parse(&text, rustpython_parser::Mode::Module, "deepseek_v2.py").is_ok());
    });
    group.finish();
    criterion.final_summary();

    // `cargo bench` passes `--bench`; under `cargo test --benches` only the quick run above happens.
    if !std::env::args().any(|arg| arg == "--bench") {
        return;
    }
    let (number, repeats) = (20, 7);
    let rust = best_of(&text, number, repeats);
    println!();
    println!(
        "{} ({bytes} bytes, {} definitions), best of {repeats} x {number}:",
        path.display(),
        parse_outline(text.clone())
    );
    println!(
        "  pysplice parse + outline: {:8.3} ms  {:7.1} MB/s",
        rust.as_secs_f64() * 1e3,
        megabytes_per_second(bytes, rust)
    );
    match cpython_best_of(&path, number, repeats) {
        Ok((python, version)) => {
            println!(
                "  CPython {version} ast.parse: {:8.3} ms  {:7.1} MB/s",
                python.as_secs_f64() * 1e3,
                megabytes_per_second(bytes, python)
            );
            println!(
                "  pysplice is {:.2}x the speed of ast.parse",
                python.as_secs_f64() / rust.as_secs_f64()
            );
        }
        Err(err) => println!("  CPython not measured: {err}"),
    }
}
