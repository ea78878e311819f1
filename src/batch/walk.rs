//! The `.py` files of a folder run: every file below the folder, in a stable order, without
//! following a symbolic link out of the tree or round in a loop.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::glob;
use crate::error::{Error, ErrorKind};
use crate::files::{path_name, DiskFile, Folder, Spot};
use crate::location::Location;

/// How deep a tree may nest: deeper is refused rather than walked (no real package comes near).
const MAX_DEPTH: usize = 256;

/// A `.py` file a walk met: its names, and where it is (the open folder, its name there, the
/// device and inode seen), the only way it is read ([`WalkedFile::read`]).
#[derive(Clone, Debug)]
pub struct WalkedFile {
    /// Its path: the folder given, joined with the names below it.
    pub(crate) path: PathBuf,
    /// Its path below the folder given, `/`-separated (for globs and module names).
    pub(crate) rel: String,
    /// Where it is: the only way it is read and written.
    pub(crate) spot: Spot,
}

/// What a walk found.
#[derive(Debug, Default)]
pub(crate) struct Walked {
    /// Every `.py` entry that is not a folder or a link, in path order. FIFOs and other
    /// non-files named `*.py` are in: reading refuses them by name.
    pub(crate) files: Vec<WalkedFile>,
    /// Symbolic links not followed, with what they point to.
    pub(crate) links: Vec<(PathBuf, PathBuf)>,
    /// Folders named `*.py` (walked as folders): no module Python imports, but a name that says
    /// it should be one, which a project scan reports.
    pub(crate) py_folders: Vec<PathBuf>,
}

impl WalkedFile {
    /// Its path: the folder walked joined with the names below it (for messages; never opened).
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its path below the folder walked, `/`-separated (a name that is not UTF-8 shows U+FFFD
    /// here; [`WalkedFile::path`] has its bytes).
    #[must_use]
    pub fn relative(&self) -> &str {
        &self.rel
    }

    /// Reads the file where the walk met it: relative to its folder's open handle, never
    /// through a link (`O_NOFOLLOW`), only when the name still names the file walked (same
    /// device and inode) in a folder still in its place. Writing the [`DiskFile`] keeps to
    /// that same handle.
    ///
    /// # Errors
    /// [`ErrorKind::FileReplaced`] (at the file) when the name now names a link, another file
    /// or nothing; [`ErrorKind::FolderReplaced`] when its folder was moved or swapped for a
    /// link; then those of [`DiskFile::read`] ([`ErrorKind::NotRegular`],
    /// [`ErrorKind::TooLarge`], [`ErrorKind::NotUtf8`], [`ErrorKind::Io`]).
    pub fn read(&self) -> Result<DiskFile, Error> {
        DiskFile::read_in(&self.spot, &self.path)
    }
}

/// Walks `root` (a folder; a link given as the root is followed, once, since it was named),
/// skipping hidden folders, `__pycache__` and the paths `exclude` names (path globs, as
/// `[recipe] files`).
///
/// Every folder below the root is opened relative to its parent's handle, never through a link
/// (`O_NOFOLLOW|O_DIRECTORY`), and must be the folder the listing saw (device and inode); each
/// file is recorded with its folder's handle and the device and inode seen, so that reading it
/// later ([`crate::files::DiskFile::read_in`]) never resolves a path again.
///
/// # Errors
/// A folder that cannot be listed, a folder replaced (by a link or another folder) while it is
/// walked ([`ErrorKind::FolderReplaced`]), a link that points into a loop (to itself, or to a
/// folder that holds it), a `.py` link that points nowhere, a tree deeper than [`MAX_DEPTH`].
pub(crate) fn walk(root: &Path, exclude: &[String]) -> Result<Walked, Error> {
    let mut walked = Walked::default();
    let real_root = std::fs::canonicalize(root).map_err(|err| io_error(root, "cannot read the folder", err))?;
    let top = Folder::open(&real_root).map_err(|err| io_error(root, "cannot read the folder", err))?;
    let mut stack = vec![(Arc::new(top), root.to_path_buf(), String::new(), 0usize)];
    while let Some((folder, dir, rel_dir, depth)) = stack.pop() {
        if depth > MAX_DEPTH {
            let err = std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("nested more than {MAX_DEPTH} folders deep"),
            );
            return Err(io_error(&dir, "cannot read the folder", err));
        }
        let mut names: Vec<OsString> = folder
            .names()
            .map_err(|err| io_error(&dir, "cannot read the folder", err))?;
        names.sort();
        let mut folders = Vec::new();
        for name in names {
            let path = dir.join(&name);
            let text = name.to_string_lossy();
            let rel = if rel_dir.is_empty() {
                text.to_string()
            } else {
                format!("{rel_dir}/{text}")
            };
            if named(exclude, &rel) {
                continue;
            }
            let entry = folder.entry(&name).map_err(|err| io_error(&path, "cannot read", err))?;
            let is_py = text.ends_with(".py");
            if entry.link {
                link(&mut walked, path, &real_root.join(&rel_dir), is_py)?;
            } else if entry.dir {
                if text.starts_with('.') || text == "__pycache__" {
                    continue;
                }
                if is_py {
                    walked.py_folders.push(path.clone());
                }
                let replaced = || {
                    ErrorKind::FolderReplaced {
                        folder: path_name(&path),
                    }
                    .at(Location::whole(path_name(&path)))
                };
                let child = match Folder::open_child(&folder, &name) {
                    Ok(child) => child,
                    // A link or a file in its place since it was listed.
                    Err(err) if err.raw_os_error().is_some_and(|c| c == ELOOP || c == ENOTDIR) => {
                        return Err(replaced())
                    }
                    Err(err) => return Err(io_error(&path, "cannot read the folder", err)),
                };
                if !child.identity().is_ok_and(|id| id == entry.identity) {
                    return Err(replaced());
                }
                folders.push((Arc::new(child), path, rel, depth + 1));
            } else if is_py {
                let spot = Spot {
                    folder: Arc::clone(&folder),
                    name,
                    identity: entry.identity,
                };
                walked.files.push(WalkedFile { path, rel, spot });
            }
        }
        // Popped in name order.
        stack.extend(folders.into_iter().rev());
    }
    walked.files.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(walked)
}

