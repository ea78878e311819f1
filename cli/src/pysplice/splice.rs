//! `apply`, `check` and `revert`: one recipe over several files, all planned before any is
//! written (`pysplice::batch`). With `--json`, one object of `pysplice_programs::contract` per file, on one
//! line each.

use std::path::{Path, PathBuf};

use pysplice::batch::{self, Batch, FileRun, Op, RunOptions};
use pysplice::files::path_name;
use pysplice::report::printable;
use pysplice::{report, Error, ErrorKind, HookOutcome, Patched, Recipe};
use pysplice_programs::contract::{Body, ErrorInfo, FileStatus, HookResult, Output, Splice, Words};

/// Arguments shared by `check` and `revert`.
#[derive(clap::Args)]
pub struct FilesArgs {
    /// The recipe: a TOML hook spec, or `builtin:NAME` (`builtin:sglang-hs-dump`,
    /// `builtin:sglang-hs-dump-models`).
    #[arg(long)]
    pub spec: PathBuf,
    /// Python files, and folders (every `.py` file below them that the recipe targets).
    #[arg(required_unless_present = "installed")]
    pub files: Vec<PathBuf>,
    /// The installed package NAME (`transformers`, `transformers.models.llama`), as the
    /// interpreter of `--python` would import it (located without importing it).
    #[arg(long, value_name = "NAME")]
    pub installed: Option<String>,
    /// The interpreter `--installed` asks (the environment's `bin/python`).
    #[arg(long, value_name = "PY", default_value = "python3", requires = "installed")]
    pub python: String,
    /// How long `--python` may take to say where the package is (seconds, up to 3600); past it,
    /// it and whatever it started are killed.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value = "20",
        value_parser = pysplice_programs::installed::probe_timeout,
        requires = "installed"
    )]
    pub probe_timeout: std::time::Duration,
    /// Leave out the paths below a folder that this glob names (`tests/**`, `**/conftest.py`);
    /// may be given several times.
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
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

/// Reads the recipe (a TOML hook spec, or `builtin:NAME`) and prints its warnings on stderr;
/// on failure prints the error and gives exit code 2.
pub fn load_recipe(path: &Path) -> Result<Recipe, u8> {
    let name = path_name(path);
    let recipe = pysplice_sglang::recipes::load(&name).map_err(|err| {
        match err.kind() {
            ErrorKind::Io { source, .. } => errln!("{name}: cannot read the spec: {source}"),
            _ => errln!("{err}"),
        }
        2u8
    })?;
    for warning in recipe.warnings() {
        errln!("{warning}");
    }
    Ok(recipe)
}

/// Exit code for an error: 1 when a hook could not be placed, 2 for unusable input.
pub fn exit_code(err: &Error) -> u8 {
    if err.is_input_error() {
        2
    } else {
        1
    }
}

/// Runs `op` on every file; all files are processed before anything is written. Gives the
/// recipe and every file's result, or the exit code of bad usage.
fn run_all(args: &FilesArgs, op: Op) -> Result<(Recipe, Batch), u8> {
    let recipe = load_recipe(&args.spec)?;
    let mut paths = args.files.clone();
    if let Some(name) = &args.installed {
        let wanted = pysplice_programs::installed::Wanted {
            name,
            shown: name,
            remedy: "activate the environment that has it, or pass --python with its interpreter",
        };
        match pysplice_programs::installed::package_folder(&args.python, wanted, args.probe_timeout) {
            Ok(folder) => paths.push(folder),
            Err(message) => {
                errln!("{message}");
                return Err(2);
            }
        }
    }
    if let Some(path) = batch::duplicate(&paths) {
        errln!("{}: given more than once", printable(&path_name(path)));
        return Err(2);
    }
    let options = RunOptions {
        exclude: args.exclude.clone(),
    };
    let batch = Batch::run_with(&recipe, &paths, op, &options);
    for (link, target) in &batch.not_followed {
        errln!(
            "note: {}: a symbolic link (to {}), not followed",
            printable(&path_name(link)),
            printable(&path_name(target))
        );
    }
    Ok((recipe, batch))
}

/// The most files not targeted that the text output names one by one.
const MAX_NAMED: usize = 10;

