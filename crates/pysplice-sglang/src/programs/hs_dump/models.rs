//! `--arch` / `--model-path`: every file the architectures need, all or none.

use std::path::{Path, PathBuf};

use pysplice::project::select::RootChoice;
use pysplice::report::printable;
use pysplice_programs::contract::{Body, ErrorInfo, FileStatus, Output, Splice};
use pysplice_programs::{errln, out, outln};

use crate::install::{self as sglang_install, Release};
use crate::launch::Launch;
use crate::models::{self as sglang_models, FilePatch};

use super::{body, exit_code, fail, Args, Mode, PROGRAM};

/// A failure before any file is patched: a JSON error object in the contract's layout, or text.
fn failed(args: &Args, file: &Path, message: &str, code: u8) -> u8 {
    fail(args, file, ErrorInfo::message(message), Vec::new(), code)
}

/// The models folder, from PATH or `--installed`.
fn models_dir(args: &Args) -> Result<PathBuf, String> {
    let base = if args.installed {
        super::installed_model_file(&args.python, args.probe_timeout)
            .map(|f| f.parent().map(Path::to_path_buf).unwrap_or(f))
    } else if let Some(path) = &args.path {
        Ok(path.clone())
    } else {
        Err(
            "--arch and --model-path need PATH (a models folder, the sglang package, site-packages, a checkout, \
             a model file) or --installed"
                .to_string(),
        )
    };
    base.and_then(|b| {
        sglang_models::models_dir(&b).ok_or_else(|| format!("{}: no sglang/srt/models folder here", b.display()))
    })
}

/// Whether a file has work left (the library's one up-to-date rule).
fn pending(p: &FilePatch) -> bool {
    super::pending(&p.patched)
}

/// Patches, checks or reverts every file the architectures need, and reports them.
pub fn run(args: &Args, mode: Mode) -> u8 {
    let given = args.path.clone().unwrap_or_default();
    let dir = match models_dir(args) {
        Ok(dir) => dir,
        Err(message) => return failed(args, &given, &message, 2),
    };
    let wanted: Option<Vec<String>> = match &args.model_path {
        Some(model) => match super::hub::architectures(model) {
            Ok(names) => Some(names),
            Err(err) => return fail(args, model, ErrorInfo::from(&err), Vec::new(), 2),
        },
        None if args.arch.iter().any(|a| a == "all") => None,
        None => Some(args.arch.clone()),
    };
    let recipe = crate::recipes::models_recipe().expect("the bundled recipes are valid");
    let lib_mode = if mode == Mode::Revert {
        sglang_models::Mode::Revert
    } else {
        sglang_models::Mode::Apply
    };
    let (selection, patches) = match sglang_models::patch(&recipe, &dir, wanted.as_deref(), lib_mode) {
        Ok(found) => found,
        Err(err) => return fail(args, &dir, ErrorInfo::from(&err), Vec::new(), exit_code(&err)),
    };
    finish(args, mode, &recipe, &dir, &selection, &patches, wanted.as_deref())
}

/// A `--revert` or `--check` without `--arch` of a folder where files besides `deepseek_v2.py`
/// carry the recipe's markers: every marked file reverted, or checked for the architectures
/// patched in it.
pub fn run_marked(args: &Args, mode: Mode, dir: &Path) -> u8 {
    let recipe = crate::recipes::models_recipe().expect("the bundled recipes are valid");
    let lib_mode = if mode == Mode::Revert {
        sglang_models::Mode::Revert
    } else {
        sglang_models::Mode::Apply
    };
    let (selection, patches, archs) = match sglang_models::patch_marked(&recipe, dir, lib_mode) {
        Ok(found) => found,
        Err(err) => return fail(args, dir, ErrorInfo::from(&err), Vec::new(), exit_code(&err)),
    };
    if !args.json {
        let names: Vec<String> = patches.iter().map(|p| p.relative.clone()).collect();
        outln!(
            "{}: files carrying the patch: {}; {} them",
            printable(&dir.display().to_string()),
            printable(&names.join(", ")),
            if mode == Mode::Revert { "reverting" } else { "checking" }
        );
    }
    finish(args, mode, &recipe, dir, &selection, &patches, Some(&archs))
}

/// Writes what the mode asks for and reports it: the exit code.
fn finish(
    args: &Args,
    mode: Mode,
    recipe: &pysplice::Recipe,
    dir: &Path,
    selection: &pysplice::project::select::RootChoices,
    patches: &[FilePatch],
    wanted: Option<&[String]>,
) -> u8 {
    let written = mode != Mode::Check && !args.dry_run;
    if written {
        match sglang_models::write_all(patches) {
            Ok(files) => super::hard_link_notes(&files),
            Err(err) => return fail(args, dir, ErrorInfo::from(&err), Vec::new(), exit_code(&err)),
        }
    }
    let roots: Vec<_> = selection
        .roots
        .iter()
        .filter(|r| wanted.is_none_or(|w| w.contains(&r.class)))
        .collect();
    // An unreadable --sglang-version falls back to what the install says.
    let release = args
        .sglang_version
        .as_deref()
        .and_then(Release::given)
        .or_else(|| Release::detect(&dir.join("__init__.py")));
    let run = Finished {
        args,
        mode,
        dir,
        env: sglang_install::env_var(recipe),
        launch: sglang_install::launch_for(release.as_ref(), &[]),
        release,
        roots,
        patches,
        written,
    };
    if args.json {
        run.print_json();
    } else {
        run.print_text();
    }
    u8::from(mode == Mode::Check && patches.iter().any(pending))
}

