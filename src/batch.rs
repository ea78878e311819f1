//! One recipe over several files, as one change: every file is read and patched (or reverted) in
//! memory first ([`Batch::run`]); only when every file succeeded are the changed ones written,
//! all or nothing ([`Batch::write`], through [`crate::files::write_all`]).
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
//! let batch = Batch::run(&recipe, &[a.clone(), b], Op::Apply);
//! assert!(batch.first_error().is_none());
//! assert_eq!(batch.write().expect("every file succeeded")?.len(), 2);
//! assert!(std::fs::read_to_string(&a).unwrap().contains("import os"));
//! # Ok::<(), pysplice::Error>(())
//! ```

use std::path::{Path, PathBuf};

use crate::engine::{apply_reporting, revert, HookOutcome, Patched};
use crate::error::Error;
use crate::files::{write_all, DiskFile};
use crate::spec::Recipe;

/// What a [`Batch`] does to each file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Apply (or update) the recipe.
    Apply,
    /// Remove what the recipe added.
    Revert,
}

/// What the operation made of one file.
#[derive(Debug)]
pub struct FileRun {
    /// The path as given.
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
#[derive(Debug)]
pub struct Batch {
    /// One entry per path, in the order given.
    pub files: Vec<FileRun>,
}

/// The first path of `paths` that names the same file as an earlier one (as given, or once
/// resolved), if any: a batch changes each file once.
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

impl Batch {
    /// Reads every file and runs `op` on it in memory. Nothing is written.
    #[must_use]
    pub fn run(recipe: &Recipe, paths: &[PathBuf], op: Op) -> Batch {
        let files = paths.iter().map(|path| run_one(recipe, path, op)).collect();
        Batch { files }
    }

    /// The first failure, if any file failed.
    #[must_use]
    pub fn first_error(&self) -> Option<&Error> {
        self.files.iter().find_map(|f| f.result.as_ref().err())
    }

    /// The files that succeeded, with their results.
    pub fn successes(&self) -> impl Iterator<Item = (&DiskFile, &Patched)> {
        self.files
            .iter()
            .filter_map(|f| Some((f.file.as_ref()?, f.result.as_ref().ok()?)))
    }

    /// Writes every changed file, all or nothing, and gives the files written; `None` (nothing
    /// written) when a file failed ([`Batch::first_error`] says why).
    ///
    /// # Errors
    ///
    /// Those of [`crate::files::write_all`]: [`Changed`](crate::ErrorKind::Changed),
    /// [`Locked`](crate::ErrorKind::Locked), [`Io`](crate::ErrorKind::Io), ... leave every file as
    /// it was, [`PartialWrite`](crate::ErrorKind::PartialWrite) names the files that were written.
    #[must_use = "a failed write must be reported"]
    pub fn write(&self) -> Option<Result<Vec<&DiskFile>, Error>> {
        if self.first_error().is_some() {
            return None;
        }
        Some(self.write_changed())
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

fn run_one(recipe: &Recipe, path: &Path, op: Op) -> FileRun {
    let file = match DiskFile::read(path) {
        Ok(file) => file,
        Err(err) => {
            return FileRun {
                path: path.to_path_buf(),
                file: None,
                result: Err(err),
                outcomes: Vec::new(),
            }
        }
    };
    let (result, outcomes) = match op {
        Op::Apply => {
            let attempt = apply_reporting(recipe, file.source().clone());
            (attempt.result, attempt.outcomes)
        }
        Op::Revert => {
            let result = revert(recipe, file.source().clone());
            let outcomes = result.as_ref().map(|p| p.outcomes().to_vec()).unwrap_or_default();
            (result, outcomes)
        }
    };
    FileRun {
        path: path.to_path_buf(),
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
        let (_dir, paths) = files(&["def f():\n    pass\n", "def g():\n    pass\n"]);
        let batch = Batch::run(&recipe, &paths, Op::Apply);
        assert!(batch.files[0].result.is_ok());
        assert!(batch.first_error().is_some());
        assert!(
            !batch.files[1].outcomes.is_empty(),
            "a failed file still says what became of its hooks"
        );
        assert!(batch.write().is_none());
        assert_eq!(std::fs::read_to_string(&paths[0]).unwrap(), "def f():\n    pass\n");
    }

    #[test]
    fn apply_then_revert_gives_back_the_bytes() {
        let recipe = Recipe::from_toml("r.toml", RECIPE).unwrap();
        let original = "def f():\n    pass\n";
        let (_dir, paths) = files(&[original, original]);
        let written = Batch::run(&recipe, &paths, Op::Apply).write().unwrap().unwrap().len();
        assert_eq!(written, 2);
        assert_ne!(std::fs::read_to_string(&paths[1]).unwrap(), original);
        let again = Batch::run(&recipe, &paths, Op::Apply);
        assert!(again.write().unwrap().unwrap().is_empty(), "nothing left to write");
        Batch::run(&recipe, &paths, Op::Revert).write().unwrap().unwrap();
        assert_eq!(std::fs::read_to_string(&paths[1]).unwrap(), original);
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
