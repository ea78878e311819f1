//! A package read through the handles of a folder walk ([`Project::scan_tree`]): the walk is
//! this module's, the project the layer below.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::{Tree, WalkedFile};
use crate::error::{Error, ErrorKind};
use crate::files::path_name;
use crate::location::Location;
use crate::project::scan::{name_problem, relative};
use crate::project::{FileProblem, Project, ScanOptions};

impl Project {
    /// The project of the `.py` files a folder walk met ([`Tree::walk`]), each read through the
    /// walk's handles ([`WalkedFile::read`]), never by a path resolved again: a
    /// file or a folder swapped for a link since the walk is a problem naming the file
    /// ([`ErrorKind::FileReplaced`], [`ErrorKind::FolderReplaced`]), never read. Module and
    /// package names as [`Project::scan`]. A `.py` entry that is a symbolic link (never
    /// followed) or a folder is a problem too ([`ErrorKind::NotRegular`]), listed by
    /// [`Project::unreadable`] with the files that cannot be read.
    ///
    /// ```
    /// use pysplice::batch::{RunOptions, Tree};
    /// use pysplice::project::{Project, ScanOptions};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// std::fs::write(dir.path().join("a.py"), "class A:\n    pass\n").unwrap();
    /// let tree = Tree::walk(dir.path(), &RunOptions::default())?;
    /// let project = Project::scan_tree(&tree, &ScanOptions::with_package("pkg"));
    /// assert!(project.unreadable().is_empty());
    /// assert_eq!(project.files()[0].module(), "pkg.a");
    /// // What is patched is read where the walk met it, checked to be the file the scan read.
    /// let file = tree.read(project.files()[0].relative_path())?;
    /// assert_eq!(Some(file.source().text()), project.files()[0].text_read());
    /// # Ok::<(), pysplice::Error>(())
    /// ```
    #[must_use]
    pub fn scan_tree(tree: &Tree, options: &ScanOptions) -> Project {
        let dir = tree.root();
        let rel_of = |path: &Path| relative(dir, path);
        let is_py_link = |path: &&PathBuf| path.file_name().is_some_and(|n| n.to_string_lossy().ends_with(".py"));
        let mut met: Vec<(PathBuf, String, Met<'_>)> = tree
            .files()
            .iter()
            .map(|f| (f.path().to_path_buf(), f.relative().to_string(), Met::File(f)))
            .chain(
                tree.py_folders()
                    .iter()
                    .map(|p| (p.clone(), rel_of(p), Met::Other("a directory"))),
            )
            .chain(
                tree.not_followed()
                    .iter()
                    .map(|(link, _)| link)
                    .filter(is_py_link)
                    .map(|p| {
                        (
                            p.clone(),
                            rel_of(p),
                            Met::Other("a symbolic link (not followed in a folder)"),
                        )
                    }),
            )
            .collect();
        met.sort_by(|a, b| a.0.cmp(&b.0));
        let read: Vec<Result<String, (FileProblem, Error)>> = met
            .par_iter()
            .map(|(path, rel, met)| {
                let fail = |err: Error| (FileProblem::new(rel, &err), err);
                if let Some(err) = name_problem(dir, path) {
                    return Err(fail(err));
                }
                match met {
                    Met::File(file) => file.read().map(|f| f.source().text().to_string()).map_err(fail),
                    Met::Other(what) => Err(fail(
                        ErrorKind::NotRegular {
                            what: (*what).to_string(),
                        }
                        .at(Location::new(path_name(path), 1, 1)),
                    )),
                }
            })
            .collect();
        let paths = met.into_iter().map(|(path, rel, _)| (path, rel)).collect();
        Project::build(dir, options, paths, read, Vec::new())
    }
}

/// What a walk met at a `.py` name.
enum Met<'t> {
    /// A file (or a FIFO, a device: reading refuses those).
    File(&'t WalkedFile),
    /// What is never read: a folder, a link.
    Other(&'static str),
}
