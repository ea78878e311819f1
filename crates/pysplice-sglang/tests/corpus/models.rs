//! The hidden-state dump for every SGLang architecture with EAGLE-3 aux capture
//! (`pysplice::recipes::sglang_models`), on every pinned release: which architectures are chosen
//! and where their hooks land; per file, CPython compiles the result, only additions (wrapped
//! returns aside), applying twice equals once, a check after applying finds nothing to do, and
//! revert gives back the original bytes; snapshots per release with one section per patched
//! file (family); and on `deepseek_v2.py` the same bytes as the single-file recipe.

use crate::common;
use crate::snapshot_groups;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use pysplice::project::select::{self, RootChoices};
use pysplice::{Patched, Recipe, SourceFile, Status};
use rayon::prelude::*;
use similar::{DiffTag, TextDiff};

pub(crate) fn recipe() -> Recipe {
    pysplice_sglang::recipes::models_recipe().expect("the bundled recipes compile")
}

pub(crate) fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sglang_models").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Selection and in-memory patch of every file of `version` that some architecture needs,
/// through the command's own entry point (`models::patch`, nothing written).
pub(crate) struct Release {
    pub(crate) selection: RootChoices,
    /// (file, original, patched)
    pub(crate) files: Vec<(String, String, Patched)>,
}

/// Every pinned release, selected and patched once for all the tests of this file, the
/// releases spread over the cores.
pub(crate) fn releases() -> &'static [(String, Release)] {
    static ALL: std::sync::OnceLock<Vec<(String, Release)>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        let recipe = recipe();
        common::pinned_versions()
            .into_par_iter()
            .map(|v| {
                let r = release(&recipe, &v);
                (v, r)
            })
            .collect()
    })
}

fn release(recipe: &Recipe, version: &str) -> Release {
    use pysplice_sglang::models::{patch, Mode};
    let dir = common::models_dir(version);
    let (selection, patches) = patch(recipe, &dir, None, Mode::Apply).unwrap_or_else(|err| panic!("{version}: {err}"));
    let files = patches
        .into_iter()
        .map(|p| (p.relative, p.file.source().text().to_string(), p.patched))
        .collect();
    Release { selection, files }
}

/// A key for one (input, recipe) pair: equal keys give equal answers, so the invariants are
/// checked once per key, however many releases share the file.
fn key(text: &str, recipe: &Recipe) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    format!("{recipe:?}").hash(&mut h);
    h.finish()
}

