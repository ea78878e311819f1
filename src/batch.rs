//! One recipe over several files, as one change: every file is read and patched (or reverted) in
//! memory first ([`Batch::run`]); only when every file succeeded are the changed ones written,
//! all or nothing ([`Batch::write`], through [`crate::files::write_all`]). A folder's files are
//! read where one walk met them, never by a path resolved again: [`Tree`] offers the same walk
//! and reads to other programs.
//!
//! ```
//! use pysplice::batch::{Batch, Op};
//! use pysplice::Recipe;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let (a, b) = (dir.path().join("a.py"), dir.path().join("b.py"));
//! std::fs::write(&a, "x = 1\n").unwrap();
//! std::fs::write(&b, "y = 2\n").unwrap();
//! let recipe = Recipe::from_toml("r.toml", r#"
//! [recipe]
//! id = "r"
//! summary = "Imports os"
//! [[hook]]
//! id = "imports"
//! summary = "Imported os"
//! ensure-imports = ["os"]
//! "#)?;
//! let batch = Batch::run(&recipe, &[dir.path().to_path_buf()], Op::Apply);
//! assert!(batch.first_error().is_none());
//! // The run's diff, each file named relative to the folder: `Patched::diff` names a file by
//! // the path it was read from, `with_name` by another.
//! let mut diff = String::new();
//! for (file, patched) in batch.successes() {
//!     let name = file.path().strip_prefix(dir.path()).unwrap_or(file.path());
//!     diff += &patched.clone().with_name(name.to_string_lossy()).diff();
//! }
//! assert!(diff.starts_with("--- a/a.py\n+++ b/a.py\n"), "{diff}");
//! assert!(diff.contains("\n--- a/b.py\n+++ b/b.py\n"), "{diff}");
//! // Written all or none; a failed file would be an error naming it, nothing written.
//! assert_eq!(batch.write()?.len(), 2);
//! assert!(std::fs::read_to_string(&a).unwrap().contains("import os"));
//! # Ok::<(), pysplice::Error>(())
//! ```

mod glob;
mod package;
mod scope;
mod tree;
mod walk;

pub use tree::Tree;
pub use walk::WalkedFile;

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::engine::{attempt, revert, HookOutcome, Patched, Status};
use crate::error::{Error, ErrorKind};
use crate::files::{path_name, write_all, DiskFile, Spot};
use crate::location::Location;
use crate::outline::ParsedFile;
use crate::spec::Recipe;
use scope::Scope;

/// What a [`Batch`] does to each file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Apply (or update) the recipe.
    Apply,
    /// Remove what the recipe added.
    Revert,
}

/// How folders are walked.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Paths below a folder run left out: path globs as in `[recipe] files`.
    pub exclude: Vec<String>,
}

/// What the operation made of one file.
#[derive(Debug)]
pub struct FileRun {
    /// The path as given, or as found in a folder given.
    pub path: PathBuf,
    /// The file as read, when it could be.
    pub file: Option<DiskFile>,
    /// The result in memory, or why there is none.
    pub result: Result<Patched, Error>,
    /// What became of every hook, also on failure (empty when none is known: the file could not
    /// be read or its markers are damaged).
    pub outcomes: Vec<HookOutcome>,
}

/// Every file's result, before anything is written.
#[derive(Debug, Default)]
pub struct Batch {
    /// One entry per file the recipe targets: every file given by name, in the order given,
    /// then, for each folder, the files of it that a targeted hook changes or that carry the
    /// recipe's markers, in path order.
    pub files: Vec<FileRun>,
    /// The files of the folders given that the recipe does not target (no hook's target is
    /// defined there, no marker of the recipe, or left out by `[recipe] files`): untouched.
    pub not_targeted: Vec<PathBuf>,
    /// Symbolic links in the folders, not followed, with what they point to.
    pub not_followed: Vec<(PathBuf, PathBuf)>,
    /// What failed the run as a whole: a folder that cannot be walked, a required hook whose
    /// target no file of the folders defines.
    pub errors: Vec<Error>,
}

/// Why [`Batch::write`] wrote nothing (or, for a [`PartialWrite`](crate::ErrorKind::PartialWrite),
/// not everything). `?` turns it into the [`Error`] underneath ([`WriteError::error`]).
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// A file of the run, or the run as a whole, failed: nothing was written. The whole report
    /// stays in the [`Batch`]: each file's result and its hooks' outcomes in [`Batch::files`].
    #[error("{error}; nothing was written{}", others_failed(failed))]
    Failed {
        /// The file that failed first; `None` when the run failed as a whole (a folder that
        /// cannot be walked, a required hook whose target no file defines).
        path: Option<PathBuf>,
        /// The first failure ([`Batch::first_error`]), with its file, line, column and hook.
        error: Error,
        /// Every file of the run that failed, in the run's order.
        failed: Vec<PathBuf>,
    },
    /// Every file succeeded and writing failed (see [`crate::files::write_all`]).
    #[error(transparent)]
    Write(Error),
}

impl WriteError {
    /// The error underneath: the first failure of the run, or the write's.
    #[must_use]
    pub fn error(&self) -> &Error {
        match self {
            WriteError::Failed { error, .. } | WriteError::Write(error) => error,
        }
    }
}

