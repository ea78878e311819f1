//! The engine on the real corpus: every `.py` file under `sglang/srt/models` of every pinned
//! SGLang release gets a recipe built for it (imports, start and end of every top-level class and
//! of its first method, after `super().__init__(...)` in every `__init__`, before every return of
//! every `forward`, wrap-returns on every function with a return of its own, module code at the
//! end), all hooks optional. Each distinct text is checked once (the recipe is built from the
//! text alone, and releases share most of their model files), up to `MAX_TEXTS` of them spread
//! evenly (`PYSPLICE_CORPUS_FULL=1`: all): the output parses, applying again changes nothing,
//! revert gives back the exact bytes, and CPython compiles the output (one `python3` process
//! for all files).
//!
//! When an apply fails verification, each hook is tried alone to find the ones at fault; they are
//! listed as failures and the file is checked again without
//! them. Hooks skipped on purpose (a docstring sharing its line, a name bound differently...) are
//! counted and listed by reason. Run with `--nocapture` to see the numbers.

use crate::common;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use pysplice::{apply, revert, DefKind, Depth, Error, Node, ParsedFile, Patched, Recipe, SourceFile, Status};

/// At most this many distinct texts are checked, spread evenly over them (suite time: the
/// corpus holds about 2,000; `PYSPLICE_CORPUS_FULL=1` checks every one).
const MAX_TEXTS: usize = 500;

/// Most hooks one file's recipe gets (beyond that, wraps are left out).
const MAX_HOOKS: usize = 300;

/// One hook of a generated recipe: its TOML and what it targets, for messages.
struct GenHook {
    id: String,
    toml: String,
    target: String,
    kind: &'static str,
}

fn hook(id: String, kind: &'static str, target: &str, body: &str) -> GenHook {
    let target_line = if target == "module" {
        String::new()
    } else {
        format!("in = \"{target}\"\n")
    };
    GenHook {
        toml: format!("[[hook]]\nid = \"{id}\"\nsummary = \"{kind} {target}\"\n{target_line}{body}\noptional = true\n"),
        id,
        target: target.to_string(),
        kind,
    }
}

fn recipe(hooks: &[&GenHook]) -> Recipe {
    let mut text = String::from("[recipe]\nid = \"corpus\"\nsummary = \"generic probe hooks\"\n");
    for h in hooks {
        text.push('\n');
        text.push_str(&h.toml);
    }
    Recipe::from_toml("corpus.toml", &text).unwrap_or_else(|err| panic!("{err}"))
}

/// The path of `def` with an ordinal when the path is defined more than once.
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

/// The return statements of a definition's own body (not of nested defs).
fn own_returns(parsed: &ParsedFile, index: usize) -> Vec<&Node> {
    let node = parsed.node(&parsed.definitions()[index]);
    let mut returns = Vec::new();
    if let Some(body) = node.field("body") {
        visit_statements(body, Depth::Nested, &mut |stmt| {
            if stmt.kind() == "Return" {
                returns.push(stmt);
            }
        });
    }
    returns
}

