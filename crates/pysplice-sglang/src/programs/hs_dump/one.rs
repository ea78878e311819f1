//! One `deepseek_v2.py`: the demo copy, a path, or the installed SGLang's.

use std::path::{Path, PathBuf};

use tempfile::TempDir;

use pysplice::files::DiskFile;
use pysplice::report::printable;
use pysplice::{report, Error, HookOutcome, Patched, Recipe};
use pysplice_programs::contract::{Body, ErrorInfo, HookResult, Output, Splice};
use pysplice_programs::{errln, out, outln};

use crate::install::{self as sglang_install, Release};

use super::{body, exit_code, fail, Args, Mode, PROGRAM};

/// A failure with what became of every hook (every hook as not run when none are known).
fn failed(args: &Args, recipe: &Recipe, file: &Path, error: ErrorInfo, outcomes: &[HookOutcome], code: u8) -> u8 {
    let words = Mode::of(args).words(args.dry_run);
    let hooks = if outcomes.is_empty() {
        HookResult::not_run(recipe)
    } else {
        outcomes.iter().map(|o| HookResult::new(o, words)).collect()
    };
    fail(args, file, error, hooks, code)
}

/// Applies the recipe, reporting every hook when one cannot be placed.
fn apply(args: &Args, recipe: &Recipe, file: &DiskFile) -> Result<Patched, u8> {
    let attempt = pysplice::attempt(recipe, file.source().clone());
    let (planned, outcomes) = (attempt.planned, attempt.outcomes);
    attempt.result.map_err(|err| {
        if !args.json && !outcomes.is_empty() && !planned {
            errln!("Cannot patch {}", file.path().display());
            for outcome in &outcomes {
                errln!("  - {}", report::outcome_line(outcome));
            }
            errln!("nothing was written");
            return 1;
        }
        failed(
            args,
            recipe,
            file.path(),
            ErrorInfo::from(&err),
            &outcomes,
            exit_code(&err),
        )
    })
}

/// The file to patch and its release (and for the demo, the temporary folder holding its copy,
/// removed when dropped), or the exit code of a failure already reported.
fn locate(args: &Args, recipe: &Recipe, demo: bool) -> Result<(PathBuf, Option<Release>, Option<TempDir>), u8> {
    let mut folder = None;
    let path = if args.installed {
        super::installed_model_file(&args.python, args.probe_timeout)
    } else if let Some(path) = &args.path {
        sglang_install::model_file(path).map_err(|e| e.message)
    } else {
        super::demo::demo_copy().map(|(dir, file)| {
            folder = Some(dir);
            file
        })
    };
    let path = path.map_err(|message| {
        let file = args.path.as_deref().unwrap_or(Path::new(""));
        failed(args, recipe, file, ErrorInfo::message(message), &[], 2)
    })?;
    let release = match &args.sglang_version {
        Some(text) => match Release::given(text) {
            Some(release) => Some(release),
            None => {
                let message = format!("--sglang-version {text}: not a release number such as 0.5.9");
                return Err(failed(args, recipe, &path, ErrorInfo::message(message), &[], 2));
            }
        },
        None if demo => None,
        None => Release::detect(&path),
    };
    Ok((path, release, folder))
}

/// Patches, checks or reverts one file and reports it.
pub fn run(args: &Args, mode: Mode) -> u8 {
    let recipe = crate::recipes::builtin("sglang-hs-dump")
        .expect("a bundled recipe")
        .expect("the bundled recipe is valid");
    let demo = args.path.is_none() && !args.installed;
    // The demo's folder lives until the run ends, then is removed.
    let (path, release, _demo_folder) = match locate(args, &recipe, demo) {
        Ok(found) => found,
        Err(code) => return code,
    };
    if let Some(code) = other_marked_files(args, mode, &recipe, &path) {
        return code;
    }
    let (patched, written) = match transform(args, mode, &recipe, &path) {
        Ok(done) => done,
        Err(code) => return code,
    };
    let run = Finished {
        args,
        mode,
        demo,
        env: sglang_install::env_var(&recipe),
        release,
        patched,
        written,
    };
    if args.json {
        run.print_json()
    } else {
        run.print_text()
    }
}

/// For a `--revert` or `--check` of a folder (or `--installed`): when files of the models folder
/// other than `deepseek_v2.py` carry the recipe's markers (an earlier `--arch` run), the run
/// covers them all, and its exit code is given; `None` to go on with the one file.
fn other_marked_files(args: &Args, mode: Mode, recipe: &Recipe, path: &Path) -> Option<u8> {
    let folder_given = args.installed || args.path.as_deref().is_some_and(Path::is_dir);
    if mode == Mode::Apply || !folder_given {
        return None;
    }
    let dir = path.parent()?;
    let models = crate::recipes::models_recipe().expect("the bundled recipes are valid");
    match crate::models::marked_files(&models, dir) {
        Ok(marked) if marked.iter().any(|m| m != "deepseek_v2.py") => Some(super::models::run_marked(args, mode, dir)),
        Ok(_) => None,
        Err(err) => Some(failed(args, recipe, dir, ErrorInfo::from(&err), &[], exit_code(&err))),
    }
}