impl From<WriteError> for Error {
    fn from(err: WriteError) -> Error {
        match err {
            WriteError::Failed { error, .. } | WriteError::Write(error) => error,
        }
    }
}

/// ` (3 files of the run failed)` when more than one did.
fn others_failed(failed: &[PathBuf]) -> String {
    if failed.len() > 1 {
        format!(
            " ({} of the run failed)",
            crate::printable::counted(failed.len(), "file", "files")
        )
    } else {
        String::new()
    }
}

/// The first path of `paths` that names the same file as an earlier one (as given, or once
/// resolved), if any: a batch changes each file once. Two names of one file (hard links) are
/// not the same path: each name is patched (see [`crate::files`]).
#[must_use]
pub fn duplicate(paths: &[PathBuf]) -> Option<&Path> {
    let mut seen = Vec::new();
    for path in paths {
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
        if seen.contains(&key) {
            return Some(path);
        }
        seen.push(key);
    }
    None
}

/// A file of a run of several paths: given by name, or found in a folder given.
#[derive(Clone)]
struct Found {
    path: PathBuf,
    rel: String,
    module: String,
    /// Given by name: `[recipe] files` does not leave it out.
    given: bool,
    /// Where the walk met it (a file of a folder given): read there and nowhere else.
    spot: Option<Spot>,
}

impl Found {
    /// A file given by name.
    fn given(path: &Path) -> Found {
        let rel = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        Found {
            path: path.to_path_buf(),
            module: module_name("", &rel),
            rel,
            given: true,
            spot: None,
        }
    }

    /// A file a walk of a folder (the package `package`) met.
    fn walked(file: &WalkedFile, package: &str) -> Found {
        Found {
            path: file.path.clone(),
            rel: file.rel.clone(),
            module: module_name(package, &file.rel),
            given: false,
            spot: Some(file.spot.clone()),
        }
    }
}

/// A path of a run of several: a file, or a folder as its one walk met it.
enum Given {
    File(PathBuf),
    Folder(Tree),
}

/// Walks each folder of `paths` once: all of it when `whole` (a class graph of selectors reads
/// the files the run leaves out), else without what `options` excludes. A folder that cannot
/// be walked is an error of the run, and has no files.
fn walk_paths(paths: &[PathBuf], options: &RunOptions, whole: bool, errors: &mut Vec<Error>) -> Vec<Given> {
    let all = RunOptions::default();
    let walk_options = if whole { &all } else { options };
    let mut given = Vec::new();
    for path in paths {
        if !is_folder(path) {
            given.push(Given::File(path.clone()));
            continue;
        }
        match Tree::walk(path, walk_options) {
            Ok(tree) => given.push(Given::Folder(tree)),
            Err(err) => errors.push(err),
        }
    }
    given
}

/// Each file's recipe: the run's, or for a recipe whose hooks choose their classes by selectors,
/// the concrete recipe that the selection over each whole folder (a project scan) gives a file
/// (a file no selection reaches gets the recipe without its selector hooks).
struct Choice<'r> {
    recipe: &'r Recipe,
    /// `None` for a recipe without selectors.
    chosen: Option<(std::collections::HashMap<PathBuf, Recipe>, Recipe)>,
}

impl<'r> Choice<'r> {
    /// The selection of `recipe` over the folders of `given`, each read through its walk's
    /// handles like the run's own files: nothing outside it is read.
    fn new(recipe: &'r Recipe, given: &[Given], errors: &mut Vec<Error>) -> Choice<'r> {
        if !recipe.selects() {
            return Choice { recipe, chosen: None };
        }
        let options = crate::project::ScanOptions {
            package: None,
            conventions: recipe.conventions.clone(),
        };
        let mut chosen = std::collections::HashMap::new();
        for tree in given.iter().filter_map(|g| match g {
            Given::Folder(tree) => Some(tree),
            Given::File(_) => None,
        }) {
            let project = crate::project::Project::scan_tree(tree, &options);
            let selection = crate::project::select::choose_roots(&project, recipe);
            let folder = tree.root();
            match crate::project::select::expand(recipe, &selection, None, &folder.display().to_string()) {
                Ok(files) => chosen.extend(files.into_iter().map(|f| (folder.join(&f.file), f.recipe))),
                Err(err) => errors.push(err),
            }
        }
        Choice {
            recipe,
            chosen: Some((chosen, without_selectors(recipe))),
        }
    }

    /// The recipe of the file `f`.
    fn recipe_of(&self, f: &Found) -> &Recipe {
        match &self.chosen {
            // A file given by name keeps the selection made in it alone.
            Some((chosen, unselected)) => chosen
                .get(&f.path)
                .unwrap_or(if f.given { self.recipe } else { unselected }),
            None => self.recipe,
        }
    }
}

/// The errors of an apply run of several files in which no file holds the target of a required
/// hook of `scope`'s recipe (none of `found`): each names the run (the first folder given, or
/// the first file when there is none), how many files were looked at (`scanned`) and the
/// closest definitions among theirs.
fn missing_targets(
    scope: &Scope<'_>,
    found: &std::collections::HashSet<String>,
    scanned: &[Found],
    paths: &[PathBuf],
) -> Vec<Error> {
    let recipe = scope.recipe();
    let missing: Vec<usize> = scope
        .targeted()
        .filter(|&i| !recipe.hooks[i].optional && !found.contains(&recipe.hooks[i].id))
        .collect();
    if missing.is_empty() {
        return Vec::new();
    }
    let run = paths.iter().find(|p| is_folder(p)).or(paths.first());
    let run = run.map_or_else(String::new, |p| path_name(p));
    let known = definitions(scanned);
    let closest = |path: &String| crate::suggest::closest(path, known.iter().map(String::as_str), 3);
    missing
        .into_iter()
        .map(|i| {
            let hook = &recipe.hooks[i];
            let candidates = match &hook.target {
                crate::locate::Target::Definition { path, .. } => closest(path),
                crate::locate::Target::Paths(wanted) => wanted.first().map(closest).unwrap_or_default(),
                _ => Vec::new(),
            };
            let kind = ErrorKind::NotInFolder {
                path: scope::describe(&hook.target),
                files: scanned.len(),
                candidates: candidates.into(),
            };
            kind.at(Location::whole(run.clone())).with_hook(&hook.id)
        })
        .collect()
}

/// Test hooks: what runs between the steps of a folder run, to swap files deterministically.
#[cfg(test)]
pub(crate) mod faults {
    use std::cell::RefCell;