/// Hooks for one file.
fn hooks_for(parsed: &ParsedFile) -> Vec<GenHook> {
    let defs = parsed.definitions();
    let mut hooks = vec![hook(
        "imports".into(),
        "imports",
        "module",
        "ensure-imports = [\"os\", \"from typing import Any\"]",
    )];
    // Anchors on real statements: after the `super().__init__(...)` of every `__init__`, before
    // every return of every `forward`.
    for (i, d) in defs.iter().enumerate() {
        if d.kind() != DefKind::Method || d.is_one_line_suite() {
            continue;
        }
        let target = target_of(parsed, i);
        if d.name() == "__init__" {
            hooks.push(hook(
                format!("a{i}-super"),
                "after super().__init__",
                &target,
                "at = { after = \"super().__init__($$$)\" }\ncode = \"_probe_init = 1\"",
            ));
        } else if d.name() == "forward" {
            hooks.push(hook(
                format!("b{i}-return"),
                "before every return",
                &target,
                "at = { before = \"return $$$\", nth = \"all\" }\ncode = \"_probe_return = 1\"",
            ));
        }
    }
    for (ci, class) in defs.iter().enumerate() {
        if class.kind() != DefKind::Class || class.parent().is_some() {
            continue;
        }
        let first_method = defs
            .iter()
            .enumerate()
            .find(|(_, d)| d.parent() == Some(ci) && d.kind() == DefKind::Method);
        if let Some((mi, method)) = first_method {
            let target = target_of(parsed, mi);
            hooks.push(hook(
                format!("m{mi}-start"),
                "method start",
                &target,
                "at = \"start\"\ncode = \"_probe = 1\"",
            ));
            if !method.is_one_line_suite() {
                hooks.push(hook(
                    format!("m{mi}-end"),
                    "method end",
                    &target,
                    "at = \"end\"\ncode = \"_probe = 2\"",
                ));
            }
        }
        let target = target_of(parsed, ci);
        hooks.push(hook(
            format!("c{ci}-start"),
            "class start",
            &target,
            "at = \"start\"\ncode = \"_probe_attr = 1\"",
        ));
        if !class.is_one_line_suite() {
            hooks.push(hook(
                format!("c{ci}-end"),
                "class end",
                &target,
                "at = \"end\"\ncode = \"_probe_attr = 2\"",
            ));
        }
    }
    let first_methods: Vec<String> = hooks.iter().map(|h| h.target.clone()).collect();
    for (i, d) in defs.iter().enumerate() {
        if hooks.len() >= MAX_HOOKS {
            break;
        }
        if d.kind() == DefKind::Class || own_returns(parsed, i).is_empty() {
            continue;
        }
        let target = target_of(parsed, i);
        if d.is_one_line_suite() && first_methods.contains(&target) {
            continue; // its start insert displaces the same line
        }
        hooks.push(hook(
            format!("w{i}"),
            "wrap-returns",
            &target,
            "wrap-returns = \"_pysplice_probe({value})\"",
        ));
    }
    hooks.push(hook(
        "module-end".into(),
        "module end",
        "module",
        "at = \"end\"\ncode = \"_PROBE = True\"",
    ));
    hooks
}

/// The invariants on one successful apply, as a list of violations.
fn violations(recipe: &Recipe, name: &str, input: &str, patched: &Patched) -> Vec<String> {
    let mut out = Vec::new();
    let output = patched.output();
    if let Err(err) = ParsedFile::parse(SourceFile::new(name, output)) {
        out.push(format!("output does not parse: {err}"));
        return out;
    }
    match apply(recipe, SourceFile::new(name, output)) {
        Ok(again) => {
            if again.changed() {
                out.push("a second apply changed the text".into());
            }
            for o in again.outcomes() {
                if !matches!(o.status, Status::AlreadyApplied | Status::Skipped { .. }) {
                    out.push(format!("hook {} is {:?} on the second apply", o.hook, o.status));
                }
            }
        }
        Err(err) => out.push(format!("second apply: {err}")),
    }
    match revert(recipe, SourceFile::new(name, output)) {
        Ok(back) if back.output() == input => {}
        Ok(_) => out.push("revert does not give back the input".into()),
        Err(err) => out.push(format!("revert: {err}")),
    }
    out
}

#[derive(Default)]
struct Report {
    files: usize,
    hooks: usize,
    placed: usize,
    unparsable: Vec<String>,
    skipped: BTreeMap<String, Vec<String>>,
    failures: Vec<String>,
    compile: Vec<(PathBuf, PathBuf)>,
}

impl Report {
    fn merge(&mut self, other: Report) {
        self.files += other.files;
        self.hooks += other.hooks;
        self.placed += other.placed;
        self.unparsable.extend(other.unparsable);
        for (k, v) in other.skipped {
            self.skipped.entry(k).or_default().extend(v);
        }
        self.failures.extend(other.failures);
        self.compile.extend(other.compile);
    }
}

/// Groups a skip reason: its text without locations, quoted code and hook ids.
fn reason_kind(reason: &str) -> String {
    let text = reason.split(": cannot place hook: ").last().unwrap_or(reason);
    // Drop a leading `file:line:col: `.
    let text = match text.split_once(".py:") {
        Some((_, rest)) => rest.splitn(3, ':').nth(2).unwrap_or(rest).trim_start(),
        None => text,
    };
    let text = text.split(" [hook").next().unwrap_or(text);
    let mut kind = String::new();
    let mut quoted = false;
    for c in text.chars() {
        if c == '`' {
            quoted = !quoted;
            if quoted {
                kind.push_str("`…`");
            }
        } else if !quoted {
            kind.push(c);
        }
    }
    kind.trim().to_string()
}