/// The files of the folders that the recipe does not target: in text, by name (up to
/// [`MAX_NAMED`]) or as a count; in JSON, an object each.
fn report_not_targeted(batch: &Batch, json: bool, words: Words, body: fn(Splice) -> Body, beside_diff: bool) {
    if json {
        for path in &batch.not_targeted {
            let splice = Splice {
                status: FileStatus::NotTargeted,
                changed: false,
                written: false,
                hooks: Vec::new(),
                diff: None,
                notes: Vec::new(),
            };
            outln!("{}", Output::new(path_name(path), body(splice)).named(path).to_line());
        }
    } else if !batch.not_targeted.is_empty() {
        let n = batch.not_targeted.len();
        let files = if n == 1 { "file" } else { "files" };
        let why = if words == Words::Revert {
            "none of the recipe's markers there"
        } else {
            "no hook's target is defined there"
        };
        // A few files by name; a folder's thousands as a count.
        let lines: Vec<String> = if n <= MAX_NAMED {
            std::iter::once(format!("Not targeted ({why}; left untouched):"))
                .chain(
                    batch
                        .not_targeted
                        .iter()
                        .map(|p| format!("  - {}", printable(&path_name(p)))),
                )
                .collect()
        } else {
            vec![format!("Not targeted: {n} {files} ({why}; left untouched)")]
        };
        // Beside a diff on standard output, on standard error: the diff stays one to `patch`.
        for line in lines {
            if beside_diff {
                errln!("{line}");
            } else {
                outln!("{line}");
            }
        }
    }
}

/// The per-hook results of `done` in `words`; every hook as not run when none are known.
pub fn hook_results(recipe: &Recipe, outcomes: &[HookOutcome], words: Words) -> Vec<HookResult> {
    if outcomes.is_empty() {
        HookResult::not_run(recipe)
    } else {
        outcomes.iter().map(|o| HookResult::new(o, words)).collect()
    }
}

/// The JSON object of a file that failed, or was not written because another did.
fn failure(recipe: &Recipe, done: &FileRun, words: Words, body: fn(Splice) -> Body, error: ErrorInfo) -> Output {
    let splice = Splice {
        status: FileStatus::Failed,
        changed: false,
        written: false,
        hooks: hook_results(recipe, &done.outcomes, words),
        diff: None,
        notes: Vec::new(),
    };
    Output::failed(path_name(&done.path), body(splice), error).named(&done.path)
}

