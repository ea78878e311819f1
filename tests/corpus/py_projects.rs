//! The engine on large projects other than SGLang (pinned in `tests/py-corpus.txt`, fetched by
//! `scripts/fetch-corpus.sh`): every `.py` file gets a recipe with hooks of every placement
//! kind on every function and class (start, end, after the first assignment, before every
//! return, wrap-returns; class start, end and a forwarder; imports, after-imports code that uses
//! them, module end), all required but the `after` anchor (not every body has an assignment).
//!
//! Every file is either exact (CPython compiles the output, only additions, applying again
//! changes nothing, revert gives back the bytes) or has hooks refused, each with an error that
//! names the file, the line and the hook, and whose reason is one of the limitations docs/spec.md
//! documents. Hooks at fault are found by bisection; the rest are applied and checked.
//! `--nocapture` shows the numbers.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Instant;

use pysplice::{apply, revert, DefKind, Depth, Error, Node, ParsedFile, Patched, Recipe, SourceFile, Status};

/// Reasons a hook may be refused for: each is a limitation docs/spec.md documents (the test
/// checks that docs/spec.md quotes it).
const DOCUMENTED_LIMITS: &[&str] = &[
    "shares its line with other code",
    "shares its line with other statements",
    "two return statements share line",
    "edit overlapping text",
    "before line",
];

/// At most this many files per project, chosen evenly over the sorted list (suite time;
/// `PYSPLICE_CORPUS_FULL=1` takes every file).
const MAX_FILES_PER_PROJECT: usize = 400;

fn corpus_root() -> PathBuf {
    std::env::var_os("PYSPLICE_PY_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/py-corpus"))
}

fn pinned_projects() -> Vec<String> {
    let list = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py-corpus.txt"))
        .expect("tests/py-corpus.txt is readable");
    list.lines()
        .map(|line| line.split('#').next().unwrap_or("").trim())
        .filter(|line| !line.is_empty())
        .map(|pin| pin.replace("==", "-"))
        .collect()
}

struct GenHook {
    id: String,
    toml: String,
}

fn hook(id: String, target: &str, body: &str) -> GenHook {
    let target_line = if target == "module" {
        String::new()
    } else {
        format!("in = \"{target}\"\n")
    };
    GenHook {
        toml: format!("[[hook]]\nid = \"{id}\"\nsummary = \"{id}\"\n{target_line}{body}\n"),
        id,
    }
}

fn recipe(hooks: &[&GenHook]) -> Recipe {
    let mut text = String::from("[recipe]\nid = \"probe\"\nsummary = \"every placement kind\"\n");
    for h in hooks {
        text.push('\n');
        text.push_str(&h.toml);
    }
    Recipe::from_toml("probe.toml", &text).unwrap_or_else(|err| panic!("{err}"))
}

/// The path of definition `index`, with an ordinal when the path is defined more than once.
fn target_of(parsed: &ParsedFile, index: usize) -> String {
    let d = &parsed.definitions()[index];
    let all = parsed.find_all(d.path());
    if all.len() == 1 {
        d.path().to_string()
    } else {
        let n = all.iter().position(|o| o.range() == d.range()).unwrap_or(0) + 1;
        format!("{}#{n}", d.path())
    }
}

/// Calls `visit` on every statement of `block`: its direct children for [`Depth::Top`], else
/// also the statements of nested blocks, never inside nested definitions.
fn visit_statements<'a>(block: &'a Node, depth: Depth, visit: &mut dyn FnMut(&'a Node)) {
    for stmt in block.children() {
        visit(stmt);
        if depth == Depth::Nested && !stmt.is_definition() {
            for inner in stmt.blocks() {
                visit_statements(inner, depth, visit);
            }
        }
    }
}

/// The returns of a definition's own body, and whether it yields.
fn own_returns(node: &Node) -> (Vec<&Node>, bool) {
    let mut returns = Vec::new();
    let mut yields = false;
    if let Some(body) = node.field("body") {
        visit_statements(body, Depth::Nested, &mut |stmt| {
            if stmt.kind() == "Return" {
                returns.push(stmt);
            }
        });
        body.walk(&mut |n| {
            yields |= matches!(n.kind(), "Yield" | "YieldFrom");
            !n.is_definition() && n.kind() != "Lambda"
        });
    }
    (returns, yields)
}