/// The hooks of `hooks` that fail on their own (with their error), found by bisection.
fn find_culprits<'h>(label: &str, text: &str, hooks: &[&'h GenHook], out: &mut Vec<(&'h GenHook, Error)>) {
    let Err(err) = apply(&recipe(hooks), SourceFile::new(label, text)) else {
        return;
    };
    if let [single] = hooks {
        out.push((single, err));
        return;
    }
    let (left, right) = hooks.split_at(hooks.len() / 2);
    find_culprits(label, text, left, out);
    find_culprits(label, text, right, out);
}

/// Applies the file's recipe; when that fails, finds the hooks at fault by bisection, reports
/// them as failures, and applies the rest.
fn check_file(report: &mut Report, label: &str, text: &str, out_path: &Path) -> bool {
    let parsed = match ParsedFile::parse(SourceFile::new(label, text)) {
        Ok(parsed) => parsed,
        Err(err) => {
            report.unparsable.push(err.to_string());
            return false;
        }
    };
    let all = hooks_for(&parsed);
    report.hooks += all.len();
    let mut keep: Vec<&GenHook> = all.iter().collect();
    let mut result = apply(&recipe(&keep), SourceFile::new(label, text));
    if let Err(err) = &result {
        let candidates: Vec<&GenHook> = all.iter().collect();
        let mut faulty: Vec<(&GenHook, Error)> = Vec::new();
        find_culprits(label, text, &candidates, &mut faulty);
        for (h, e) in &faulty {
            report.failures.push(format!("{label} [{} {}]: {e}", h.kind, h.target));
        }
        if faulty.is_empty() {
            report
                .failures
                .push(format!("{label}: fails with all hooks, not with any one: {err}"));
        }
        keep.retain(|h| !faulty.iter().any(|(f, _)| f.id == h.id));
        result = apply(&recipe(&keep), SourceFile::new(label, text));
    }
    let recipe = recipe(&keep);
    let patched = match result {
        Ok(patched) => patched,
        Err(err) => {
            report
                .failures
                .push(format!("{label}: without the failing hooks: {err}"));
            return false;
        }
    };
    for v in violations(&recipe, label, text, &patched) {
        report.failures.push(format!("{label}: {v}"));
    }
    for o in patched.outcomes() {
        match &o.status {
            Status::Applied => report.placed += 1,
            Status::Skipped { reason } => {
                let h = all.iter().find(|h| h.id == o.hook).expect("known hook");
                report
                    .skipped
                    .entry(format!("{}: {}", h.kind, reason_kind(reason)))
                    .or_default()
                    .push(format!("{label} [{}]", h.target));
            }
            other => report.failures.push(format!("{label}: hook {} is {other:?}", o.hook)),
        }
    }
    std::fs::create_dir_all(out_path.parent().expect("a parent")).expect("temp folder");
    std::fs::write(out_path, patched.output()).expect("temp file");
    true
}

/// Compiles every (original, output) pair with CPython, one process per core, each on its share
/// of the pairs; returns the outputs it rejects although it accepts their original, and how many
/// originals it rejects.
fn cpython_rejects(pairs: &[(PathBuf, PathBuf)], dir: &Path) -> (Vec<String>, usize) {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get()).min(16);
    let share = pairs.len().div_ceil(cores).max(1);
    let (mut rejected, mut skipped) = (Vec::new(), 0);
    let parts: Vec<(Vec<String>, usize)> = std::thread::scope(|scope| {
        let handles: Vec<_> = pairs
            .chunks(share)
            .enumerate()
            .map(|(i, chunk)| scope.spawn(move || cpython_rejects_one(chunk, &dir.join(format!("manifest-{i}.tsv")))))
            .collect();
        handles.into_iter().map(|h| h.join().expect("python3 worker")).collect()
    });
    for (bad, n) in parts {
        rejected.extend(bad);
        skipped += n;
    }
    rejected.sort();
    (rejected, skipped)
}