/// Whether a glob of `exclude` names the entry at `rel`: a walk leaves it out (a folder with
/// everything below it).
fn named(exclude: &[String], rel: &str) -> bool {
    exclude.iter().any(|glob| glob::names_file(glob, rel, ""))
}

/// Whether a walk with `exclude` leaves out the entry at `rel` (`/`-separated, below the
/// folder walked): a glob names it or a folder above it. What a walk of the whole folder met,
/// less these, is what a walk with `exclude` meets.
pub(crate) fn left_out(rel: &str, exclude: &[String]) -> bool {
    let folders = rel.match_indices('/').map(|(at, _)| &rel[..at]);
    !exclude.is_empty() && folders.chain([rel]).any(|part| named(exclude, part))
}

/// `path` (below a folder walked) as a walk names it: `/`-separated, each name as shown.
pub(crate) fn relative(path: &Path) -> String {
    let names: Vec<_> = path.iter().map(|name| name.to_string_lossy()).collect();
    names.join("/")
}

/// A symbolic link met in the walk, at `path` in the folder `here` (its resolved path): never
/// followed; noted with what it points to (a folder, or a `.py` file), or a loop that fails the
/// run. Only its target's metadata is looked at, for the note.
fn link(walked: &mut Walked, path: PathBuf, here: &Path, is_py: bool) -> Result<(), Error> {
    match std::fs::metadata(&path) {
        Ok(meta) if meta.is_dir() => {
            let target = std::fs::canonicalize(&path).map_err(|err| io_error(&path, "cannot read", err))?;
            if here.starts_with(&target) {
                return Err(loop_error(&path, Some(&target)));
            }
            walked.links.push((path, target));
        }
        Ok(_) if is_py => {
            let target = std::fs::canonicalize(&path).unwrap_or_default();
            walked.links.push((path, target));
        }
        Ok(_) => {}
        Err(err) if err.raw_os_error() == Some(ELOOP) => return Err(loop_error(&path, None)),
        Err(err) if is_py => return Err(io_error(&path, "cannot read the link", err)),
        Err(_) => {}
    }
    Ok(())
}

/// `ELOOP` (too many levels of symbolic links: `O_NOFOLLOW` met a link) and `ENOTDIR`.
#[cfg(unix)]
const ELOOP: i32 = libc::ELOOP;
#[cfg(unix)]
const ENOTDIR: i32 = libc::ENOTDIR;
#[cfg(not(unix))]
const ELOOP: i32 = i32::MIN;
#[cfg(not(unix))]
const ENOTDIR: i32 = i32::MIN;

fn loop_error(link: &Path, target: Option<&Path>) -> Error {
    let message = match target {
        Some(target) => format!(
            "a symbolic link loop: it points to {}, which holds it",
            target.display()
        ),
        None => "a symbolic link loop: the link leads back to itself".to_string(),
    };
    io_error(
        link,
        "cannot read",
        std::io::Error::new(std::io::ErrorKind::InvalidInput, message),
    )
}

fn io_error(path: &Path, action: &str, source: std::io::Error) -> Error {
    ErrorKind::Io {
        action: action.to_string(),
        source: source.into(),
    }
    .at(Location::whole(path_name(path)))
}