    thread_local! {
        /// Runs after the folders are walked, before any file is read.
        pub(crate) static AFTER_WALK: RefCell<Option<Box<dyn Fn()>>> = RefCell::new(None);
    }
}

/// What a file of a run of several is to the run; with the targeted hooks (by index) whose
/// targets it holds.
enum Verdict {
    Run(Box<FileRun>, Vec<usize>),
    /// Its targets are there, but every hook is skipped there on purpose: untouched.
    Skipped(PathBuf, Vec<usize>),
    NotTargeted(PathBuf),
}

impl Batch {
    /// Reads every file and runs `op` on it in memory. Nothing is written. A path that is a
    /// folder stands for its `.py` files (see [`Batch::run_with`]).
    #[must_use]
    pub fn run(recipe: &Recipe, paths: &[PathBuf], op: Op) -> Batch {
        Batch::run_with(recipe, paths, op, &RunOptions::default())
    }

    /// [`Batch::run`] with options. One file given alone gets the whole recipe: a target it
    /// lacks is an error. Otherwise the files are a set: the files given, and every `.py` file
    /// of the folders given (hidden folders and `__pycache__` left out, symbolic links never
    /// followed; a link loop fails the run) that the recipe's `files` key takes in. A file is
    /// run when a hook's target is defined there or it carries the recipe's markers, and kept
    /// when a hook is placed there: the others are [`Batch::not_targeted`]. Hooks whose targets
    /// a file lacks are skipped there; a required hook whose target no file defines fails the
    /// run.
    #[must_use]
    pub fn run_with(recipe: &Recipe, paths: &[PathBuf], op: Op, options: &RunOptions) -> Batch {
        if let [path] = paths {
            if !is_folder(path) {
                return Batch {
                    files: vec![run_one(recipe, path, op)],
                    ..Batch::default()
                };
            }
        }
        let mut batch = Batch::default();
        // Walk: each folder once; the class graph of selectors needs all of it.
        let given = walk_paths(paths, options, recipe.selects(), &mut batch.errors);
        let found = batch.found(&given, &options.exclude);
        #[cfg(test)]
        faults::AFTER_WALK.with(|hook| {
            if let Some(hook) = hook.borrow().as_ref() {
                hook();
            }
        });
        // Choose: the files the recipe takes in, and each one's recipe.
        let choice = Choice::new(recipe, &given, &mut batch.errors);
        let scope = Scope::new(recipe);
        let (taken, left): (Vec<Found>, Vec<Found>) = found
            .into_iter()
            .partition(|f| f.given || scope.takes(&f.rel, &f.module));
        batch.not_targeted.extend(left.into_iter().map(|f| f.path));
        // Kept for the suggestions of a run that fails (a target no file defines).
        let scanned: Vec<Found> = if op == Op::Apply { taken.clone() } else { Vec::new() };
        // Run.
        let targets_found = batch.run_files(&scope, &choice, taken, op);
        // A file that could not be read or parsed may hold the target: its error says why.
        let all_read = batch.files.iter().all(|f| f.file.is_some());
        if op == Op::Apply && batch.errors.is_empty() && all_read {
            let missing = missing_targets(&scope, &targets_found, &scanned, paths);
            batch.errors.extend(missing);
        }
        batch
    }

    /// The files of a run of several, in the order of `given`: a file given by name, or a
    /// folder's files that `exclude` leaves in, in path order (a file given by name is not met
    /// again in a folder). Notes the links the walks met that `exclude` leaves in.
    fn found(&mut self, given: &[Given], exclude: &[String]) -> Vec<Found> {
        // Each file once, by its resolved path (two hard links are two names, two files).
        let mut seen: std::collections::HashSet<PathBuf> = given
            .iter()
            .filter_map(|g| match g {
                Given::File(path) => Some(std::fs::canonicalize(path).unwrap_or_else(|_| path.clone())),
                Given::Folder(_) => None,
            })
            .collect();
        let mut found = Vec::new();
        for path in given {
            match path {
                Given::File(path) => found.push(Found::given(path)),
                Given::Folder(tree) => {
                    let links = tree.not_followed().iter().filter(|(link, _)| {
                        let rel = link.strip_prefix(tree.root()).unwrap_or(link);
                        !walk::left_out(&walk::relative(rel), exclude)
                    });
                    self.not_followed.extend(links.cloned());
                    let package = package_of(tree.root());
                    let files = tree.files().iter().filter(|f| !walk::left_out(&f.rel, exclude));
                    // The path the walk resolved, not the name resolved again.
                    let new = files.filter(|f| seen.insert(f.spot.folder.path().join(&f.spot.name)));
                    found.extend(new.map(|f| Found::walked(f, &package)));
                }
            }
        }
        found
    }