/// Every file patched, checked or reverted, ready to be reported.
struct Finished<'a> {
    args: &'a Args,
    mode: Mode,
    /// The models folder.
    dir: &'a Path,
    /// The environment variable that turns the dump on.
    env: &'a str,
    launch: Launch,
    release: Option<Release>,
    /// The architectures asked for, each with the files it needs or why it is skipped.
    roots: Vec<&'a RootChoice>,
    patches: &'a [FilePatch],
    /// Whether the files were written (neither `--check` nor `--dry-run`).
    written: bool,
}

impl Finished<'_> {
    /// The diff with the path as read in its headers, as a run on one file shows it.
    fn diff(p: &FilePatch) -> String {
        p.patched.diff()
    }

    /// The contract's layout: one object per file, then one per architecture skipped.
    fn print_json(&self) {
        let (args, mode) = (self.args, self.mode);
        let dump = |splice, architectures, skipped| {
            let mut dump = body(args, splice, self.release.as_ref(), Some((self.env, &self.launch)));
            dump.architectures = architectures;
            dump.skipped = skipped;
            Body::SglangHsDump(dump)
        };
        for p in self.patches {
            let status = super::file_status(mode, args.dry_run, pending(p), p.patched.changed());
            let mut splice = Splice::new(status, &super::named(&p.patched), mode.words(args.dry_run));
            splice.changed = p.patched.changed();
            splice.written = self.written && p.patched.changed();
            splice.diff = args.dry_run.then(|| Self::diff(p));
            let mut served: Vec<String> = self
                .roots
                .iter()
                .filter(|r| r.skipped.is_none() && r.files().contains(&p.relative.as_str()))
                .map(|r| r.class.clone())
                .collect();
            served.sort();
            served.dedup();
            let path = p.file.path().display().to_string();
            outln!("{}", Output::new(path, dump(splice, served, None)).to_line());
        }
        for root in self.roots.iter().filter(|r| r.skipped.is_some()) {
            let splice = Splice::new(FileStatus::Skipped, &[], mode.words(args.dry_run));
            let path = self.dir.join(&root.file).display().to_string();
            let body = dump(splice, vec![root.class.clone()], root.skipped.clone());
            outln!("{}", Output::new(path, body).to_line());
        }
    }

    fn print_text(&self) {
        for root in &self.roots {
            // Names from the scanned folder are printed escaped: a file may be named anything.
            let line = match &root.skipped {
                Some(why) => format!("{} ({}): skipped: {why}", root.class, root.file),
                None => format!("{} ({}): {}", root.class, root.file, root.files().join(", ")),
            };
            outln!("{}", printable(&line));
        }
        for p in self.patches {
            match (self.mode, self.args.dry_run) {
                (Mode::Check, _) => {
                    let name = p.file.path().display().to_string();
                    outln!(
                        "{}: {}",
                        printable(&name),
                        if pending(p) { "needs apply" } else { "up to date" }
                    );
                    super::print_check_lines(&p.patched);
                }
                (Mode::Revert, _) if !p.patched.changed() => super::print_reverted_file(&p.patched, self.args.dry_run),
                (_, true) => out!("{}", Self::diff(p)),
                (Mode::Revert, false) => super::print_reverted_file(&p.patched, false),
                (Mode::Apply, false) => super::print_applied_file(&p.patched),
            }
        }
        if self.args.dry_run {
            errln!("dry run: nothing was written");
        } else if self.mode == Mode::Apply {
            outln!();
            let model = match &self.args.model_path {
                Some(model) => super::shell_word(&printable(&model.display().to_string())),
                None => "MODEL".to_string(),
            };
            let python = super::launch_python(self.args);
            super::print_use(
                self.env,
                self.release.as_ref(),
                &self.launch,
                false,
                (&python, &model),
                Some(&self.undo()),
            );
        }
    }

    /// The command that reverts what this run patched: the same folder and architectures.
    fn undo(&self) -> String {
        let mut words = vec![PROGRAM.to_string(), "--revert".to_string()];
        if self.args.installed {
            words.push("--installed".into());
            if self.args.python != "python3" {
                words.push("--python".into());
                words.push(super::shell_word(&printable(&self.args.python)));
            }
        } else if let Some(path) = &self.args.path {
            words.push(super::shell_word(&printable(&path.display().to_string())));
        }
        match &self.args.model_path {
            Some(model) => {
                words.push("--model-path".into());
                words.push(super::shell_word(&printable(&model.display().to_string())));
            }
            None => {
                words.push("--arch".into());
                words.push(super::shell_word(&printable(&self.args.arch.join(","))));
            }
        }
        words.join(" ")
    }
}