/// An attribute `self.X` that the class assigns somewhere, for a forwarder.
fn self_attribute(class: &Node) -> Option<String> {
    let mut found = None;
    class.walk(&mut |n| {
        if n.kind() == "Assign" {
            for t in n.children()[0].children() {
                if t.kind() == "Attribute"
                    && t.children()[0].kind() == "Name"
                    && t.children()[0].label() == Some("self")
                {
                    found = found.take().or_else(|| t.label().map(str::to_string));
                }
            }
        }
        found.is_none()
    });
    found
}

/// Hooks of every placement kind for one file.
fn hooks_for(parsed: &ParsedFile) -> Vec<GenHook> {
    let mut hooks = vec![
        hook(
            "imports".into(),
            "module",
            "ensure-imports = [\"os\", \"from typing import Any\"]",
        ),
        hook(
            "after-imports".into(),
            "module",
            "at = \"after-imports\"\ncode = \"_pysplice_ai = (os.sep, Any)\"",
        ),
    ];
    for (i, d) in parsed.definitions().iter().enumerate() {
        let target = target_of(parsed, i);
        let node = parsed.node(d);
        if d.kind() == DefKind::Class {
            hooks.push(hook(
                format!("cs{i}"),
                &target,
                "at = \"start\"\ncode = \"_pysplice_cs = 1\"",
            ));
            hooks.push(hook(
                format!("ce{i}"),
                &target,
                "at = \"end\"\ncode = \"_pysplice_ce = 1\"",
            ));
            if let Some(attr) = self_attribute(node) {
                hooks.push(hook(
                    format!("f{i}"),
                    &target,
                    &format!("add-forwarder = \"_pysplice_forward\"\nvia = \"{attr}\""),
                ));
            }
            continue;
        }
        hooks.push(hook(
            format!("s{i}"),
            &target,
            "at = \"start\"\ncode = \"_pysplice_s = 1\"",
        ));
        hooks.push(hook(
            format!("e{i}"),
            &target,
            "at = \"end\"\ncode = \"_pysplice_e = 1\"",
        ));
        // After the first plain assignment of the body, where there is one.
        hooks.push(hook(
            format!("a{i}"),
            &target,
            "at = { after = \"$_ = $_\", nth = \"first\" }\ncode = \"_pysplice_a = 1\"\noptional = true",
        ));
        let (returns, yields) = own_returns(node);
        if !returns.is_empty() {
            hooks.push(hook(
                format!("b{i}"),
                &target,
                "at = { before = \"return $$$\", nth = \"all\", depth = \"nested\" }\ncode = \"_pysplice_b = 1\"",
            ));
        }
        let wrappable = returns.iter().any(|r| !yields || r.children()[0].kind() != "absent");
        if wrappable {
            hooks.push(hook(
                format!("w{i}"),
                &target,
                "wrap-returns = \"_pysplice_w({value})\"",
            ));
        }
    }
    hooks.push(hook(
        "module-end".into(),
        "module",
        "at = \"end\"\ncode = \"_pysplice_me = 1\"",
    ));
    hooks
}

/// The hooks of `hooks` that fail alone, with their errors, found by bisection.
fn culprits<'h>(label: &str, text: &str, hooks: &[&'h GenHook], out: &mut Vec<(&'h GenHook, Error)>) {
    let Err(err) = apply(&recipe(hooks), SourceFile::new(label, text)) else {
        return;
    };
    if let [single] = hooks {
        out.push((single, err));
        return;
    }
    let (left, right) = hooks.split_at(hooks.len() / 2);
    culprits(label, text, left, out);
    culprits(label, text, right, out);
}

