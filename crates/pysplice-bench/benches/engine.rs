//! Plan + apply + verify of a four-hook spec on the newest pinned SGLang release's
//! `deepseek_v2.py`, against a single parse of the same file measured in the same run.
//!
//! `bash scripts/fetch-corpus.sh && cargo bench -p pysplice-bench --bench engine`

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use pysplice::{ParsedFile, Recipe, SourceFile};

const VERSION: &str = "0.5.23";
const FILE: &str = "deepseek_v2.py";

const SPEC: &str = r#"
[recipe]
id = "bench"
summary = "Four hooks of the hidden-state recipe's shapes"

[[hook]]
id = "imports"
summary = "imports"
ensure-imports = ["os", "pathlib", "torch"]

[[hook]]
id = "init"
summary = "state in __init__"
in = "DeepseekV2Model.__init__"
at = "end"
code = '''
self._dump_dir = os.environ.get("DUMP_DIR")
self._dump_count = 0
'''

[[hook]]
id = "dump"
summary = "wrap the returns of forward"
in = "DeepseekV2Model.forward"
wrap-returns = "{value} if self._dump_dir is None else dump(self, {param.3}, {value})"
unless-inside = "if not self.pp_group.is_last_rank: $$$"

[[hook]]
id = "capture"
summary = "turn capture on"
in = "DeepseekV2ForCausalLM.__init__"
at = { after = "self.capture_aux_hidden_states = $_" }
code = '''
if os.environ.get("DUMP_DIR"):
    self.set_eagle3_layers_to_capture()
'''
"#;

fn best_of(rounds: usize, mut run: impl FnMut()) -> Duration {
    (0..rounds)
        .map(|_| {
            let start = Instant::now();
            run();
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
}

fn main() {
    let path = pysplice_test_support::corpus_root()
        .join(VERSION)
        .join("sglang/srt/models")
        .join(FILE);
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!(
            "{} is missing: run `bash scripts/fetch-corpus.sh` first",
            path.display()
        );
        return;
    };
    let recipe = Recipe::from_toml("bench.toml", SPEC).expect("the bench spec is valid");
    let parse = || black_box(ParsedFile::parse(SourceFile::new(FILE, text.clone())).expect("parses"));
    let apply = || {
        let patched = pysplice::apply(&recipe, SourceFile::new(FILE, text.clone())).expect("applies");
        assert!(
            patched.outcomes().iter().all(|o| o.status == pysplice::Status::Applied),
            "every hook is placed"
        );
        black_box(patched);
    };

    let mut criterion = Criterion::default().configure_from_args().sample_size(20);
    let mut group = criterion.benchmark_group("engine");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("parse", |b| b.iter(parse));
    group.bench_function("plan+apply+verify", |b| b.iter(apply));
    group.finish();
    criterion.final_summary();

    // The ratio, from interleaved best-of rounds in this same process (the machine is shared).
    let (mut parse_best, mut apply_best) = (Duration::MAX, Duration::MAX);
    for _ in 0..5 {
        parse_best = parse_best.min(best_of(4, || {
            parse();
        }));
        apply_best = apply_best.min(best_of(4, apply));
    }
    println!(
        "{FILE} ({VERSION}, {} bytes): parse {:.2} ms, plan+apply+verify {:.2} ms, ratio {:.2}x (goal <= 3x)",
        text.len(),
        parse_best.as_secs_f64() * 1e3,
        apply_best.as_secs_f64() * 1e3,
        apply_best.as_secs_f64() / parse_best.as_secs_f64()
    );
}
