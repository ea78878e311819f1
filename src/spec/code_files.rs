//! Where a recipe's code files come from (`code-from`): the library works on text in memory, so
//! reading is the caller's, through [`CodeFiles`]; [`CodeFolder`] reads them from the recipe's
//! folder on disk, never from outside it.

use std::path::{Path, PathBuf};

use crate::error::Error;

/// The Python files a recipe's `code-from` entries name, by their path relative to the recipe's
/// folder. The library checks every path before it asks: never absolute, never leading out of
/// the folder through `..` ([`crate::CodeFromProblem`]); an implementation that follows links
/// refuses one that leads out ([`CodeFileError::OutsideFolder`]).
///
/// [`CodeFolder`] reads a folder on disk; a map of paths to texts serves files held in memory.
pub trait CodeFiles {
    /// The bytes of the file at `path` (`/`-separated, relative to the recipe's folder).
    ///
    /// # Errors
    /// Why the file cannot be given: it leads out of the folder, or reading it failed.
    fn read(&self, path: &str) -> Result<Vec<u8>, CodeFileError>;
}

/// Why a code file cannot be given ([`CodeFiles::read`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodeFileError {
    /// The path leads out of the folder (a symbolic link pointing elsewhere): refused, not read.
    #[error("the path leads out of the recipe's folder")]
    OutsideFolder,
    /// Reading failed (no such file, no permission, ...).
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// pysplice's reading refused or failed ([`crate::files::read_bytes`]: a directory, a FIFO,
    /// a file over the size limit, ...).
    #[error(transparent)]
    Read(#[from] Error),
}

/// The code files of a recipe in a folder on disk (the recipe's own folder): each read as a
/// regular file within the size limit ([`crate::files::read_bytes`]), after its path, with every
/// symbolic link resolved, is found to lie inside the folder (its own path resolved too).
///
/// ```no_run
/// use pysplice::{CodeFolder, Recipe};
///
/// let text = std::fs::read_to_string("recipes/trace.toml")?;
/// let recipe = Recipe::from_toml_with("recipes/trace.toml", &text, &CodeFolder::new("recipes"))?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeFolder {
    folder: PathBuf,
}

impl CodeFolder {
    /// The code files of the folder `folder` (an empty path is the current folder).
    #[must_use]
    pub fn new(folder: impl Into<PathBuf>) -> CodeFolder {
        CodeFolder { folder: folder.into() }
    }

    /// The folder of the recipe file `recipe` (its parent; the current folder for a bare name).
    #[must_use]
    pub fn of_recipe(recipe: &Path) -> CodeFolder {
        CodeFolder::new(recipe.parent().unwrap_or_else(|| Path::new("")))
    }
}

impl CodeFiles for CodeFolder {
    fn read(&self, path: &str) -> Result<Vec<u8>, CodeFileError> {
        let folder = if self.folder.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &self.folder
        };
        let root = folder.canonicalize()?;
        let resolved = root.join(path).canonicalize()?;
        if !resolved.starts_with(&root) {
            return Err(CodeFileError::OutsideFolder);
        }
        Ok(crate::files::read_bytes(&resolved)?)
    }
}

/// Files held in memory: `path` -> text.
impl<K, V> CodeFiles for std::collections::BTreeMap<K, V>
where
    K: std::borrow::Borrow<str> + Ord,
    V: AsRef<str>,
{
    fn read(&self, path: &str) -> Result<Vec<u8>, CodeFileError> {
        match self.get(path) {
            Some(text) => Ok(text.as_ref().as_bytes().to_vec()),
            None => Err(std::io::Error::from(std::io::ErrorKind::NotFound).into()),
        }
    }
}