/// Only additions: walking the output, every input line comes back in order; the other output
/// lines are added ones, except a statement rewritten by an inline change, whose marker says
/// what it was (`was=`) and how long the new text is (`at=`, `len=`).
fn only_additions(input: &str, output: &str) -> Result<(), String> {
    let old: Vec<&str> = input.split_inclusive('\n').collect();
    let new: Vec<&str> = output.split_inclusive('\n').collect();
    let (mut i, mut k) = (0, 0);
    while k < new.len() {
        let line = new[k];
        if let Some(rest) = line.trim_start().strip_prefix("# ~~~ pysplice probe/") {
            let field = |name: &str| rest.split(' ').find_map(|f| f.strip_prefix(name));
            let number = |name: &str| field(name).and_then(|v| v.parse::<usize>().ok()).unwrap_or(0);
            let was: String = rest
                .split_once(" was=")
                .and_then(|(_, json)| serde_json::from_str(json.trim_end()).ok())
                .ok_or_else(|| format!("output line {}: a damaged inline marker", k + 1))?;
            // The rewritten statement spans the lines holding `at + len` bytes after the marker.
            let mut remaining = number("at=") + number("len=");
            k += 1;
            while k < new.len() && remaining > new[k].len() {
                remaining -= new[k].len();
                k += 1;
            }
            k += 1;
            i += was.matches('\n').count() + 1;
            continue;
        }
        // A one-line suite expanded into a block: the header line plus the opening marker's
        // `joined=` text is the input line; the frame up to its closing marker was inserted.
        let joined = new.get(k + 1).and_then(|next| {
            let rest = next.trim_start().strip_prefix("# >>> pysplice probe/")?;
            let (head, json) = rest.split_once(" joined=")?;
            let text: String = serde_json::from_str(json.trim_end()).ok()?;
            Some((head.split(' ').next().unwrap_or_default().to_string(), text))
        });
        if let Some((id, text)) = joined {
            let header = line.trim_end_matches(['\n', '\r']);
            let ending = &line[header.len()..];
            if old.get(i) != Some(&format!("{header}{text}{ending}").as_str()) {
                return Err(format!(
                    "output line {}: the expanded suite is not input line {}",
                    k + 1,
                    i + 1
                ));
            }
            i += 1;
            let close = format!("# <<< pysplice probe/{id}");
            k += 2;
            while k < new.len() && new[k].trim() != close {
                k += 1;
            }
            k += 1;
            continue;
        }
        if i < old.len() && line == old[i] {
            i += 1;
        }
        k += 1;
    }
    if i < old.len() {
        return Err(format!("input line {} is missing from the output", i + 1));
    }
    Ok(())
}

/// The invariants on a successful apply.
fn violations(recipe: &Recipe, label: &str, input: &str, patched: &Patched) -> Vec<String> {
    let mut out = Vec::new();
    let output = patched.output();
    match apply(recipe, SourceFile::new(label, output)) {
        Ok(again) if again.changed() => out.push("a second apply changed the text".into()),
        Ok(again) => {
            for o in again.outcomes() {
                if !matches!(o.status, Status::AlreadyApplied | Status::Skipped { .. }) {
                    out.push(format!("hook {} is {:?} on the second apply", o.hook, o.status));
                }
            }
        }
        Err(err) => out.push(format!("second apply: {err}")),
    }
    match revert(recipe, SourceFile::new(label, output)) {
        Ok(back) if back.output() == input => {}
        Ok(_) => out.push("revert does not give back the input".into()),
        Err(err) => out.push(format!("revert: {err}")),
    }
    if let Err(err) = only_additions(input, output) {
        out.push(err);
    }
    out
}

#[derive(Default)]
struct Report {
    files: usize,
    hooks: usize,
    applied: usize,
    refused: BTreeMap<String, Vec<String>>,
    unparsable: Vec<String>,
    failures: Vec<String>,
    compile: Vec<(PathBuf, PathBuf)>,
}

impl Report {
    fn merge(&mut self, other: Report) {
        self.files += other.files;
        self.hooks += other.hooks;
        self.applied += other.applied;
        for (k, v) in other.refused {
            self.refused.entry(k).or_default().extend(v);
        }
        self.unparsable.extend(other.unparsable);
        self.failures.extend(other.failures);
        self.compile.extend(other.compile);
    }
}

/// A refusal's reason without its location and hook, for grouping.
fn reason_of(err: &Error) -> String {
    let text = err.to_string();
    let text = text.split(" [hook").next().unwrap_or(&text);
    let text = text.splitn(4, ':').nth(3).unwrap_or(text).trim();
    text.split_once("cannot place hook: ")
        .map_or(text, |(_, r)| r)
        .to_string()
}