/// Reports files that failed and gives the exit code, or nothing when all succeeded. With
/// `--json` every file gets its object: those that succeeded say that nothing was written.
fn report_failures(recipe: &Recipe, batch: &Batch, json: bool, words: Words, body: fn(Splice) -> Body) -> Option<u8> {
    let worst = batch
        .errors
        .iter()
        .chain(batch.files.iter().filter_map(|d| d.result.as_ref().err()))
        .map(exit_code)
        .max()?;
    for err in &batch.errors {
        if json {
            let splice = Splice {
                status: FileStatus::Failed,
                changed: false,
                written: false,
                hooks: Vec::new(),
                diff: None,
                notes: Vec::new(),
            };
            outln!(
                "{}",
                Output::failed(err.location().file.clone(), body(splice), ErrorInfo::from(err)).to_line()
            );
        } else {
            errln!("{err}");
        }
    }
    for d in &batch.files {
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

/// Writes every changed file, all or none, before anything is reported about them; on failure
/// prints what happened and gives the exit code.
fn write_changed(recipe: &Recipe, batch: &Batch, json: bool, words: Words, body: fn(Splice) -> Body) -> Result<(), u8> {
    match batch.write() {
        Ok(written) => {
            hard_link_notes(&written);
            Ok(())
        }
        // Called after `report_failures` found no failed file: a write that failed.
        Err(err) => {
            let err = err.error();
            if json {
                for d in &batch.files {
                    outln!("{}", failure(recipe, d, words, body, ErrorInfo::from(err)).to_line());
                }
            } else {
                errln!("{err}");
                if !matches!(err.kind(), ErrorKind::PartialWrite { .. }) {
                    errln!("nothing was written");
                }
            }
            Err(exit_code(err))
        }
    }
}

/// A note for each file written that had several hard links: each name written is now a file
/// of its own; names of it outside the run keep the old content. Several names of one file in
/// the run get one note that names them all.
fn hard_link_notes(written: &[&pysplice::files::DiskFile]) {
    for (i, file) in written.iter().enumerate() {
        if file.hard_links() < 2 || written[..i].iter().any(|f| f.same_file(file)) {
            continue;
        }
        let names: Vec<String> = written[i..]
            .iter()
            .filter(|f| std::ptr::eq(**f, *file) || f.same_file(file))
            .map(|f| printable(&path_name(f.path())).into_owned())
            .collect();
        let others = file.hard_links().saturating_sub(names.len() as u64);
        let rest = if others == 0 {
            ""
        } else {
            ", the other names keep the old content"
        };
        if let [name] = names.as_slice() {
            errln!(
                "note: {name} had {} hard links; it is now a file of its own{rest}",
                file.hard_links()
            );
        } else {
            errln!(
                "note: {} were names (hard links) of one file; each is now a file of its own with the new text{rest}",
                names.join(", ")
            );
        }
    }
}

/// Whether `apply` did something ("Successfully patched" rather than "Already up to date").
pub fn placed(patched: &Patched) -> bool {
    !patched.is_up_to_date()
}

/// Runs `apply`.
pub fn apply(args: &ApplyArgs) -> u8 {
    let json = args.files.json;
    // A dry run says what applying would do, as a plan does.
    let words = if args.dry_run { Words::DryRun } else { Words::Apply };
    let (recipe, batch) = match run_all(&args.files, Op::Apply) {
        Ok(done) => done,
        Err(code) => return code,
    };
    if let Some(code) = report_failures(&recipe, &batch, json, words, Body::Apply) {
        return code;
    }
    if !args.dry_run {
        if let Err(code) = write_changed(&recipe, &batch, json, Words::Apply, Body::Apply) {
            return code;
        }
    }
    for (file, patched) in batch.successes() {
        // Computed only where it is printed.
        let diff = || patched.diff();
        if json {
            let status = match (placed(patched), args.dry_run) {
                (true, true) => FileStatus::WouldPatch,
                (true, false) => FileStatus::Patched,
                (false, _) => FileStatus::UpToDate,
            };
            let mut splice = Splice::new(status, patched.outcomes(), words);
            splice.changed = patched.changed();
            splice.written = !args.dry_run && patched.changed();
            splice.diff = args.dry_run.then(diff);
            if placed(patched) {
                splice.notes.clone_from(&recipe.notes);
            }
            outln!(
                "{}",
                Output::new(patched.name(), Body::Apply(splice))
                    .named(file.path())
                    .to_line()
            );
        } else if args.dry_run {
            out!("{}", diff());
        } else {
            out!("{}", report::applied_text(patched));
        }
    }
    report_not_targeted(&batch, json, words, Body::Apply, args.dry_run);
    // The recipe's notes, once, after a run that placed hooks.
    if !json && batch.successes().any(|(_, p)| placed(p)) && !recipe.notes.is_empty() {
        let print_notes = if args.dry_run { errln_notes } else { outln_notes };
        print_notes(&recipe.notes);
    }
    0
}

/// The recipe's notes on standard output.
fn outln_notes(notes: &[String]) {
    outln!("Notes:");
    for note in notes {
        outln!("  - {}", printable(note));
    }
}

/// The recipe's notes on standard error, where they do not mix with a diff.
fn errln_notes(notes: &[String]) {
    errln!("Notes:");
    for note in notes {
        errln!("  - {}", printable(note));
    }
}

/// Runs `check`: exit 0 when every required hook is applied and up to date.
pub fn check(args: &FilesArgs) -> u8 {
    let (recipe, batch) = match run_all(args, Op::Apply) {
        Ok(done) => done,
        Err(code) => return code,
    };
    if let Some(code) = report_failures(&recipe, &batch, args.json, Words::Check, Body::Check) {
        return code;
    }
    let mut code = 0;
    for (file, patched) in batch.successes() {
        let pending = !patched.is_up_to_date();
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
            outln!(
                "{}",
                Output::new(patched.name(), Body::Check(splice))
                    .named(file.path())
                    .to_line()
            );
        } else {
            let verdict = if pending { "needs apply" } else { "up to date" };
            outln!("{}: {verdict}", printable(patched.name()));
            for outcome in patched.outcomes() {
                let status = report::check_status(outcome);
                outln!("  - {}: {status}", outcome.hook);
            }
        }
    }
    report_not_targeted(&batch, args.json, Words::Check, Body::Check, false);
    code
}

/// Runs `revert`.
pub fn revert(args: &FilesArgs) -> u8 {
    let (recipe, batch) = match run_all(args, Op::Revert) {
        Ok(done) => done,
        Err(code) => return code,
    };
    if let Some(code) = report_failures(&recipe, &batch, args.json, Words::Revert, Body::Revert) {
        return code;
    }
    if let Err(code) = write_changed(&recipe, &batch, args.json, Words::Revert, Body::Revert) {
        return code;
    }
    for (file, patched) in batch.successes() {
        if args.json {
            let status = if patched.changed() {
                FileStatus::Reverted
            } else {
                FileStatus::NothingToRevert
            };
            let mut splice = Splice::new(status, patched.outcomes(), Words::Revert);
            splice.changed = patched.changed();
            splice.written = patched.changed();
            outln!(
                "{}",
                Output::new(patched.name(), Body::Revert(splice))
                    .named(file.path())
                    .to_line()
            );
        } else if patched.changed() {
            outln!("Reverted {}", printable(patched.name()));
            for outcome in patched.outcomes() {
                outln!("  - {}", report::outcome_line(outcome));
            }
        } else {
            outln!("Nothing to revert in {}", printable(patched.name()));
        }
    }
    report_not_targeted(&batch, args.json, Words::Revert, Body::Revert, false);
    0
}