    /// Runs `op` on every file `taken` (in parallel), noting each as run or not targeted; gives
    /// the ids of the hooks whose targets some file holds.
    fn run_files(
        &mut self,
        scope: &Scope<'_>,
        choice: &Choice<'_>,
        taken: Vec<Found>,
        op: Op,
    ) -> std::collections::HashSet<String> {
        // Whether the recipe as a whole has hooks with targets (a file's own recipe may have
        // none left: no selection reaches it).
        let targeted = scope.has_targets();
        let verdicts: Vec<(Verdict, Vec<String>)> = taken
            .into_par_iter()
            .map(|f| {
                let file_recipe = choice.recipe_of(&f);
                // The run's scope, unless the file has a recipe of its own (selectors).
                let own;
                let file_scope = if std::ptr::eq(file_recipe, choice.recipe) {
                    scope
                } else {
                    own = Scope::new(file_recipe);
                    &own
                };
                let verdict = judge(file_scope, targeted, f.path, f.spot.as_ref(), f.given, op);
                let ids = match &verdict {
                    Verdict::Run(_, here) | Verdict::Skipped(_, here) => {
                        here.iter().map(|&i| file_recipe.hooks[i].id.clone()).collect()
                    }
                    Verdict::NotTargeted(_) => Vec::new(),
                };
                (verdict, ids)
            })
            .collect();
        let mut targets_found = std::collections::HashSet::new();
        for (verdict, ids) in verdicts {
            targets_found.extend(ids);
            match verdict {
                Verdict::Run(run, _) => self.files.push(*run),
                Verdict::NotTargeted(path) | Verdict::Skipped(path, _) => self.not_targeted.push(path),
            }
        }
        targets_found
    }

    /// The first failure, if the run or any file failed.
    #[must_use]
    pub fn first_error(&self) -> Option<&Error> {
        self.errors
            .first()
            .or_else(|| self.files.iter().find_map(|f| f.result.as_ref().err()))
    }

    /// The files that succeeded, with their results.
    pub fn successes(&self) -> impl Iterator<Item = (&DiskFile, &Patched)> {
        self.files
            .iter()
            .filter_map(|f| Some((f.file.as_ref()?, f.result.as_ref().ok()?)))
    }

    /// Writes every changed file, all or nothing, and gives the files written. When a file (or
    /// the run) failed, nothing is written and the error is [`WriteError::Failed`], naming the
    /// first failure and its file; every file's result and outcomes stay in [`Batch::files`].
    ///
    /// # Errors
    ///
    /// [`WriteError::Failed`] when a file or the run failed (nothing written);
    /// [`WriteError::Write`] with those of [`crate::files::write_all`]:
    /// [`Changed`](crate::ErrorKind::Changed), [`Locked`](crate::ErrorKind::Locked),
    /// [`Io`](crate::ErrorKind::Io), ... leave every file as it was,
    /// [`PartialWrite`](crate::ErrorKind::PartialWrite) names the files that were written.
    pub fn write(&self) -> Result<Vec<&DiskFile>, WriteError> {
        if let Some(error) = self.first_error() {
            let failed: Vec<PathBuf> = self
                .files
                .iter()
                .filter(|f| f.result.is_err())
                .map(|f| f.path.clone())
                .collect();
            // A failure of the run as a whole (listed first) names a folder, not a file.
            let path = if self.errors.is_empty() {
                failed.first().cloned()
            } else {
                None
            };
            return Err(WriteError::Failed {
                path,
                error: error.clone(),
                failed,
            });
        }
        self.write_changed().map_err(WriteError::Write)
    }

