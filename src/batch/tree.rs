//! A folder's `.py` files as one walk met them, read only through the walk's open handles: what a
//! program that reads (and then writes) a folder's files by its own choice uses, so that a file
//! or a sub-folder swapped for a link between the walk and the read is refused, never followed.

use std::path::{Path, PathBuf};

use super::walk::{self, Walked, WalkedFile};
use super::RunOptions;
use crate::error::{Error, ErrorKind};
use crate::files::{path_name, DiskFile};
use crate::location::Location;

/// The `.py` files below a folder, walked once (see [`Tree::walk`]); each is read where the walk
/// met it ([`WalkedFile::read`], [`Tree::read`]).
///
/// ```
/// # #[cfg(unix)] {
/// use pysplice::batch::{RunOptions, Tree};
/// use pysplice::ErrorKind;
///
/// let dir = tempfile::tempdir().unwrap();
/// let (tree, outside) = (dir.path().join("pkg"), dir.path().join("outside.py"));
/// std::fs::create_dir_all(tree.join("sub")).unwrap();
/// std::fs::write(tree.join("sub/m.py"), "x = 1\n").unwrap();
/// std::fs::write(&outside, "secret = 1\n").unwrap();
///
/// let walked = Tree::walk(&tree, &RunOptions::default())?;
/// let names: Vec<&str> = walked.files().iter().map(|f| f.relative()).collect();
/// assert_eq!(names, ["sub/m.py"]);
/// assert_eq!(walked.read("sub/m.py")?.source().text(), "x = 1\n");
///
/// // Swapped for a link to a file outside the tree after the walk: refused, never read.
/// std::fs::rename(tree.join("sub/m.py"), tree.join("sub/m.py.away")).unwrap();
/// std::os::unix::fs::symlink(&outside, tree.join("sub/m.py")).unwrap();
/// let err = walked.read("sub/m.py").unwrap_err();
/// assert!(matches!(err.kind(), ErrorKind::FileReplaced));
/// assert_eq!(err.location().file, tree.join("sub/m.py").display().to_string());
/// # }
/// # Ok::<(), pysplice::Error>(())
/// ```
#[derive(Debug)]
pub struct Tree {
    root: PathBuf,
    walked: Walked,
}

impl Tree {
    /// Walks `root` (a folder; a link given as the root is followed, once, since it was named):
    /// every `.py` file below it, hidden folders, `__pycache__` and the paths
    /// [`RunOptions::exclude`] names left out, symbolic links never followed
    /// ([`Tree::not_followed`]). Every folder is opened relative to its parent's handle, never
    /// through a link, and must be the folder its listing saw; every file is recorded with its
    /// folder's handle and its device and inode, which reading checks again.
    ///
    /// # Errors
    /// [`ErrorKind::Io`] when the folder or a sub-folder cannot be listed, for a symbolic link
    /// loop, a `.py` link that points nowhere, a tree nested more than 256 folders deep;
    /// [`ErrorKind::FolderReplaced`] for a folder swapped (for a link or another folder) while it
    /// is walked.
    pub fn walk(root: &Path, options: &RunOptions) -> Result<Tree, Error> {
        Ok(Tree {
            root: root.to_path_buf(),
            walked: walk::walk(root, &options.exclude)?,
        })
    }

    /// The folder walked, as given.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Every `.py` entry met that is neither a folder nor a link, in path order (FIFOs and other
    /// non-files of that name included: reading refuses them by name).
    #[must_use]
    pub fn files(&self) -> &[WalkedFile] {
        &self.walked.files
    }

    /// The symbolic links met, not followed, with what they point to (when it exists).
    #[must_use]
    pub fn not_followed(&self) -> &[(PathBuf, PathBuf)] {
        &self.walked.links
    }

    /// The file met at `relative` (`/`-separated, below the root), if the walk met one there.
    #[must_use]
    pub fn get(&self, relative: &str) -> Option<&WalkedFile> {
        let files = &self.walked.files;
        files
            .binary_search_by(|f| f.rel.as_str().cmp(relative))
            .ok()
            .map(|at| &files[at])
    }

    /// Folders named `*.py` that the walk went into (for a project scan, which reports them).
    pub(crate) fn py_folders(&self) -> &[PathBuf] {
        &self.walked.py_folders
    }

    /// Reads the file at `relative` where the walk met it ([`WalkedFile::read`]).
    ///
    /// # Errors
    /// Those of [`WalkedFile::read`]; for a name the walk met as a symbolic link,
    /// [`ErrorKind::NotRegular`] (links are not followed); for one it did not meet,
    /// [`ErrorKind::Io`] (not found). Each names the file at its first line.
    pub fn read(&self, relative: &str) -> Result<DiskFile, Error> {
        if let Some(file) = self.get(relative) {
            return file.read();
        }
        let path = self.root.join(relative);
        let at = Location::new(path_name(&path), 1, 1);
        if self.walked.links.iter().any(|(link, _)| *link == path) {
            return Err(ErrorKind::NotRegular {
                what: "a symbolic link (not followed in a folder)".to_string(),
            }
            .at(at));
        }
        let source = std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "not a `.py` file the walk of the folder met",
        );
        Err(ErrorKind::Io {
            action: "cannot read".to_string(),
            source: source.into(),
        }
        .at(at))
    }
}
