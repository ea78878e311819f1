//! Re-planning after a one-character edit, as an editor does on every keystroke: the newest
//! pinned SGLang release's `deepseek_v2.py` (about 150 KB) in a `Document`, one character of a
//! comment changed through `apply_change`, then `plan` of the bundled `sglang-hs-dump` recipe.
//! Measured on the file as released (nothing applied yet) and with the recipe applied (markers
//! present, every hook "already applied"). Goal: under 50 ms. Also the code action's edits of
//! the same version, planned afresh or from the plan the diagnostics kept.
//!
//! `bash scripts/fetch-corpus.sh && cargo bench -p pysplice-bench --bench replan`

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::Criterion;
use pysplice::{Document, Utf16Position, Utf16Range};
use pysplice::{Recipe, SourceFile};

const FILE: &str = "target/sglang-corpus/0.5.23/sglang/srt/models/deepseek_v2.py";

fn main() {
    let path = Path::new(pysplice_test_support::WORKSPACE).join(FILE);
    let Ok(text) = std::fs::read_to_string(&path) else {
        println!(
            "replan: {} is missing; run `bash scripts/fetch-corpus.sh` first. Nothing measured.",
            path.display()
        );
        return;
    };
    let recipe = Recipe::from_file(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../pysplice-sglang/python/pysplice_sglang/dump/sglang_hs_dump.toml"),
    )
    .expect("bundled recipe");
    let patched = pysplice::apply(&recipe, SourceFile::new(FILE, text.as_str())).expect("the recipe applies");

    let mut criterion = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(8))
        .configure_from_args();
    let mut group = criterion.benchmark_group("replan");
    for (label, start) in [("released", text.as_str()), ("applied", patched.output())] {
        let mut doc = Document::new(FILE, start);
        // A comment line, so that every edit keeps the file valid Python.
        let line = start
            .lines()
            .position(|l| l.trim_start().starts_with("# ") && l.len() > 8)
            .expect("a comment line") as u32;
        let column = start
            .lines()
            .nth(line as usize)
            .map_or(0, |l| l.find("# ").unwrap_or(0) + 2) as u32;
        let range = Utf16Range::new(Utf16Position::new(line, column), Utf16Position::new(line, column + 1));
        assert!(doc.plan(&recipe).expect("plans").is_complete());
        let mut flip = false;
        group.bench_function(format!("one_char_edit_then_plan/{label}"), |b| {
            b.iter(|| {
                flip = !flip;
                doc.apply_change(Some(range), if flip { "x" } else { "y" });
                black_box(doc.plan(&recipe).expect("plans"))
            });
        });
        // The same inside the class the recipe patches (a comment in `DeepseekV2Model`): the
        // whole class is parsed again, not only the edited line.
        // An original comment line of the class (found in the released text, so never one of
        // the recipe's lines), then the same line in this text.
        let original_class = text.find("\nclass DeepseekV2Model(").expect("DeepseekV2Model");
        let comment_at = original_class
            + text[original_class..]
                .find("\n        # ")
                .expect("a comment in the class")
            + 1;
        let comment = &text[comment_at..comment_at + text[comment_at..].find('\n').unwrap_or(0) + 1];
        let class = start.find("\nclass DeepseekV2Model(").expect("DeepseekV2Model");
        let inner = class + start[class..].find(comment).expect("the comment") + "        # ".len();
        let inner_line = start[..inner].matches('\n').count() as u32;
        let inner_column = (inner - start[..inner].rfind('\n').map_or(0, |i| i + 1)) as u32;
        let in_class = Utf16Range::new(
            Utf16Position::new(inner_line, inner_column),
            Utf16Position::new(inner_line, inner_column + 1),
        );
        group.bench_function(format!("one_char_edit_in_the_patched_class_then_plan/{label}"), |b| {
            b.iter(|| {
                flip = !flip;
                doc.apply_change(Some(in_class), if flip { "x" } else { "y" });
                black_box(doc.plan(&recipe).expect("plans"))
            });
        });
        // A fresh document per keystroke: every plan parses the whole file.
        group.bench_function(format!("whole_parse_then_plan/{label}"), |b| {
            b.iter(|| {
                flip = !flip;
                doc.apply_change(Some(range), if flip { "x" } else { "y" });
                let fresh = Document::new(FILE, &doc.text());
                black_box(fresh.plan(&recipe).expect("plans"))
            });
        });
        // The code action of the same version: planned afresh (two parses, as before), or from
        // the parse and plan the diagnostics kept.
        group.bench_function(format!("edit_plan_then_apply_edits_fresh/{label}"), |b| {
            b.iter(|| {
                flip = !flip;
                doc.apply_change(Some(range), if flip { "x" } else { "y" });
                black_box(doc.plan(&recipe).expect("plans"));
                black_box(doc.apply_edits(&recipe).expect("applies"))
            });
        });
        group.bench_function(format!("edit_plan_then_apply_edits_from_kept/{label}"), |b| {
            b.iter(|| {
                flip = !flip;
                doc.apply_change(Some(range), if flip { "x" } else { "y" });
                let (plan, kept) = doc.plan_keeping(&recipe).expect("plans");
                black_box(plan);
                black_box(doc.apply_edits_from(&recipe, kept).expect("applies"))
            });
        });
        group.bench_function(format!("one_char_edit_only/{label}"), |b| {
            b.iter(|| {
                flip = !flip;
                doc.apply_change(Some(range), if flip { "x" } else { "y" });
                black_box(doc.version())
            });
        });
    }
    group.finish();
    criterion.final_summary();
}