    fn write_changed(&self) -> Result<Vec<&DiskFile>, Error> {
        let changes: Vec<(&DiskFile, &str)> = self
            .successes()
            .filter(|(_, patched)| patched.changed())
            .map(|(file, patched)| (file, patched.output()))
            .collect();
        if !changes.is_empty() {
            write_all(&changes)?;
        }
        Ok(changes.into_iter().map(|(file, _)| file).collect())
    }
}

/// What `op` makes of a file of a run of several, `scope` the file's own recipe and `targeted`
/// whether the whole recipe has hooks with targets: run (with the targeted hooks whose targets
/// it holds), or not targeted. Of the files found in folders, only one that may hold a target (a
/// cheap text test) is parsed.
fn judge(scope: &Scope<'_>, targeted: bool, path: PathBuf, spot: Option<&Spot>, given: bool, op: Op) -> Verdict {
    let file = match read(&path, spot) {
        Ok(file) => file,
        Err(err) => return Verdict::Run(Box::new(failed(path, err)), Vec::new()),
    };
    let text = file.source().text();
    let marked = scope.marked(text);
    // A file given by name is parsed all the same: one that does not parse is an error.
    let skip_parse = !given && targeted && !scope.may_hold_target(text);
    if !marked && (op == Op::Revert || skip_parse) {
        return Verdict::NotTargeted(path);
    }
    if op == Op::Revert {
        return Verdict::Run(Box::new(finish(path, file, op, &scope.for_file(&[]))), Vec::new());
    }
    let here = if targeted {
        match ParsedFile::parse(file.source().clone()) {
            Ok(parsed) => scope.hooks_here(&parsed),
            Err(err) => return Verdict::Run(Box::new(failed(path, err)), Vec::new()),
        }
    } else {
        Vec::new()
    };
    if !marked && targeted && here.is_empty() {
        return Verdict::NotTargeted(path);
    }
    let recipe = scope.for_file(&here);
    let run = finish(path.clone(), file, op, &recipe);
    // Module-level hooks go only where a targeted hook is placed (or blocks are to be updated);
    // in a recipe of module-level hooks only, a file where each is skipped is not targeted.
    let counts = |hook: &str| !targeted || here.iter().any(|&i| recipe.hooks[i].id == hook);
    let placed = run
        .outcomes
        .iter()
        .any(|o| counts(&o.hook) && !matches!(o.status, Status::Skipped { .. }));
    if !marked && run.result.is_ok() && !placed {
        // Its targets were found all the same: skipped here on purpose (`requires`, `when`).
        return Verdict::Skipped(path, here);
    }
    Verdict::Run(Box::new(run), here)
}

/// `recipe` without its selector hooks: the recipe of a file no selection reaches.
fn without_selectors(recipe: &Recipe) -> Recipe {
    let mut out = recipe.clone();
    out.hooks
        .retain(|hook| !matches!(hook.target, crate::locate::Target::Select { .. }));
    out
}

/// Reads a file of a run: where the walk met it, or by the path given.
fn read(path: &Path, spot: Option<&Spot>) -> Result<DiskFile, Error> {
    match spot {
        Some(spot) => DiskFile::read_in(spot, path),
        None => DiskFile::read(path),
    }
}

/// The most definition paths a failed folder run draws its suggestions from (each is compared
/// with the target: a tree of a million definitions would take long for a hint).
const MAX_SUGGESTION_NAMES: usize = 100_000;

/// The definition paths of the files `scanned` (read as the run reads them, parsed), each once,
/// in path order: what "did you mean" draws from when no file defines a target. A file that
/// cannot be read or parsed gives none.
fn definitions(scanned: &[Found]) -> Vec<String> {
    let per_file: Vec<Vec<String>> = scanned
        .par_iter()
        .map(|f| {
            let Ok(file) = read(&f.path, f.spot.as_ref()) else {
                return Vec::new();
            };
            ParsedFile::parse(file.source().clone())
                .map(|parsed| parsed.definitions().iter().map(|d| d.path().to_string()).collect())
                .unwrap_or_default()
        })
        .collect();
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for path in per_file.into_iter().flatten() {
        if out.len() == MAX_SUGGESTION_NAMES {
            break;
        }
        if seen.insert(path.clone()) {
            out.push(path);
        }
    }
    out
}

fn is_folder(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_dir())
}

/// A file that could not be read or parsed.
fn failed(path: PathBuf, err: Error) -> FileRun {
    FileRun {
        path,
        file: None,
        result: Err(err),
        outcomes: Vec::new(),
    }
}

/// The package a folder is: its name, with the names of the parents above it that hold an
/// `__init__.py` (`.../transformers/models/llama` is `transformers.models.llama`); empty for a
/// folder that is not a package.
fn package_of(folder: &Path) -> String {
    let Ok(real) = std::fs::canonicalize(folder) else {
        return String::new();
    };
    if !real.join("__init__.py").is_file() {
        return String::new();
    }
    let mut names = Vec::new();
    let mut at = Some(real.as_path());
    while let Some(dir) = at {
        match dir.file_name() {
            Some(name) if dir.join("__init__.py").is_file() => names.push(name.to_string_lossy().into_owned()),
            _ => break,
        }
        at = dir.parent();
    }
    names.reverse();
    names.join(".")
}

/// The dotted module name of the file at `rel` in `package`.
fn module_name(package: &str, rel: &str) -> String {
    let rel = rel.strip_suffix(".py").unwrap_or(rel);
    let rel = rel
        .strip_suffix("/__init__")
        .unwrap_or(if rel == "__init__" { "" } else { rel });
    let dotted = rel.replace('/', ".");
    match (package.is_empty(), dotted.is_empty()) {
        (true, _) => dotted,
        (false, true) => package.to_string(),
        (false, false) => format!("{package}.{dotted}"),
    }
}

fn run_one(recipe: &Recipe, path: &Path, op: Op) -> FileRun {
    match DiskFile::read(path) {
        Ok(file) => finish(path.to_path_buf(), file, op, recipe),
        Err(err) => failed(path.to_path_buf(), err),
    }
}

