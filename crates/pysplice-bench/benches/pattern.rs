//! Structural pattern matching against a long call: sequence wildcards (`$$$`) that a plain
//! backtracking search tries in every combination. A call with 1,000 arguments against patterns
//! with six `$$$`: one that cannot match (the worst case: every split is tried) and one that
//! matches with the wildcards spread out and a bound metavariable. Goal: under 10 ms each.
//!
//! `cargo bench -p pysplice-bench --bench pattern`

use std::hint::black_box;
use std::time::Duration;

use criterion::Criterion;
use pysplice::{ParsedFile, Pattern, SourceFile};

fn main() {
    let args: Vec<String> = (0..1000).map(|i| format!("a{i}")).collect();
    let parsed =
        ParsedFile::parse(SourceFile::new("bench.py", format!("g({})\n", args.join(", ")))).expect("the call parses");
    let body = parsed.root().children().first().expect("a module has a body");
    let call = body.children().first().expect("the module holds the call");
    let cases = [
        ("six-seq-no-match", "g($$$, $$$, $$$, $$$, $$$, $$$, missing)", false),
        (
            "six-seq-spread",
            "g($$$, a1, $$$, a500, $$$, $X, $$$, a998, $$$, $X, $$$)",
            false,
        ),
        (
            "six-seq-match",
            "g($$$, a1, $$$, a500, $$$, $X, $$$, a998, $$$, a999, $$$)",
            true,
        ),
    ];
    let mut criterion = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let mut group = criterion.benchmark_group("pattern");
    for (label, text, expected) in cases {
        let pattern = Pattern::parse(text).expect("the pattern parses");
        assert_eq!(pattern.matches_statement(call), expected, "{text}");
        group.bench_function(label, |b| {
            b.iter(|| black_box(pattern.matches_statement(black_box(call))))
        });
    }
    group.finish();
    criterion.final_summary();
}
