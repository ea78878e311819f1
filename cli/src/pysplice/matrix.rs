//! `matrix`: a recipe applied in memory to the same file of several source trees, one row per
//! tree. With `--json`, one object of `pysplice_programs::contract` per tree, on one line each.

use std::path::PathBuf;

use pysplice::files::DiskFile;
use pysplice::{Recipe, Status};
use pysplice_programs::contract::{Body, ErrorInfo, FileStatus, Output, Splice, Words};

use crate::splice::{hook_results, load_recipe, placed};

/// Arguments of `matrix`.
#[derive(clap::Args)]
pub struct MatrixArgs {
    /// The recipe: a TOML hook spec, or `builtin:NAME` (`builtin:sglang-hs-dump`,
    /// `builtin:sglang-hs-dump-models`).
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
                let attempt = pysplice::attempt(&recipe, file.source().clone());
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
                        notes: Vec::new(),
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
        // Release names are folder names and reasons may quote input: escaped for the terminal.
        out.push_str(&format!("| {} |", pysplice::report::printable(label)));
        match outcomes {
            Ok(outcomes) => {
                for o in outcomes {
                    let cell = match &o.status {
                        Status::Applied | Status::Updated | Status::AlreadyApplied => "applied".to_string(),
                        Status::Skipped { reason } => format!("skipped: {reason}"),
                        Status::Failed { reason } => format!("FAILED: {reason}"),
                        other => format!("{other:?}"),
                    };
                    out.push_str(&format!(
                        " {} |",
                        pysplice::report::printable(&cell).replace('|', "\\|")
                    ));
                }
            }
            Err(err) => out.push_str(&format!(
                " FAILED: {} |",
                pysplice::report::printable(err).replace('|', "\\|")
            )),
        }
        out.push('\n');
    }
    out
}