fn check_file(report: &mut Report, label: &str, text: &str, out_path: &Path) -> bool {
    let parsed = match ParsedFile::parse(SourceFile::new(label, text)) {
        Ok(parsed) => parsed,
        Err(err) => {
            report.unparsable.push(err.to_string());
            return false;
        }
    };
    // CPython compiles every file of the corpus: the compile check must find nothing in them.
    for err in parsed.compiler_errors() {
        report
            .failures
            .push(format!("compile check, on a file CPython compiles: {err}"));
    }
    let all = hooks_for(&parsed);
    report.hooks += all.len();
    let mut keep: Vec<&GenHook> = all.iter().collect();
    let mut probe = recipe(&keep);
    let mut result = apply(&probe, SourceFile::new(label, text));
    if let Err(first) = &result {
        let mut faulty = Vec::new();
        culprits(label, text, &keep, &mut faulty);
        if faulty.is_empty() {
            report
                .failures
                .push(format!("{label}: fails with all hooks, not with any one: {first}"));
        }
        for (h, err) in &faulty {
            let named = err.location().file == label && err.location().line >= 1 && err.hook() == Some(h.id.as_str());
            let reason = reason_of(err);
            let documented = DOCUMENTED_LIMITS.iter().any(|limit| reason.contains(limit));
            if named && documented {
                report
                    .refused
                    .entry(
                        DOCUMENTED_LIMITS
                            .iter()
                            .find(|l| reason.contains(*l))
                            .unwrap()
                            .to_string(),
                    )
                    .or_default()
                    .push(format!("{label}:{} [{}]", err.location().line, h.id));
            } else {
                report.failures.push(format!("{label} [{}]: refused: {err}", h.id));
            }
        }
        keep.retain(|h| !faulty.iter().any(|(f, _)| f.id == h.id));
        probe = recipe(&keep);
        result = apply(&probe, SourceFile::new(label, text));
    }
    let recipe = probe;
    let patched = match result {
        Ok(patched) => patched,
        Err(err) => {
            report
                .failures
                .push(format!("{label}: without the refused hooks: {err}"));
            return false;
        }
    };
    for v in violations(&recipe, label, text, &patched) {
        report.failures.push(format!("{label}: {v}"));
    }
    report.applied += patched
        .outcomes()
        .iter()
        .filter(|o| o.status == Status::Applied)
        .count();
    std::fs::create_dir_all(out_path.parent().expect("a parent")).expect("temp folder");
    std::fs::write(out_path, patched.output()).expect("temp file");
    true
}

/// Compiles each (original, output) pair it is sent: the outputs CPython rejects although it
/// accepts their original. One process per engine worker, fed as the worker goes, so CPython
/// compiles while the engine works instead of after it.
struct CPython {
    child: Child,
    pairs: Option<ChildStdin>,
}

impl CPython {
    const SCRIPT: &'static str = "import sys\n\
        bad = []\n\
        for line in sys.stdin:\n\
        \x20   orig, out = line.rstrip('\\n').split('\\t')\n\
        \x20   try:\n\
        \x20       compile(open(orig, 'rb').read(), orig, 'exec', dont_inherit=True)\n\
        \x20   except SyntaxError:\n\
        \x20       continue\n\
        \x20   try:\n\
        \x20       compile(open(out, 'rb').read(), out, 'exec', dont_inherit=True)\n\
        \x20   except (SyntaxError, ValueError, RecursionError) as e:\n\
        \x20       bad.append(f'{out}: {e!r}')\n\
        print('\\n'.join(bad))\n";

    fn start() -> CPython {
        let mut child = Command::new("python3")
            .args(["-c", CPython::SCRIPT])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let pairs = child.stdin.take();
        CPython { child, pairs }
    }

    /// Queues one pair; a write error (CPython gone) shows in [`CPython::rejects`]'s status.
    fn send(&mut self, original: &Path, output: &Path) {
        if let Some(pairs) = &mut self.pairs {
            let _ = writeln!(pairs, "{}\t{}", original.display(), output.display());
        }
    }

