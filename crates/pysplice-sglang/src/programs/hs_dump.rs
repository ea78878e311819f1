//! `sglang-hs-dump`: patch SGLang's `deepseek_v2.py` so that the server dumps EAGLE-3 / SpecForge
//! training hidden states during prefill, using pysplice's bundled `sglang-hs-dump` recipe.
//!
//! ```text
//! sglang-hs-dump [PATH] [--revert | --check] [--dry-run] [--json] [--sglang-version X]
//! sglang-hs-dump --installed [--python python3] [--probe-timeout 20] ...
//! sglang-hs-dump                      # demo: patch a copy of the bundled demo model
//! sglang-hs-dump --flag-table         # the server flags of every known SGLang release
//! sglang-hs-dump PATH --arch Qwen3MoeForCausalLM [--arch ...]   # any architecture with aux capture
//! sglang-hs-dump PATH --model-path DIR  # the architectures DIR/config.json names
//! sglang-hs-dump PATH --arch all        # every architecture with aux capture
//! ```
//!
//! With `--arch` or `--model-path`, PATH (or `--installed`) stands for the `sglang/srt/models`
//! folder, and every file the architectures need is patched (checked, reverted), all or none.
//!
//! Exit codes: 0 success (for `--check`: up to date); 1 a hook could not be placed, the markers
//! were edited by hand, or `--check` found work; 2 bad usage or input that cannot be read or
//! parsed; 3 the command succeeded but its report could not be written to standard output
//! (closed pipe, full disk).
//!
//! The binary (`cli/sglang/sglang_hs_dump.rs`) calls [`main`] and declares the allocator
//! (`pysplice_programs::program_allocator!`).

mod demo;
mod hub;
mod models;
mod one;

pub use demo::DEMO_MODEL;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use pysplice::{report, Error, Patched};
use pysplice_programs::contract::{self, Body, Dump, ErrorInfo, FileStatus, HookResult, Output, Splice, Words};
use pysplice_programs::{errln, outln};

use crate::install::Release;
use crate::launch::{self as sglang, Launch};

/// The program's name, `sglang-hs-dump`.
const PROGRAM: &str = "sglang-hs-dump";

/// Patch SGLang's DeepSeek-V2/V3 model file (also used by Kimi-K2.5) to dump per-request hidden
/// states for EAGLE-3 drafter training while the server runs prefill passes.
///
/// Without PATH (and without --installed), a bundled demo model file is copied to a temporary
/// folder, patched there, and the diff is shown.
#[derive(Parser)]
#[command(name = PROGRAM, version, about, long_about)]
struct Args {
    /// `deepseek_v2.py`, or a folder holding it (an SGLang checkout, site-packages, the `sglang`
    /// package, a corpus tree).
    #[arg(conflicts_with = "installed")]
    path: Option<PathBuf>,
    /// Patch the `deepseek_v2.py` of the SGLang that `--python` imports.
    #[arg(long)]
    installed: bool,
    /// The interpreter asked by `--installed`.
    #[arg(long, value_name = "EXE", default_value = "python3", requires = "installed")]
    python: String,
    /// How long `--python` may take to say where SGLang is (seconds, up to 3600); past it, it and
    /// whatever it started are killed.
    #[arg(long, value_name = "SECONDS", default_value = "20", value_parser = pysplice_programs::installed::probe_timeout, requires = "installed")]
    probe_timeout: std::time::Duration,
    /// Remove the patch, giving back the original bytes.
    #[arg(long, conflicts_with = "check")]
    revert: bool,
    /// Exit 0 when the patch is applied and up to date, 1 otherwise; writes nothing.
    #[arg(long, conflicts_with = "dry_run")]
    check: bool,
    /// Print a unified diff of what would change and write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// The SGLang release the file belongs to (for the launch flags), when it cannot be read from
    /// `sglang/version.py`, `sglang/_version.py` or a `sglang-*.dist-info` beside the package.
    #[arg(long, value_name = "X")]
    sglang_version: Option<String>,
    /// Print the server flags for every SGLang release that has `deepseek_v2.py`, as a markdown
    /// table (docs/sglang.md's), and exit.
    #[arg(long, exclusive = true)]
    flag_table: bool,
    /// An architecture to patch for (an `EntryClass` / `config.json` `architectures` name such as
    /// `Qwen3MoeForCausalLM`; repeat or separate by commas), or `all`: every architecture of the
    /// install that has EAGLE-3 aux capture. PATH then stands for the models folder.
    #[arg(long, value_name = "CLASS", value_delimiter = ',')]
    arch: Vec<String>,
    /// A Hugging Face model folder (or its `config.json`): patch for the architectures it lists.
    #[arg(long, value_name = "DIR", conflicts_with = "arch")]
    model_path: Option<PathBuf>,
}