/// One python3 process compiling the pairs listed in `manifest`.
fn cpython_rejects_one(pairs: &[(PathBuf, PathBuf)], manifest: &Path) -> (Vec<String>, usize) {
    let mut list = String::new();
    for (original, output) in pairs {
        let _ = writeln!(list, "{}\t{}", original.display(), output.display());
    }
    std::fs::create_dir_all(manifest.parent().expect("a parent")).expect("temp folder");
    std::fs::write(manifest, list).expect("manifest");
    let script = "import sys\n\
        bad, skipped = [], 0\n\
        for line in open(sys.argv[1], encoding='utf-8'):\n\
        \x20   orig, out = line.rstrip('\\n').split('\\t')\n\
        \x20   try:\n\
        \x20       compile(open(orig, 'rb').read(), orig, 'exec', dont_inherit=True)\n\
        \x20   except SyntaxError:\n\
        \x20       skipped += 1\n\
        \x20       continue\n\
        \x20   try:\n\
        \x20       compile(open(out, 'rb').read(), out, 'exec', dont_inherit=True)\n\
        \x20   except SyntaxError as e:\n\
        \x20       bad.append(f'{out}:{e.lineno}: {e.msg}')\n\
        print(skipped)\n\
        print('\\n'.join(bad))\n";
    let output = Command::new("python3")
        .args(["-c", script])
        .arg(manifest)
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "python3 failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let mut lines = stdout.lines();
    let skipped = lines.next().and_then(|l| l.trim().parse().ok()).unwrap_or(0);
    (lines.filter(|l| !l.is_empty()).map(str::to_string).collect(), skipped)
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

/// A file holding a text: its label, path and where its output goes.
type Holder = (String, PathBuf, PathBuf);

#[test]
fn corpus_keeps_the_invariants_and_cpython_compiles_the_output() {
    let started = Instant::now();
    let temp = std::env::temp_dir().join(format!("pysplice-engine-corpus-{}", std::process::id()));
    // One job per distinct file text (releases share most of their model files): the recipe is
    // built from the text alone, so the answer is the same for every release holding it.
    let mut files = 0;
    let mut unreadable = Vec::new();
    let mut by_text: BTreeMap<String, Vec<Holder>> = BTreeMap::new();
    for version in common::pinned_versions() {
        let dir = common::models_dir(&version);
        for path in common::python_files(&dir) {
            let relative = path.strip_prefix(&dir).expect("under the folder").to_path_buf();
            let label = format!("{version}/{}", relative.display());
            files += 1;
            match std::fs::read_to_string(&path) {
                Ok(text) => by_text
                    .entry(text)
                    .or_default()
                    .push((label, path, temp.join(&version).join(relative))),
                Err(_) => unreadable.push(format!("{label}: not UTF-8")),
            }
        }
    }
    let distinct = by_text.len();
    let jobs = common::evenly(by_text.iter().collect::<Vec<(&String, &Vec<Holder>)>>(), MAX_TEXTS);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).min(16);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut report = Report {
        files,
        unparsable: unreadable,
        ..Report::default()
    };
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Report::default();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some((text, holders)) = jobs.get(i) else {
                            break;
                        };
                        let (label, path, out_path) = &holders[0];
                        let failures = mine.failures.len();
                        if check_file(&mut mine, label, text, out_path) {
                            mine.compile.push((path.clone(), out_path.clone()));
                        }
                        if holders.len() > 1 {
                            let same: Vec<&str> = holders[1..].iter().map(|(l, _, _)| l.as_str()).collect();
                            for failure in &mut mine.failures[failures..] {
                                failure.push_str(&format!(" (the same text: {})", same.join(", ")));
                            }
                        }
                    }
                    mine
                })
            })
            .collect();
        for handle in handles {
            report.merge(handle.join().expect("worker"));
        }
    });
    report.compile.sort();
    report.failures.sort();
    for items in report.skipped.values_mut() {
        items.sort();
    }
    let engine_time = started.elapsed();
    let (rejected, original_rejected) = cpython_rejects(&report.compile, &temp);
    let _ = std::fs::remove_dir_all(&temp);

    let mut out = String::new();
    let _ = writeln!(
        out,
        "engine corpus: {} files, {distinct} distinct texts, {} checked, {} hooks generated, {} placed; engine {:.1}s on {workers} threads, total {:.1}s",
        report.files,
        jobs.len(),
        report.hooks,
        report.placed,
        engine_time.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    let _ = writeln!(
        out,
        "CPython compiled {} outputs, one per distinct text ({} whose original it rejects itself were left out)",
        report.compile.len() - original_rejected,
        original_rejected
    );
    list(&mut out, "files the parser rejects", &report.unparsable, 20);
    let skipped_total: usize = report.skipped.values().map(Vec::len).sum();
    let _ = writeln!(
        out,
        "hooks skipped (cannot be placed, listed by reason): {skipped_total}"
    );
    for (reason, files) in &report.skipped {
        list(&mut out, &format!("  {reason}"), files, 5);
    }
    list(&mut out, "INVARIANT FAILURES", &report.failures, 40);
    list(&mut out, "CPYTHON REJECTS", &rejected, 40);
    println!("{out}");
    assert!(report.failures.is_empty() && rejected.is_empty(), "{out}");
}