/// Reads the file, patches or reverts it and writes it when the mode asks for a write: the
/// result and whether it was written, or the exit code of a failure already reported.
fn transform(args: &Args, mode: Mode, recipe: &Recipe, path: &Path) -> Result<(Patched, bool), u8> {
    let file =
        DiskFile::read(path).map_err(|err| failed(args, recipe, path, ErrorInfo::from(&err), &[], exit_code(&err)))?;
    let patched = if mode == Mode::Revert {
        pysplice::revert(recipe, file.source().clone())
            .map_err(|err: Error| failed(args, recipe, path, ErrorInfo::from(&err), &[], exit_code(&err)))?
    } else {
        apply(args, recipe, &file)?
    };
    // Written before anything is printed about it: a report that cannot be printed never leaves
    // the file half done, and "Successfully patched" follows a write that succeeded.
    let write = mode != Mode::Check && !args.dry_run && patched.changed();
    if write {
        if let Err(err) = file.write(patched.output()) {
            let code = exit_code(&err);
            return Err(failed(
                args,
                recipe,
                path,
                ErrorInfo::from(&err),
                patched.outcomes(),
                code,
            ));
        }
        super::hard_link_notes(&[&file]);
    }
    Ok((patched, write))
}

/// A file patched, checked or reverted, ready to be reported.
struct Finished<'a> {
    args: &'a Args,
    mode: Mode,
    /// Whether the file is the bundled demo's copy.
    demo: bool,
    /// The environment variable that turns the dump on.
    env: &'a str,
    release: Option<Release>,
    patched: Patched,
    written: bool,
}

impl Finished<'_> {
    /// The exit code: 1 when `--check` finds the file not up to date.
    fn code(&self) -> u8 {
        u8::from(self.mode == Mode::Check && super::pending(&self.patched))
    }

    /// The launch flags and notes for the release and the hooks that were placed (the demo's
    /// model is of no release: the flags of current releases, unless `--sglang-version` names
    /// one).
    fn launch(&self) -> crate::launch::Launch {
        if self.demo && self.release.is_none() {
            return crate::launch::launch_current();
        }
        let outcomes = if self.mode == Mode::Revert {
            &[][..]
        } else {
            self.patched.outcomes()
        };
        sglang_install::launch_for(self.release.as_ref(), outcomes)
    }

    /// The unified diff, headers `a/<path>`, `b/<path>` with the path as given (relative to /
    /// when absolute).
    fn diff(&self) -> String {
        self.patched.diff()
    }

    fn print_json(&self) -> u8 {
        let (args, patched) = (self.args, &self.patched);
        let status = super::file_status(self.mode, args.dry_run, super::pending(patched), patched.changed());
        let mut splice = Splice::new(status, &super::named(patched), self.mode.words(args.dry_run));
        splice.changed = patched.changed();
        splice.written = self.written;
        splice.diff = (args.dry_run || self.demo).then(|| self.diff());
        let launch = self.launch();
        let body = Body::SglangHsDump(body(args, splice, self.release.as_ref(), Some((self.env, &launch))));
        outln!("{}", Output::new(patched.name(), body).to_line());
        self.code()
    }

    fn print_text(&self) -> u8 {
        let (patched, code) = (&self.patched, self.code());
        if self.demo {
            outln!(
                "No PATH given: patching a copy of the bundled demo model (crates/pysplice-sglang/data/demo_model.py, written for \
                 pysplice in the shape of SGLang's deepseek_v2.py; not SGLang code)."
            );
            outln!("For a real SGLang: {PROGRAM} --installed, or {PROGRAM} path/to/deepseek_v2.py\n");
        }
        match (self.mode, self.args.dry_run) {
            (Mode::Check, _) => {
                outln!(
                    "{}: {}",
                    printable(patched.name()),
                    if code == 0 { "up to date" } else { "needs apply" }
                );
                super::print_check_lines(patched);
            }
            (Mode::Revert, true) if !patched.changed() => {
                outln!("Nothing to revert in {}", printable(patched.name()));
                errln!("dry run: nothing was written to {}", patched.name());
            }
            (_, true) => {
                out!("{}", self.diff());
                errln!("dry run: nothing was written to {}", patched.name());
            }
            (Mode::Revert, false) => super::print_reverted_file(patched, false),
            (Mode::Apply, false) => self.print_applied(),
        }
        code
    }

    fn print_applied(&self) {
        let patched = &self.patched;
        if self.demo {
            out!("{}", self.diff());
            outln!();
        }
        super::print_applied_file(patched);
        outln!();
        let undo = format!("{PROGRAM} --revert {}", super::shell_word(&printable(patched.name())));
        let undo = (!self.demo).then_some(undo.as_str());
        let launch = self.launch();
        let python = super::launch_python(self.args);
        super::print_use(
            self.env,
            self.release.as_ref(),
            &launch,
            self.demo,
            (&python, "MODEL"),
            undo,
        );
    }
}
