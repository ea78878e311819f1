//! `apply`, `check`, `revert` and `matrix`. With `--json`, one object of `pysplice::contract` per
//! file (per tree for `matrix`), on one line each.

use std::path::{Path, PathBuf};

use pysplice::contract::{Body, ErrorInfo, FileStatus, HookResult, Output, Splice, Words};
use pysplice::{report, DiskFile, Error, HookOutcome, Patched, Recipe, Status};

/// Arguments shared by `check` and `revert`.
#[derive(clap::Args)]
pub struct FilesArgs {
    /// The recipe (TOML hook spec).
    #[arg(long)]
    pub spec: PathBuf,
    /// Python files.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `apply`.
#[derive(clap::Args)]
pub struct ApplyArgs {
    #[command(flatten)]
    pub files: FilesArgs,
    /// Print a unified diff and write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// Arguments of `matrix`.
#[derive(clap::Args)]
pub struct MatrixArgs {
    /// The recipe (TOML hook spec).
    #[arg(long)]
    pub spec: PathBuf,
    /// Source trees, one per release.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// The file to patch, relative to each tree.
    #[arg(long, default_value = "sglang/srt/models/deepseek_v2.py")]
    pub file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Reads the recipe; on failure prints the error and gives exit code 2.
fn load_recipe(path: &Path) -> Result<Recipe, u8> {
    let name = path.display().to_string();
    // Regular files only, within the size limit: a FIFO (or `/dev/stdin` fed by a pipe) is refused,
    // not waited on.
    let text = pysplice::files::read_text(path).map_err(|err| {
        match &err {
            Error::Io { source, .. } => errln!("{name}: cannot read the spec: {source}"),
            _ => errln!("{err}"),
        }
        2
    })?;
    Recipe::from_toml(&name, &text).map_err(|err| {
        errln!("{err}");
        2
    })
}

/// Exit code for an error: 1 when a hook could not be placed, 2 for unusable input.
fn exit_code(err: &Error) -> u8 {
    if err.is_input_error() {
        2
    } else {
        1
    }
}

/// What the operation made of one file: the file (when it could be read), the result, and what
/// became of every hook (also on failure).
struct Done {
    path: PathBuf,
    file: Option<DiskFile>,
    result: Result<Patched, Error>,
    outcomes: Vec<HookOutcome>,
}

/// Which operation `run_all` runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Apply,
    Revert,
}

/// Runs `op` on every file; all files are processed before anything is written. Gives the
/// recipe and every file's result, or the exit code of bad usage.
fn run_all(args: &FilesArgs, op: Op) -> Result<(Recipe, Vec<Done>), u8> {
    let recipe = load_recipe(&args.spec)?;
    let mut seen = Vec::new();
    for path in &args.files {
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
        if seen.contains(&key) {
            errln!("{}: given more than once", path.display());
            return Err(2);
        }
        seen.push(key);
    }
    let done = args
        .files
        .iter()
        .map(|path| match DiskFile::read(path) {
            Err(err) => Done {
                path: path.clone(),
                file: None,
                result: Err(err),
                outcomes: Vec::new(),
            },
            Ok(file) => {
                let (result, outcomes) = match op {
                    Op::Apply => {
                        let attempt = pysplice::engine::apply_reporting(&recipe, file.source().clone());
                        (attempt.result, attempt.outcomes)
                    }
                    Op::Revert => {
                        let result = pysplice::revert(&recipe, file.source().clone());
                        let outcomes = result.as_ref().map(|p| p.outcomes().to_vec()).unwrap_or_default();
                        (result, outcomes)
                    }
                };
                Done {
                    path: path.clone(),
                    file: Some(file),
                    result,
                    outcomes,
                }
            }
        })
        .collect();
    Ok((recipe, done))
}

/// The per-hook results of `done` in `words`; every hook as not run when none are known.
fn hook_results(recipe: &Recipe, outcomes: &[HookOutcome], words: Words) -> Vec<HookResult> {
    if outcomes.is_empty() {
        HookResult::not_run(recipe)
    } else {
        outcomes.iter().map(|o| HookResult::new(o, words)).collect()
    }
}

/// The JSON object of a file that failed, or was not written because another did.
fn failure(recipe: &Recipe, done: &Done, words: Words, body: fn(Splice) -> Body, error: ErrorInfo) -> Output {
    let splice = Splice {
        status: FileStatus::Failed,
        changed: false,
        written: false,
        hooks: hook_results(recipe, &done.outcomes, words),
        diff: None,
    };
    Output::failed(done.path.display().to_string(), body(splice), error)
}

/// Reports files that failed and gives the exit code, or nothing when all succeeded. With
/// `--json` every file gets its object: those that succeeded say that nothing was written.
fn report_failures(recipe: &Recipe, done: &[Done], json: bool, words: Words, body: fn(Splice) -> Body) -> Option<u8> {
    let worst = done
        .iter()
        .filter_map(|d| d.result.as_ref().err().map(exit_code))
        .max()?;
    for d in done {
        match (&d.result, json) {
            (Err(err), true) => outln!("{}", failure(recipe, d, words, body, ErrorInfo::from(err)).to_line()),
            (Err(err), false) => errln!("{err}"),
            (Ok(_), true) => {
                let error = ErrorInfo::message("nothing was written: another file failed");
                outln!("{}", failure(recipe, d, words, body, error).to_line());
            }
            (Ok(_), false) => {}
        }
    }
    if !json {
        errln!("nothing was written");
    }
    Some(worst)
}

/// The successes of `done` (call after `report_failures` found none).
fn successes(done: &[Done]) -> Vec<(&DiskFile, &Patched)> {
    done.iter()
        .filter_map(|d| Some((d.file.as_ref()?, d.result.as_ref().ok()?)))
        .collect()
}

/// Writes every changed file, all or none, before anything is reported about them; on failure
/// prints what happened and gives the exit code.
fn write_changed(recipe: &Recipe, done: &[Done], json: bool, words: Words, body: fn(Splice) -> Body) -> Result<(), u8> {
    let ok = successes(done);
    let changes: Vec<(&DiskFile, &str)> = ok
        .iter()
        .filter(|(_, patched)| patched.changed())
        .map(|(file, patched)| (*file, patched.output()))
        .collect();
    if changes.is_empty() {
        return Ok(());
    }
    if let Err(err) = pysplice::files::write_all(&changes) {
        let partial = matches!(err, Error::PartialWrite { .. });
        if json {
            for d in done {
                outln!("{}", failure(recipe, d, words, body, ErrorInfo::from(&err)).to_line());
            }
        } else {
            errln!("{err}");
            if !partial {
                errln!("nothing was written");
            }
        }
        return Err(exit_code(&err));
    }
    for (file, _) in changes {
        if file.hard_links() > 1 {
            errln!(
                "note: {} had {} hard links; it is now a file of its own, the other names keep the old content",
                file.path().display(),
                file.hard_links()
            );
        }
    }
    Ok(())
}

/// Whether `apply` placed or updated a hook ("Successfully patched" rather than "Already up to date").
fn placed(patched: &Patched) -> bool {
    patched
        .outcomes()
        .iter()
        .any(|o| matches!(o.status, Status::Applied | Status::Updated))
}

/// Runs `apply`.
pub fn apply(args: &ApplyArgs) -> u8 {
    let json = args.files.json;
    let (recipe, done) = match run_all(&args.files, Op::Apply) {
        Ok(done) => done,
        Err(code) => return code,
    };
    if let Some(code) = report_failures(&recipe, &done, json, Words::Apply, Body::Apply) {
        return code;
    }
    if !args.dry_run {
        if let Err(code) = write_changed(&recipe, &done, json, Words::Apply, Body::Apply) {
            return code;
        }
    }
    for (_, patched) in successes(&done) {
        // Computed only where it is printed.
        let diff = || report::unified_diff(patched.name(), patched.input(), patched.output());
        if json {
            let status = match (placed(patched), args.dry_run) {
                (true, true) => FileStatus::WouldPatch,
                (true, false) => FileStatus::Patched,
                (false, _) => FileStatus::UpToDate,
            };
            let mut splice = Splice::new(status, patched.outcomes(), Words::Apply);
            splice.changed = patched.changed();
            splice.written = !args.dry_run && patched.changed();
            splice.diff = args.dry_run.then(diff);
            outln!("{}", Output::new(patched.name(), Body::Apply(splice)).to_line());
        } else if args.dry_run {
            out!("{}", diff());
        } else {
            out!("{}", report::applied_text(patched));
        }
    }
    0
}

/// Runs `check`: exit 0 when every required hook is applied and up to date.
pub fn check(args: &FilesArgs) -> u8 {
    let (recipe, done) = match run_all(args, Op::Apply) {
        Ok(done) => done,
        Err(code) => return code,
    };
    if let Some(code) = report_failures(&recipe, &done, args.json, Words::Check, Body::Check) {
        return code;
    }
    let mut code = 0;
    for (_, patched) in successes(&done) {
        let pending = patched.changed() || placed(patched);
        if pending {
            code = 1;
        }
        if args.json {
            let status = if pending {
                FileStatus::NeedsApply
            } else {
                FileStatus::UpToDate
            };
            let mut splice = Splice::new(status, patched.outcomes(), Words::Check);
            splice.changed = patched.changed();
            outln!("{}", Output::new(patched.name(), Body::Check(splice)).to_line());
        } else {
            let verdict = if pending { "needs apply" } else { "up to date" };
            outln!("{}: {verdict}", patched.name());
            for outcome in patched.outcomes() {
                let status = report::check_status(outcome);
                outln!("  - {}: {status}", outcome.hook);
            }
        }
    }
    code
}

/// Runs `revert`.
pub fn revert(args: &FilesArgs) -> u8 {
    let (recipe, done) = match run_all(args, Op::Revert) {
        Ok(done) => done,
        Err(code) => return code,
    };
    if let Some(code) = report_failures(&recipe, &done, args.json, Words::Revert, Body::Revert) {
        return code;
    }
    if let Err(code) = write_changed(&recipe, &done, args.json, Words::Revert, Body::Revert) {
        return code;
    }
    for (_, patched) in successes(&done) {
        if args.json {
            let status = if patched.changed() {
                FileStatus::Reverted
            } else {
                FileStatus::NothingToRevert
            };
            let mut splice = Splice::new(status, patched.outcomes(), Words::Revert);
            splice.changed = patched.changed();
            splice.written = patched.changed();
            outln!("{}", Output::new(patched.name(), Body::Revert(splice)).to_line());
        } else if patched.changed() {
            outln!("Reverted {}", patched.name());
            for outcome in patched.outcomes() {
                outln!("  - {}", report::outcome_line(outcome));
            }
        } else {
            outln!("Nothing to revert in {}", patched.name());
        }
    }
    0
}

/// Runs `matrix`: the recipe applied in memory to `--file` of every tree.
pub fn matrix(args: &MatrixArgs) -> u8 {
    let recipe = match load_recipe(&args.spec) {
        Ok(recipe) => recipe,
        Err(code) => return code,
    };
    let mut rows = Vec::new();
    let mut any_failed = false;
    for dir in &args.dirs {
        let path = dir.join(&args.file);
        let label = dir
            .file_name()
            .map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into_owned());
        let (result, outcomes) = match DiskFile::read(&path) {
            Err(err) => (Err(err), Vec::new()),
            Ok(file) => {
                let attempt = pysplice::engine::apply_reporting(&recipe, file.source().clone());
                (attempt.result, attempt.outcomes)
            }
        };
        let failed = result.is_err() || outcomes.iter().any(|o| matches!(o.status, Status::Failed { .. }));
        any_failed |= failed;
        if args.json {
            let name = path.display().to_string();
            let output = match &result {
                Ok(patched) => {
                    let status = if placed(patched) {
                        FileStatus::WouldPatch
                    } else {
                        FileStatus::UpToDate
                    };
                    let mut splice = Splice::new(status, &outcomes, Words::Apply);
                    splice.changed = patched.changed();
                    Output::new(name, Body::Matrix(splice))
                }
                Err(err) => {
                    let splice = Splice {
                        status: FileStatus::Failed,
                        changed: false,
                        written: false,
                        hooks: hook_results(&recipe, &outcomes, Words::Apply),
                        diff: None,
                    };
                    Output::failed(name, Body::Matrix(splice), ErrorInfo::from(err))
                }
            };
            outln!("{}", output.to_line());
        }
        let row = if outcomes.is_empty() {
            Err(result.err().map(|e| e.to_string()).unwrap_or_default())
        } else {
            Ok(outcomes)
        };
        rows.push((label, row));
    }
    if !args.json {
        out!("{}", matrix_table(&recipe, &rows));
    }
    u8::from(any_failed)
}

type Row = (String, Result<Vec<pysplice::HookOutcome>, String>);

/// A Markdown table: one row per tree, one column per hook.
fn matrix_table(recipe: &Recipe, rows: &[Row]) -> String {
    let mut out = String::from("| release |");
    for hook in &recipe.hooks {
        out.push_str(&format!(" {} |", hook.id));
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(recipe.hooks.len()));
    out.push('\n');
    for (label, outcomes) in rows {
        out.push_str(&format!("| {label} |"));
        match outcomes {
            Ok(outcomes) => {
                for o in outcomes {
                    let cell = match &o.status {
                        Status::Applied | Status::Updated | Status::AlreadyApplied => "applied".to_string(),
                        Status::Skipped { reason } => format!("skipped: {reason}"),
                        Status::Failed { reason } => format!("FAILED: {reason}"),
                        other => format!("{other:?}"),
                    };
                    out.push_str(&format!(" {} |", cell.replace('|', "\\|")));
                }
            }
            Err(err) => out.push_str(&format!(" FAILED: {} |", err.replace('|', "\\|"))),
        }
        out.push('\n');
    }
    out
}