/// Files of the release that define `set_eagle3_layers_to_capture` in a class.
fn files_with_capture(version: &str) -> Vec<String> {
    let mut out: Vec<String> = common::python_files(&common::models_dir(version))
        .into_iter()
        .filter(|p| {
            std::fs::read_to_string(p)
                .unwrap_or_default()
                .contains("    def set_eagle3_layers_to_capture(")
        })
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

/// Per file: the hooks' statuses and where, then every change (inserted blocks by size and first
/// line; wrapped returns in full). Asserts on the way that only `return` lines are replaced.
fn file_summary(version: &str, file: &str, patched: &Patched, roots: &[String]) -> String {
    let mut out = format!(
        "## {file}: {} -> {} lines; for {}\n",
        patched.input().lines().count(),
        patched.output().lines().count(),
        roots.join(", ")
    );
    for o in patched.outcomes() {
        let status = match (&o.status, o.lines) {
            (Status::Applied, Some((a, b))) => format!("applied lines {a}-{b}"),
            (Status::Skipped { reason }, _) => format!("skipped: {reason}"),
            (other, _) => panic!("{version} {file}: {}: {other:?}", o.hook),
        };
        out.push_str(&format!("  {:<13}{status}\n", o.hook));
    }
    // 1-based line spans of the original's return statements: the only lines that may change.
    let parsed = pysplice::ParsedFile::parse(SourceFile::new(file, patched.input())).unwrap();
    let mut returns = Vec::new();
    parsed.root().walk(&mut |n| {
        if n.kind() == "Return" {
            let lines = parsed.source().lines();
            returns.push((
                lines.line_of(n.range().start),
                lines.line_of(n.range().end.saturating_sub(1)),
            ));
        }
        true
    });
    let diff = TextDiff::from_lines(patched.input(), patched.output());
    let (old, new) = (diff.old_slices(), diff.new_slices());
    for op in diff.ops() {
        let (tag, a, b) = op.as_tag_tuple();
        match tag {
            DiffTag::Equal => {}
            DiffTag::Insert => {
                let first_code = new[b.clone()]
                    .iter()
                    .map(|l| l.trim())
                    .find(|l| !l.is_empty() && !l.starts_with('#'))
                    .unwrap_or("");
                out.push_str(&format!("  +{} after old {}: {first_code}\n", b.len(), a.start));
            }
            DiffTag::Delete | DiffTag::Replace => {
                for (i, line) in old[a.clone()].iter().enumerate() {
                    let n = a.start + 1 + i;
                    assert!(
                        returns.iter().any(|&(x, y)| x <= n && n <= y),
                        "{version} {file}: line {n}, not part of a return, changed: {line}"
                    );
                    out.push_str(&format!("  wrapped old {n}: {}\n", line.trim()));
                }
            }
        }
    }
    out
}

#[test]
fn every_architecture_with_capture_on_every_pinned_release() {
    let recipe = recipe();
    let out_dir = scratch("compile");
    let mut distinct = Vec::new();
    let mut checked = std::collections::HashSet::new();
    for (version, r) in releases() {
        let version = version.clone();
        // Every file defining the capture method is covered, except mindspore.py (another backend).
        let mut covered: Vec<String> = r.files.iter().map(|(f, _, _)| f.clone()).collect();
        covered.sort();
        for f in files_with_capture(&version) {
            if f == "mindspore.py" {
                let root = r.selection.named("MindSporeForCausalLM");
                assert!(
                    root.iter().all(|x| x.skipped.is_some()),
                    "{version}: mindspore selected"
                );
                continue;
            }
            if f == "mimo_v2_flash.py" {
                // 0.5.7 - 0.5.8: only MiMoV2Model has the method; the entry class has none (SGLang's
                // EAGLE-3 worker calls it on the entry class) and the forward never returns the
                // aux states, so there is nothing for the dump to take (docs/sglang.md, Limits).
                assert!(
                    r.selection.roots.iter().all(|x| x.file != f),
                    "{version}: a root in {f}"
                );
                assert!(!covered.contains(&f), "{version}: {f} patched");
                continue;
            }
            // A class of the file with the method is a root (or a model held by one).
            let as_root = r.selection.roots.iter().any(|x| x.file == f && x.skipped.is_none());
            assert!(
                as_root || covered.contains(&f),
                "{version}: {f} has capture but is not patched"
            );
        }
        for root in &r.selection.roots {
            if let Some(why) = &root.skipped {
                assert_eq!(
                    root.class, "MindSporeForCausalLM",
                    "{version}: {} skipped: {why}",
                    root.class
                );
            }
        }
        let plans = select::expand(&recipe, &r.selection, None, "models").unwrap();
        for (file, input, once) in &r.files {
            assert!(once.changed(), "{version} {file}: nothing changed");
            let plan = plans.iter().find(|f| f.file == *file).unwrap().recipe.clone();
            // The same file and hooks in an earlier release give the same answer.
            if checked.insert(key(input, &plan)) {
                distinct.push((version.clone(), file, input, once, plan));
            }
        }
    }
    // Idempotent, and a check after applying finds nothing to do; revert is exact.
    let compiled: Vec<PathBuf> = distinct
        .par_iter()
        .map(|(version, file, input, once, plan)| {
            let twice = pysplice::apply(plan, SourceFile::new(file.as_str(), once.output())).unwrap();
            assert!(!twice.changed(), "{version} {file}: the second apply changed the file");
            assert!(
                twice
                    .outcomes()
                    .iter()
                    .all(|o| matches!(o.status, Status::AlreadyApplied | Status::Skipped { .. })),
                "{version} {file}: {:?}",
                twice.outcomes()
            );
            let back = pysplice::revert(&recipe, SourceFile::new(file.as_str(), once.output())).unwrap();
            assert!(back.output() == *input, "{version} {file}: revert is not exact");
            let path = out_dir.join(version).join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, once.output()).unwrap();
            path
        })
        .collect();
    assert!(compiled.len() > 50, "only {} distinct patched files", compiled.len());
    // CPython compiles every output: one process per core.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let children: Vec<_> = compiled
        .chunks(compiled.len().div_ceil(cores))
        .map(|run| {
            Command::new("python3")
                .arg("-c")
                .arg("import sys\nfor p in sys.argv[1:]:\n    compile(open(p, encoding='utf-8').read(), p, 'exec')\n")
                .args(run)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("python3 runs")
        })
        .collect();
    for child in children {
        let output = child.wait_with_output().expect("python3 runs");
        assert!(
            output.status.success(),
            "CPython cannot compile: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

#[test]
fn snapshot_per_release_and_family() {
    let mut results = Vec::new();
    for (version, r) in releases() {
        let mut by_file: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        let mut out = format!("SGLang {version}: architectures with aux capture and where their hooks land\n\n");
        for root in &r.selection.roots {
            match &root.skipped {
                Some(why) => out.push_str(&format!("{} ({}): skipped: {why}\n", root.class, root.file)),
                None => {
                    out.push_str(&format!("{} ({})\n", root.class, root.file));
                    for t in &root.targets {
                        out.push_str(&format!("    {:<8} {}:{}  [{}]\n", t.hook, t.file, t.path, t.via));
                        let roots = by_file.entry(&t.file).or_default();
                        if !roots.contains(&root.class) {
                            roots.push(root.class.clone());
                        }
                    }
                }
            }
        }
        out.push('\n');
        for (file, _, patched) in &r.files {
            out.push_str(&file_summary(version, file, patched, &by_file[file.as_str()]));
        }
        results.push((version.clone(), out));
    }
    snapshot_groups::assert_distinct("sglang_models", &results);
}

/// On `deepseek_v2.py` the selection lands where the single-file recipe's paths do: the same
/// bytes, wherever the release has aux capture.
#[test]
fn deepseek_v2_is_patched_as_by_the_single_file_recipe() {
    let mut single = Recipe::from_toml_with(
        "sglang_hs_dump.toml",
        pysplice_sglang::recipes::SGLANG_HS_DUMP,
        &pysplice_sglang::recipes::dump_code(),
    )
    .expect("the recipe compiles");
    pysplice_sglang::recipes::stamp(&mut single); // as the bundled models recipe is
    let mut compared = 0;
    for (version, r) in releases() {
        let Some((_, input, patched)) = r.files.iter().find(|(f, _, _)| f == "deepseek_v2.py") else {
            assert!(
                !files_with_capture(version).contains(&"deepseek_v2.py".to_string()),
                "{version}: deepseek_v2.py has capture but is not patched"
            );
            continue;
        };
        let by_path = pysplice::apply(&single, SourceFile::new("deepseek_v2.py", input.as_str())).unwrap();
        assert!(
            by_path.output() == patched.output(),
            "{version}: the two recipes differ"
        );
        compared += 1;
    }
    assert!(compared >= 4, "compared only {compared} releases");
}

/// The three hooks of the models recipe carry the single-file recipe's code exactly (only their
/// targets differ), so the two never drift apart.
#[test]
fn hook_code_is_shared_with_the_single_file_recipe() {
    let mut single = Recipe::from_toml_with(
        "a.toml",
        pysplice_sglang::recipes::SGLANG_HS_DUMP,
        &pysplice_sglang::recipes::dump_code(),
    )
    .unwrap();
    pysplice_sglang::recipes::stamp(&mut single);
    let models = recipe();
    let ids: Vec<&str> = models.hooks.iter().map(|h| h.id.as_str()).collect();
    let single_ids: Vec<&str> = single.hooks.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, single_ids);
    for (a, b) in models.hooks.iter().zip(&single.hooks) {
        assert_eq!(format!("{:?}", a.action), format!("{:?}", b.action), "hook {}", a.id);
    }
    assert_eq!(models.vars, single.vars);
}

/// One file on its own: the selection inside that file (its architectures, its model).
#[test]
fn single_file_selection() {
    let recipe = recipe();
    let dir = common::models_dir("0.5.23");
    let text = std::fs::read_to_string(dir.join("gpt_oss.py")).unwrap();
    let patched = pysplice::apply(&recipe, SourceFile::new("gpt_oss.py", text.as_str())).unwrap();
    let statuses: Vec<String> = patched
        .outcomes()
        .iter()
        .map(|o| format!("{} {:?} {:?}", o.hook, o.status, o.lines.is_some()))
        .collect();
    assert!(
        patched.outcomes().iter().all(|o| o.status == Status::Applied),
        "{statuses:#?}"
    );
    assert!(patched
        .output()
        .contains("_pysplice_hs_dump(self, input_ids, forward_batch, (hidden_states, aux_hidden_states))"));
    // qwen3_moe.py alone: its forward is inherited from qwen2_moe.py, which is not there.
    let text = std::fs::read_to_string(dir.join("qwen3_moe.py")).unwrap();
    let err = pysplice::apply(&recipe, SourceFile::new("qwen3_moe.py", text.as_str())).unwrap_err();
    assert!(err.to_string().contains("[hook"), "{err}");
}
