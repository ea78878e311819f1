//! `apply`, `check`, `revert` and `matrix`.

use std::path::{Path, PathBuf};

use pysplice::{report, DiskFile, Error, Patched, Recipe, Status};

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

/// Runs `operation` on every file; all files are processed before anything is written, and
/// nothing is written if any of them fails.
fn run_all(
    args: &FilesArgs,
    operation: fn(&Recipe, pysplice::SourceFile) -> Result<Patched, Error>,
) -> Result<(Vec<(DiskFile, Patched)>, Recipe), u8> {
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
    let mut done = Vec::new();
    let mut worst = 0;
    for path in &args.files {
        let result = DiskFile::read(path).and_then(|file| {
            let patched = operation(&recipe, file.source().clone())?;
            Ok((file, patched))
        });
        match result {
            Ok(pair) => done.push(pair),
            Err(err) => {
                if args.json {
                    let value = serde_json::json!({"file": path.display().to_string(), "error": err.to_string()});
                    outln!("{value}");
                } else {
                    errln!("{err}");
                }
                worst = worst.max(exit_code(&err));
            }
        }
    }
    if worst > 0 {
        if !args.json {
            errln!("nothing was written");
        }
        return Err(worst);
    }
    Ok((done, recipe))
}

/// Writes every changed file, all or none, before anything is reported about them; on failure
/// prints what happened and gives the exit code.
fn write_changed(done: &[(DiskFile, Patched)], json: bool) -> Result<(), u8> {
    let changes: Vec<(&DiskFile, &str)> = done
        .iter()
        .filter(|(_, patched)| patched.changed())
        .map(|(file, patched)| (file, patched.output()))
        .collect();
    if changes.is_empty() {
        return Ok(());
    }
    if let Err(err) = pysplice::files::write_all(&changes) {
        let partial = matches!(err, Error::PartialWrite { .. });
        if json {
            let value = serde_json::json!({"file": err.location().file, "error": err.to_string()});
            outln!("{value}");
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

/// Runs `apply`.
pub fn apply(args: &ApplyArgs) -> u8 {
    let (done, _) = match run_all(&args.files, pysplice::apply) {
        Ok(done) => done,
        Err(code) => return code,
    };
    if !args.dry_run {
        if let Err(code) = write_changed(&done, args.files.json) {
            return code;
        }
    }
    for (_, patched) in &done {
        if args.files.json {
            let mut value = report::json(patched);
            if args.dry_run {
                value["diff"] = report::unified_diff(patched.name(), patched.input(), patched.output()).into();
            }
            outln!("{value}");
        } else if args.dry_run {
            out!(
                "{}",
                report::unified_diff(patched.name(), patched.input(), patched.output())
            );
        } else {
            out!("{}", report::applied_text(patched));
        }
    }
    0
}

/// Runs `check`: exit 0 when every required hook is applied and up to date.
pub fn check(args: &FilesArgs) -> u8 {
    let (done, _) = match run_all(args, pysplice::apply) {
        Ok(done) => done,
        Err(code) => return code,
    };
    let mut code = 0;
    for (_, patched) in &done {
        let pending = patched.changed()
            || patched
                .outcomes()
                .iter()
                .any(|o| matches!(o.status, Status::Applied | Status::Updated));
        if pending {
            code = 1;
        }
        if args.json {
            let mut value = report::json(patched);
            value["up_to_date"] = (!pending).into();
            outln!("{value}");
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
    let (done, _) = match run_all(args, pysplice::revert) {
        Ok(done) => done,
        Err(code) => return code,
    };
    if let Err(code) = write_changed(&done, args.json) {
        return code;
    }
    for (_, patched) in &done {
        if args.json {
            outln!("{}", report::json(patched));
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
        let outcomes = match DiskFile::read(&path) {
            Err(err) => Err(err.to_string()),
            Ok(file) => pysplice::Prepared::new(&recipe, file.source().clone())
                .map(|prepared| {
                    let plan = pysplice::plan(&recipe, prepared.original());
                    let outcomes = plan.outcomes();
                    match pysplice::apply_plan(&recipe, &prepared, plan) {
                        Ok(patched) => patched.outcomes().to_vec(),
                        Err(err) if outcomes.iter().all(|o| !matches!(o.status, Status::Failed { .. })) => {
                            // Planned, but applying failed (conflict, verification): every placed hook fails.
                            outcomes
                                .into_iter()
                                .map(|mut o| {
                                    if o.status == Status::Applied {
                                        o.status = Status::Failed {
                                            reason: err.to_string(),
                                        };
                                    }
                                    o
                                })
                                .collect()
                        }
                        Err(_) => outcomes,
                    }
                })
                .map_err(|err| err.to_string()),
        };
        if outcomes
            .as_ref()
            .map_or(true, |o| o.iter().any(|o| matches!(o.status, Status::Failed { .. })))
        {
            any_failed = true;
        }
        rows.push((label, outcomes));
    }
    if args.json {
        let value: Vec<serde_json::Value> = rows
            .iter()
            .map(|(label, outcomes)| match outcomes {
                Ok(o) => serde_json::json!({"tree": label, "hooks": o}),
                Err(e) => serde_json::json!({"tree": label, "error": e}),
            })
            .collect();
        outln!("{}", serde_json::Value::Array(value));
    } else {
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