/// The `deepseek_v2.py` of the SGLang that `python` would import (located without importing it:
/// [`pysplice_programs::installed`]), `python` given `limit` to answer.
fn installed_model_file(python: &str, limit: std::time::Duration) -> Result<std::path::PathBuf, String> {
    let wanted = pysplice_programs::installed::Wanted {
        name: "sglang",
        shown: "SGLang",
        remedy: crate::install::REMEDY,
    };
    let package = pysplice_programs::installed::package_folder(python, wanted, limit)?;
    crate::install::package_model_file(&package, &format!("`{python}`")).map_err(|e| e.message)
}

/// What to do with the file.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Apply,
    Check,
    Revert,
}

impl Mode {
    fn of(args: &Args) -> Mode {
        if args.revert {
            Mode::Revert
        } else if args.check {
            Mode::Check
        } else {
            Mode::Apply
        }
    }

    fn name(self, dry_run: bool) -> &'static str {
        match (self, dry_run) {
            (Mode::Apply, false) => "apply",
            (Mode::Apply, true) => "apply --dry-run",
            (Mode::Revert, false) => "revert",
            (Mode::Revert, true) => "revert --dry-run",
            (Mode::Check, _) => "check",
        }
    }

    /// The words hook statuses are given in for this mode (a dry run says what would happen).
    fn words(self, dry_run: bool) -> Words {
        match (self, dry_run) {
            (Mode::Apply, false) => Words::Apply,
            (Mode::Apply, true) => Words::DryRun,
            (Mode::Check, _) => Words::Check,
            (Mode::Revert, false) => Words::Revert,
            (Mode::Revert, true) => Words::RevertDryRun,
        }
    }
}

/// Exit code for an error: 1 when a hook could not be placed or the markers are damaged, 2 for
/// input that cannot be used.
fn exit_code(err: &Error) -> u8 {
    if err.is_input_error() {
        2
    } else {
        1
    }
}

/// The JSON body of one file: `splice` with the run's mode, release and launch.
fn body(args: &Args, splice: Splice, release: Option<&Release>, launch: Option<(&str, &Launch)>) -> Dump {
    Dump {
        splice,
        mode: Mode::of(args).name(args.dry_run).to_string(),
        demo: args.path.is_none() && !args.installed && args.arch.is_empty() && args.model_path.is_none(),
        release: release.map(|r| contract::Release {
            version: r.text.clone(),
            source: r.source.clone(),
        }),
        launch: launch.map(|(env, launch)| dump_launch(env, launch)),
        architectures: Vec::new(),
        skipped: None,
    }
}

/// Prints a failure as text, or as the JSON object of a file with `error` set and what became of
/// every hook, and gives `code`.
fn fail(args: &Args, file: &Path, error: ErrorInfo, hooks: Vec<HookResult>, code: u8) -> u8 {
    if args.json {
        let splice = Splice {
            status: FileStatus::Failed,
            changed: false,
            written: false,
            hooks,
            diff: None,
            notes: Vec::new(),
        };
        let body = Body::SglangHsDump(body(args, splice, None, None));
        outln!("{}", Output::failed(file.display().to_string(), body, error).to_line());
    } else {
        errln!("{}", error.message);
    }
    code
}

/// Whether applying has work left (the library's one up-to-date rule).
fn pending(patched: &Patched) -> bool {
    !patched.is_up_to_date()
}

/// A file's status: `check` finds work when `pending`; `apply` is up to date unless `pending`;
/// `revert` had something to do when `changed`.
fn file_status(mode: Mode, dry_run: bool, pending: bool, changed: bool) -> FileStatus {
    match (mode, dry_run) {
        (Mode::Check, _) if pending => FileStatus::NeedsApply,
        (Mode::Check, _) => FileStatus::UpToDate,
        (Mode::Apply, _) if !pending => FileStatus::UpToDate,
        (Mode::Apply, true) => FileStatus::WouldPatch,
        (Mode::Apply, false) => FileStatus::Patched,
        (Mode::Revert, _) if !changed => FileStatus::NothingToRevert,
        (Mode::Revert, true) => FileStatus::WouldRevert,
        (Mode::Revert, false) => FileStatus::Reverted,
    }
}

