//! The `.py` files of a folder run: every file below the folder, in a stable order, without
//! following a symbolic link out of the tree or round in a loop.

use std::path::{Path, PathBuf};

use super::glob;
use crate::error::{Error, ErrorKind, Location};

/// How deep a tree may nest: deeper is refused rather than walked (no real package comes near).
const MAX_DEPTH: usize = 256;

/// What a walk found.
#[derive(Debug, Default)]
pub(crate) struct Walked {
    /// Every `.py` entry that is not a folder or a link, with its path below the folder, in
    /// path order. FIFOs and other non-files named `*.py` are in: reading refuses them by name.
    pub(crate) files: Vec<(PathBuf, String)>,
    /// Symbolic links not followed, with what they point to.
    pub(crate) links: Vec<(PathBuf, PathBuf)>,
}

/// Walks `root` (a folder; a link given as the root is followed, since it was named), skipping
/// hidden folders, `__pycache__` and the paths `exclude` names (path globs, as `[recipe] files`).
///
/// # Errors
/// A folder that cannot be listed, a link that points into a loop (to itself, or to a folder
/// that holds it), a `.py` link that points nowhere, a tree deeper than [`MAX_DEPTH`].
pub(crate) fn walk(root: &Path, exclude: &[String]) -> Result<Walked, Error> {
    let mut walked = Walked::default();
    let real_root = std::fs::canonicalize(root).map_err(|err| io_error(root, "cannot read the folder", err))?;
    let mut stack = vec![(root.to_path_buf(), String::new(), 0usize)];
    while let Some((dir, rel_dir, depth)) = stack.pop() {
        if depth > MAX_DEPTH {
            let err = std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("nested more than {MAX_DEPTH} folders deep"),
            );
            return Err(io_error(&dir, "cannot read the folder", err));
        }
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .and_then(|list| list.collect::<Result<Vec<_>, _>>())
            .map_err(|err| io_error(&dir, "cannot read the folder", err))?;
        entries.sort_by_key(std::fs::DirEntry::file_name);
        let mut folders = Vec::new();
        for entry in entries {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = if rel_dir.is_empty() {
                name.clone()
            } else {
                format!("{rel_dir}/{name}")
            };
            if exclude.iter().any(|glob| glob::names_file(glob, &rel, "")) {
                continue;
            }
            let kind = entry.file_type().map_err(|err| io_error(&path, "cannot read", err))?;
            let is_py = name.ends_with(".py");
            if kind.is_symlink() {
                match std::fs::metadata(&path) {
                    Ok(meta) if meta.is_dir() => {
                        let target = std::fs::canonicalize(&path).map_err(|err| io_error(&path, "cannot read", err))?;
                        let here = real_root.join(&rel_dir);
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
            } else if kind.is_dir() {
                if !name.starts_with('.') && name != "__pycache__" {
                    folders.push((path, rel, depth + 1));
                }
            } else if is_py {
                walked.files.push((path, rel));
            }
        }
        // Popped in name order.
        stack.extend(folders.into_iter().rev());
    }
    walked.files.sort_by(|a, b| a.1.cmp(&b.1));
    Ok(walked)
}

/// `ELOOP`: too many levels of symbolic links.
#[cfg(target_os = "linux")]
const ELOOP: i32 = 40;
#[cfg(not(target_os = "linux"))]
const ELOOP: i32 = 62;

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
    .at(Location::whole(path.display().to_string()))
}