/// Runs `op` with `recipe` on a file read.
fn finish(path: PathBuf, file: DiskFile, op: Op, recipe: &Recipe) -> FileRun {
    let (result, outcomes) = match op {
        Op::Apply => {
            let tried = attempt(recipe, file.source().clone());
            (tried.result, tried.outcomes)
        }
        Op::Revert => {
            let result = revert(recipe, file.source().clone());
            let outcomes = result.as_ref().map(|p| p.outcomes().to_vec()).unwrap_or_default();
            (result, outcomes)
        }
    };
    FileRun {
        path,
        file: Some(file),
        result,
        outcomes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    const RECIPE: &str = "[recipe]\nid = \"r\"\nsummary = \"s\"\n[[hook]]\nid = \"log\"\nsummary = \"s\"\nin = \"f\"\nat = \"start\"\ncode = \"print(1)\"\n";

    fn files(texts: &[&str]) -> (tempfile::TempDir, Vec<PathBuf>) {
        let dir = tempfile::tempdir().unwrap();
        let paths = texts
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let path = dir.path().join(format!("m{i}.py"));
                std::fs::write(&path, text).unwrap();
                path
            })
            .collect();
        (dir, paths)
    }

    #[test]
    fn one_failing_file_writes_none() {
        let recipe = Recipe::from_toml("r.toml", RECIPE).unwrap();
        // The second file defines the target twice: it is targeted and its hook fails.
        let (_dir, paths) = files(&["def f():\n    pass\n", "def f():\n    pass\ndef f():\n    pass\n"]);
        let batch = Batch::run(&recipe, &paths, Op::Apply);
        assert!(batch.files[0].result.is_ok());
        assert!(batch.first_error().is_some());
        assert!(
            !batch.files[1].outcomes.is_empty(),
            "a failed file still says what became of its hooks"
        );
        let err = batch.write().unwrap_err();
        let WriteError::Failed { path, error, failed } = &err else {
            panic!("{err}")
        };
        assert_eq!(path.as_ref(), Some(&paths[1]), "the error names the file that failed");
        assert!(matches!(error.kind(), ErrorKind::Ambiguous { .. }), "{err}");
        assert_eq!(failed, &[paths[1].clone()]);
        assert_eq!(err.error().location().file, paths[1].display().to_string());
        assert!(err.to_string().ends_with("; nothing was written"), "{err}");
        assert_eq!(std::fs::read_to_string(&paths[0]).unwrap(), "def f():\n    pass\n");
    }

    #[test]
    fn apply_then_revert_gives_back_the_bytes() {
        let recipe = Recipe::from_toml("r.toml", RECIPE).unwrap();
        let original = "def f():\n    pass\n";
        let (_dir, paths) = files(&[original, original]);
        let written = Batch::run(&recipe, &paths, Op::Apply).write().unwrap().len();
        assert_eq!(written, 2);
        assert_ne!(std::fs::read_to_string(&paths[1]).unwrap(), original);
        let again = Batch::run(&recipe, &paths, Op::Apply);
        assert!(again.write().unwrap().is_empty(), "nothing left to write");
        Batch::run(&recipe, &paths, Op::Revert).write().unwrap();
        assert_eq!(std::fs::read_to_string(&paths[1]).unwrap(), original);
    }

    #[test]
    fn a_folder_run_targets_only_the_files_that_define_the_target() {
        let recipe = Recipe::from_toml("r.toml", RECIPE).unwrap();
        let (dir, paths) = files(&["def f():\n    pass\n", "def g():\n    pass\n", "x = 'def f'\n"]);
        let batch = Batch::run(&recipe, &[dir.path().to_path_buf()], Op::Apply);
        assert!(batch.first_error().is_none(), "{:?}", batch.first_error());
        assert_eq!(batch.files.len(), 1);
        assert_eq!(batch.files[0].path, paths[0]);
        assert_eq!(batch.not_targeted, [paths[1].clone(), paths[2].clone()]);
        // The file given by name as well as its folder is run once.
        let both = Batch::run(&recipe, &[dir.path().to_path_buf(), paths[0].clone()], Op::Apply);
        assert_eq!(both.files.len(), 1);
        assert_eq!(both.write().unwrap().len(), 1);
        // No file of the folder defines the target: the run fails, naming the folder.
        let other = Recipe::from_toml("r.toml", &RECIPE.replace("in = \"f\"", "in = \"h\"")).unwrap();
        let none = Batch::run(&other, &[dir.path().to_path_buf()], Op::Apply);
        let err = none.first_error().expect("no target anywhere");
        assert!(matches!(err.kind(), ErrorKind::NotInFolder { files: 3, .. }), "{err}");
        assert_eq!(err.location().line, 0);
        let err = none.write().unwrap_err();
        assert!(
            matches!(&err, WriteError::Failed { path: None, error, .. } if matches!(error.kind(), ErrorKind::NotInFolder { .. })),
            "a failure of the whole run names no file: {err}"
        );
        // A mistyped target: the closest definitions of the files scanned are suggested.
        let typo = Recipe::from_toml("r.toml", &RECIPE.replace("in = \"f\"", "in = \"ff\"")).unwrap();
        let batch = Batch::run(&typo, &[dir.path().to_path_buf()], Op::Apply);
        let err = batch.first_error().expect("no target anywhere");
        let ErrorKind::NotInFolder { candidates, .. } = err.kind() else {
            panic!("{err}")
        };
        assert_eq!(candidates.first().map(String::as_str), Some("f"), "{err}");
    }

    #[test]
    fn a_file_where_every_module_level_hook_is_skipped_is_not_targeted() {
        let recipe = Recipe::from_toml(
            "r.toml",
            "[recipe]\nid = \"r\"\nsummary = \"s\"\n[[hook]]\nid = \"h\"\nsummary = \"s\"\nin = \"module\"\noptional = true\nat = { after = \"x = 1\" }\ncode = \"y = 2\"\n",
        )
        .unwrap();
        let (dir, paths) = files(&["x = 1\n", "z = 3\n"]);
        let batch = Batch::run(&recipe, &[dir.path().to_path_buf()], Op::Apply);
        assert_eq!(batch.files.len(), 1);
        assert_eq!(batch.files[0].path, paths[0]);
        assert_eq!(batch.not_targeted, [paths[1].clone()]);
    }

    #[test]
    fn a_hook_skipped_for_its_requirement_is_found_and_fails_nothing() {
        let text = RECIPE.replace("at = \"start\"", "at = \"start\"\nrequires = [\"g\"]");
        let recipe = Recipe::from_toml("r.toml", &text).unwrap();
        let (dir, paths) = files(&["def f():\n    pass\n", "x = 1\n"]);
        let batch = Batch::run(&recipe, &[dir.path().to_path_buf()], Op::Apply);
        assert!(batch.first_error().is_none(), "{:?}", batch.first_error());
        assert!(batch.files.is_empty(), "skipped there on purpose: nothing placed");
        assert_eq!(batch.not_targeted, paths);
    }

    /// A tree `t/zz/m.py` and, beside it, `outside/m.py` with the same text; `swap` runs between
    /// the walk and the first read. Gives the run, the file inside and the one outside.
    #[cfg(unix)]
    fn swapped_between_walk_and_read(swap: fn(&Path, &Path)) -> (tempfile::TempDir, Batch, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let (tree, outside) = (dir.path().join("t"), dir.path().join("outside"));
        std::fs::create_dir_all(tree.join("zz")).unwrap();
        std::fs::create_dir(&outside).unwrap();
        let (inside, precious) = (tree.join("zz/m.py"), outside.join("m.py"));
        std::fs::write(&inside, "def f():\n    pass\n").unwrap();
        std::fs::write(&precious, "def f():\n    pass\n").unwrap();
        let recipe = Recipe::from_toml("r.toml", RECIPE).unwrap();
        let (t, o) = (tree.clone(), outside.clone());
        faults::AFTER_WALK.with(|hook| *hook.borrow_mut() = Some(Box::new(move || swap(&t, &o))));
        let batch = Batch::run(&recipe, &[tree], Op::Apply);
        faults::AFTER_WALK.with(|hook| *hook.borrow_mut() = None);
        (dir, batch, inside, precious)
    }

    #[cfg(unix)]
    #[test]
    fn a_file_swapped_for_a_link_after_the_walk_is_never_read_or_written() {
        let (_dir, batch, inside, precious) = swapped_between_walk_and_read(|tree, outside| {
            let file = tree.join("zz/m.py");
            std::fs::rename(&file, tree.join("zz/m.py.away")).unwrap();
            std::os::unix::fs::symlink(outside.join("m.py"), &file).unwrap();
        });
        let err = batch.first_error().expect("the swap is an error");
        assert!(matches!(err.kind(), ErrorKind::FileReplaced), "{err}");
        assert_eq!(err.location().file, inside.display().to_string());
        assert!(matches!(batch.write(), Err(WriteError::Failed { .. })));
        assert_eq!(std::fs::read_to_string(&precious).unwrap(), "def f():\n    pass\n");
    }

    #[cfg(unix)]
    #[test]
    fn a_folder_swapped_for_a_link_after_the_walk_is_never_read_or_written() {
        let (_dir, batch, inside, precious) = swapped_between_walk_and_read(|tree, outside| {
            std::fs::rename(tree.join("zz"), tree.join(".zz.away")).unwrap();
            std::os::unix::fs::symlink(outside, tree.join("zz")).unwrap();
        });
        let err = batch.first_error().expect("the swap is an error");
        assert!(matches!(err.kind(), ErrorKind::FolderReplaced { .. }), "{err}");
        assert_eq!(err.location().file, inside.display().to_string());
        assert!(matches!(batch.write(), Err(WriteError::Failed { .. })));
        assert_eq!(std::fs::read_to_string(&precious).unwrap(), "def f():\n    pass\n");
    }

    #[cfg(unix)]
    #[test]
    fn a_swap_after_reading_writes_nothing_anywhere() {
        for swap_folder in [false, true] {
            let (dir, batch, inside, precious) = swapped_between_walk_and_read(|_, _| {});
            assert!(batch.first_error().is_none(), "{:?}", batch.first_error());
            let (tree, outside) = (dir.path().join("t"), dir.path().join("outside"));
            if swap_folder {
                std::fs::rename(tree.join("zz"), tree.join(".zz.away")).unwrap();
                std::os::unix::fs::symlink(&outside, tree.join("zz")).unwrap();
            } else {
                std::fs::rename(&inside, tree.join("zz/m.py.away")).unwrap();
                std::os::unix::fs::symlink(&precious, &inside).unwrap();
            }
            let err = Error::from(batch.write().unwrap_err());
            assert!(
                matches!(
                    err.kind(),
                    ErrorKind::FolderReplaced { .. } | ErrorKind::NotRegular { .. }
                ),
                "{err}"
            );
            assert_eq!(std::fs::read_to_string(&precious).unwrap(), "def f():\n    pass\n");
            let moved = if swap_folder { ".zz.away/m.py" } else { "zz/m.py.away" };
            assert_eq!(
                std::fs::read_to_string(tree.join(moved)).unwrap(),
                "def f():\n    pass\n"
            );
        }
    }

    /// Writes `files` (path below the root, text) under a new folder.
    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (rel, text) in files {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    #[test]
    fn exclude_leaves_files_and_folders_out_of_the_run() {
        let imports =
            "[recipe]\nid = \"r\"\nsummary = \"s\"\n[[hook]]\nid = \"i\"\nsummary = \"s\"\nensure-imports = [\"os\"]\n";
        let recipe = Recipe::from_toml("r.toml", imports).unwrap();
        let dir = tree(&[
            ("a.py", "x = 1\n"),
            ("tests/t.py", "y = 1\n"),
            ("sub/conftest.py", "z = 1\n"),
            ("sub/b.py", "w = 1\n"),
        ]);
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(dir.path().join("a.py"), dir.path().join("tests/l.py")).unwrap();
            std::os::unix::fs::symlink(dir.path().join("a.py"), dir.path().join("sub/l.py")).unwrap();
        }
        let options = RunOptions {
            exclude: vec!["tests/**".to_string(), "**/conftest.py".to_string()],
        };
        let batch = Batch::run_with(&recipe, &[dir.path().to_path_buf()], Op::Apply, &options);
        assert!(batch.first_error().is_none(), "{:?}", batch.first_error());
        let run: Vec<&Path> = batch.files.iter().map(|f| f.path.as_path()).collect();
        assert_eq!(run, [dir.path().join("a.py"), dir.path().join("sub/b.py")]);
        assert!(batch.not_targeted.is_empty(), "{:?}", batch.not_targeted);
        #[cfg(unix)]
        {
            let links: Vec<&Path> = batch.not_followed.iter().map(|(link, _)| link.as_path()).collect();
            assert_eq!(
                links,
                [dir.path().join("sub/l.py")],
                "a link in a folder left out is not met"
            );
        }
    }

    #[test]
    fn selectors_see_the_whole_folder_and_exclude_leaves_files_out_of_the_run() {
        let recipe = Recipe::from_toml(
            "r.toml",
            "[recipe]\nid = \"r\"\nsummary = \"s\"\n[select.root]\nhas-method = \"marker\"\n[[hook]]\nid = \"h\"\nsummary = \"s\"\nin = { class = \"root\", method = \"forward\" }\nat = \"start\"\ncode = \"print(1)\"\n",
        )
        .unwrap();
        let dir = tree(&[
            (
                "base.py",
                "class Base:\n    def marker(self):\n        pass\n\n    def forward(self):\n        return 1\n",
            ),
            (
                "model.py",
                "from base import Base\n\n\nclass M(Base):\n    def forward(self):\n        return 2\n",
            ),
            ("other.py", "class N:\n    def forward(self):\n        return 3\n"),
        ]);
        let folder = [dir.path().to_path_buf()];
        let all = Batch::run_with(&recipe, &folder, Op::Apply, &RunOptions::default());
        assert!(all.first_error().is_none(), "{:?}", all.first_error());
        let run: Vec<&Path> = all.files.iter().map(|f| f.path.as_path()).collect();
        assert_eq!(run, [dir.path().join("base.py"), dir.path().join("model.py")]);
        assert_eq!(all.not_targeted, [dir.path().join("other.py")]);
        // The base class's file left out of the run still makes its subclass a root.
        let options = RunOptions {
            exclude: vec!["base.py".to_string()],
        };
        let some = Batch::run_with(&recipe, &folder, Op::Apply, &options);
        assert!(some.first_error().is_none(), "{:?}", some.first_error());
        let run: Vec<&Path> = some.files.iter().map(|f| f.path.as_path()).collect();
        assert_eq!(run, [dir.path().join("model.py")]);
        let patched = some.files[0].result.as_ref().unwrap().output();
        assert!(patched.contains("    def forward(self):\n"), "{patched}");
        assert!(patched.contains("print(1)"), "{patched}");
        assert_eq!(some.not_targeted, [dir.path().join("other.py")]);
    }

    #[test]
    fn a_file_given_twice_is_found() {
        let (dir, paths) = files(&["x = 1\n"]);
        let twice = vec![paths[0].clone(), dir.path().join(".").join("m0.py")];
        assert_eq!(duplicate(&twice), Some(twice[1].as_path()));
        assert_eq!(duplicate(&paths), None);
        let missing = Batch::run(
            &Recipe::from_toml("r.toml", RECIPE).unwrap(),
            &[dir.path().join("no.py")],
            Op::Apply,
        );
        assert!(matches!(
            missing.files[0].result.as_ref().map_err(Error::kind),
            Err(ErrorKind::Io { .. })
        ));
    }
}