    /// Ends the input and returns what CPython rejected.
    fn rejects(mut self) -> Vec<String> {
        drop(self.pairs.take());
        let output = self.child.wait_with_output().expect("python3 ends");
        assert!(
            output.status.success(),
            "python3 failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect()
    }
}

fn list(out: &mut String, title: &str, items: &[String], limit: usize) {
    let _ = writeln!(out, "{title}: {}", items.len());
    for item in items.iter().take(limit) {
        let _ = writeln!(out, "    {item}");
    }
    if items.len() > limit {
        let _ = writeln!(out, "    ... and {} more", items.len() - limit);
    }
}

#[test]
fn documented_limits_are_in_the_readme() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/spec.md")).unwrap();
    for limit in DOCUMENTED_LIMITS {
        assert!(readme.contains(limit), "docs/spec.md does not document `{limit}`");
    }
}

#[test]
fn other_projects_are_exact_or_refused_for_documented_reasons() {
    let started = Instant::now();
    let temp = std::env::temp_dir().join(format!("pysplice-py-corpus-{}", std::process::id()));
    let mut jobs: Vec<(String, PathBuf, PathBuf)> = Vec::new();
    for project in pinned_projects() {
        let root = corpus_root().join(&project);
        assert!(
            root.join(".complete").exists(),
            "the corpus of {project} is missing at {}: run `bash scripts/fetch-corpus.sh` first",
            root.display()
        );
        let only = std::env::var("PYSPLICE_PY_CORPUS_ONLY").unwrap_or_default();
        let files: Vec<PathBuf> = crate::support::python_files(&root)
            .into_iter()
            .filter(|p| p.to_string_lossy().contains(&only))
            .collect();
        for path in &crate::support::evenly(files, MAX_FILES_PER_PROJECT) {
            let relative = path.strip_prefix(&root).expect("under the root").to_path_buf();
            let label = format!("{project}/{}", relative.display());
            jobs.push((label, path.clone(), temp.join(&project).join(relative)));
        }
    }
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).min(16);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut report = Report::default();
    let mut rejected = Vec::new();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut cpython = CPython::start();
                    let mut mine = Report::default();
                    while let Some((label, path, out_path)) =
                        jobs.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                    {
                        mine.files += 1;
                        let Ok(text) = std::fs::read_to_string(path) else {
                            mine.unparsable.push(format!("{label}: not UTF-8"));
                            continue;
                        };
                        if check_file(&mut mine, label, &text, out_path) {
                            cpython.send(path, out_path);
                            mine.compile.push((path.clone(), out_path.clone()));
                        }
                    }
                    (mine, cpython.rejects())
                })
            })
            .collect();
        for handle in handles {
            let (mine, rejects) = handle.join().expect("worker");
            report.merge(mine);
            rejected.extend(rejects);
        }
    });
    rejected.sort();
    report.compile.sort();
    report.failures.sort();
    let elapsed = started.elapsed();
    if std::env::var_os("PYSPLICE_PY_CORPUS_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&temp);
    } else {
        println!("outputs kept in {}", temp.display());
    }

    let mut out = String::new();
    let refused: usize = report.refused.values().map(Vec::len).sum();
    let _ = writeln!(
        out,
        "other projects: {} files, {} hooks, {} applied, {refused} refused; {:.1}s on {workers} threads",
        report.files,
        report.hooks,
        report.applied,
        elapsed.as_secs_f64()
    );
    let _ = writeln!(out, "CPython compiled {} outputs", report.compile.len());
    for (reason, hooks) in &report.refused {
        list(&mut out, &format!("refused ({reason})"), hooks, 5);
    }
    list(&mut out, "FILES THE PARSER REJECTS", &report.unparsable, 20);
    list(&mut out, "FAILURES", &report.failures, 40);
    list(&mut out, "CPYTHON REJECTS", &rejected, 40);
    println!("{out}");
    assert!(
        report.files >= MAX_FILES_PER_PROJECT
            || !std::env::var("PYSPLICE_PY_CORPUS_ONLY").unwrap_or_default().is_empty(),
        "{out}"
    );
    assert!(
        report.failures.is_empty() && rejected.is_empty() && report.unparsable.is_empty(),
        "{out}"
    );
}