/// The note for each file written that had other hard links (which keep the old content).
fn hard_link_notes(written: &[&pysplice::files::DiskFile]) {
    for file in written.iter().filter(|f| f.hard_links() > 1) {
        errln!(
            "note: {} had {} hard links; it is now a file of its own, the other names keep the old content",
            file.path().display(),
            file.hard_links()
        );
    }
}

/// `check`'s line per hook.
fn print_check_lines(patched: &Patched) {
    for outcome in patched.outcomes() {
        outln!("  - {}: {}", outcome.hook, report::check_status(outcome));
    }
}

/// `patched`'s outcomes with summaries naming the classes the hooks sit in (see
/// [`crate::summary::named`]).
fn named(patched: &Patched) -> Vec<pysplice::HookOutcome> {
    crate::summary::named(patched, RECIPE_ID)
}

/// The marker id both bundled recipes write.
const RECIPE_ID: &str = "sglang-hs-dump";

/// An apply's report of one file: patched or up to date, then a line per hook.
fn print_applied_file(patched: &Patched) {
    if patched.is_up_to_date() {
        outln!("Already up to date: {}", report::printable(patched.name()));
    } else {
        outln!("Successfully patched {}", report::printable(patched.name()));
    }
    for outcome in named(patched) {
        outln!("  - {}", report::outcome_line(&outcome));
    }
}

/// A revert's report of one file: what was removed, or that there was nothing to remove.
fn print_reverted_file(patched: &Patched, dry_run: bool) {
    let name = report::printable(patched.name());
    match (patched.changed(), dry_run) {
        (false, _) => outln!("Nothing to revert in {name}"),
        (true, true) => outln!("Would revert {name}"),
        (true, false) => outln!("Reverted {name}"),
    }
    if patched.changed() {
        for outcome in named(patched) {
            outln!("  - {}", report::outcome_line(&outcome));
        }
    }
}

/// A word for a shell command line: as it is when it is plain, else in single quotes.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-,:=+@%".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The interpreter of the example launch line: the one `--installed` asked (`--python`), whose
/// SGLang was patched; else `python3`.
fn launch_python(args: &Args) -> String {
    if args.installed {
        shell_word(&report::printable(&args.python))
    } else {
        "python3".to_string()
    }
}

/// How to start the server with the dump, and how to undo the patch: the release's flags and
/// notes, an example launch line (for `model`, run by `python`), and `undo` (none for the demo's
/// copy).
fn print_use(
    env: &str,
    release: Option<&Release>,
    launch: &Launch,
    demo: bool,
    (python, model): (&str, &str),
    undo: Option<&str>,
) {
    let dir = crate::install::DUMP_DIR;
    outln!("To use: set {env}={dir} before starting server");
    match release {
        Some(r) => outln!(
            "Server flags for SGLang {} (from {}):",
            report::printable(&r.text),
            report::printable(&r.source)
        ),
        None if demo => outln!("Server flags (for a real SGLang they depend on its release):"),
        None => outln!("Server flags:"),
    }
    outln!("  {}", launch.flags.join(" "));
    for note in &launch.notes {
        outln!("Note: {note}");
    }
    outln!(
        "e.g. {env}={dir} {python} -m sglang.launch_server --model-path {model} {}",
        launch.flags.join(" ")
    );
    match undo {
        Some(undo) => outln!("Undo with: {undo}"),
        None => outln!("The demo copy and its temporary folder are removed as this run ends."),
    }
}

fn run(args: &Args) -> u8 {
    if args.flag_table {
        print!("{}", sglang::flag_table());
        return 0;
    }
    if !args.arch.is_empty() || args.model_path.is_some() {
        return models::run(args, Mode::of(args));
    }
    one::run(args, Mode::of(args))
}

/// How to start the server for the dump, as the JSON output gives it: `env` (the recipe's
/// variable, see [`crate::install::env_var`]) set to [`crate::install::DUMP_DIR`], and `launch`'s
/// flags and notes.
fn dump_launch(env: &str, launch: &Launch) -> contract::Launch {
    contract::Launch {
        env: [(env.to_string(), crate::install::DUMP_DIR.to_string())].into(),
        flags: launch.flags.iter().map(|f| f.to_string()).collect(),
        notes: launch.notes.clone(),
    }
}

/// Runs `sglang-hs-dump` on the process's arguments and gives its exit code.
#[must_use]
pub fn main() -> ExitCode {
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(err) => {
            let code = if err.use_stderr() { 2 } else { 0 };
            let _ = err.print();
            return ExitCode::from(code);
        }
    };
    pysplice_programs::output::finish(run(&args))
}
