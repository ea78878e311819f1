//! Reading a folder: the `.py` files under it (in parallel, nothing parsed), their module names
//! and the package the folder is.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rayon::prelude::*;

use super::{Conventions, FileProblem, Project, ProjectFile, ScanOptions};
use crate::error::{Error, ErrorKind};
use crate::location::Location;
use crate::source::SourceFile;
use crate::syntax::is_identifier;

impl Project {
    /// Scans `dir` for `.py` files (recursively, skipping hidden folders and `__pycache__`) and
    /// reads them in parallel; nothing is parsed yet.
    ///
    /// Module names are dotted paths relative to the directory's parent, so scanning
    /// `.../app` names `app/models/llama.py` `app.models.llama`. The
    /// package name of the directory is its folder name, extended upwards through parents with an
    /// `__init__.py`, and further when the files' own absolute imports show a longer dotted name
    /// ending in it (scanning `.../app/models`, whose files say
    /// `from app.models.llama import ...`, gives `app.models`). A directory
    /// with no `.py` file of its own is a source root: module names start below it.
    ///
    /// # Errors
    /// [`ErrorKind::Io`] when `dir` is not a readable directory. Unreadable files are not errors:
    /// they are listed by [`Project::problems`] and, typed, by [`Project::unreadable`] (every
    /// entry named `*.py` that is not a folder is taken in, so a FIFO or a dangling link of that
    /// name is listed there rather than passed over; so is a sub-folder that cannot be listed).
    pub fn scan(dir: &Path) -> Result<Project, Error> {
        Project::scan_with(dir, &ScanOptions::default())
    }

    /// [`Project::scan`] with options.
    ///
    /// # Errors
    /// [`ErrorKind::Io`] when `dir` is not a readable directory.
    pub fn scan_with(dir: &Path, options: &ScanOptions) -> Result<Project, Error> {
        let io = |source: std::io::Error| {
            ErrorKind::Io {
                action: "cannot read the directory".into(),
                source: source.into(),
            }
            .at(Location::whole(dir.display().to_string()))
        };
        let meta = std::fs::metadata(dir).map_err(io)?;
        if !meta.is_dir() {
            return Err(io(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not a directory",
            )));
        }
        let mut paths = Vec::new();
        let mut unlisted = Vec::new();
        walk(dir, dir, &mut paths, &mut unlisted).map_err(io)?;
        paths.sort();
        unlisted.sort_by(|a: &(FileProblem, Error), b| a.0.location.file.cmp(&b.0.location.file));
        let read: Vec<Result<String, (FileProblem, Error)>> =
            paths.par_iter().map(|(path, rel)| read_text(dir, path, rel)).collect();
        Ok(Project::build(dir, options, paths, read, unlisted))
    }

    /// The project of the files at `paths` (with their relative names), as `read`.
    pub(crate) fn build(
        dir: &Path,
        options: &ScanOptions,
        paths: Vec<(PathBuf, String)>,
        read: Vec<Result<String, (FileProblem, Error)>>,
        unlisted: Vec<(FileProblem, Error)>,
    ) -> Project {
        let (texts, errors): (Vec<_>, Vec<_>) = read
            .into_iter()
            .map(|r| match r {
                Ok(text) => (Ok(text), None),
                Err((problem, err)) => (Err(problem), Some(err)),
            })
            .unzip();
        let own_py = paths.iter().any(|(_, rel)| !rel.contains('/'));
        let package = match &options.package {
            Some(p) => p.clone(),
            None if own_py => infer_package(dir, &texts),
            None => String::new(),
        };
        let mut files = Vec::with_capacity(paths.len());
        let mut modules = HashMap::new();
        let mut namespaces = HashSet::new();
        for (((path, rel), text), read_error) in paths.into_iter().zip(texts).zip(errors) {
            let (module, is_package) = module_name(&package, &rel);
            let mut parent = module.as_str();
            while let Some((up, _)) = parent.rsplit_once('.') {
                namespaces.insert(up.to_string());
                parent = up;
            }
            if !module.is_empty() {
                namespaces.insert(module.split('.').next().unwrap_or_default().to_string());
            }
            // A package's __init__ wins over a same-named module file only by coming later.
            modules.insert(module.clone(), files.len());
            files.push(ProjectFile {
                path,
                rel,
                module,
                is_package,
                text,
                read_error,
                facts: OnceLock::new(),
            });
        }
        Project {
            root: dir.to_path_buf(),
            package,
            files,
            modules,
            namespaces,
            conventions: options.conventions.clone(),
            unlisted,
        }
    }

    /// A project of in-memory files: `(relative path, text)` pairs under package `package`
    /// (empty for a source root), without conventions.
    #[must_use]
    pub fn from_sources(package: &str, sources: Vec<(String, String)>) -> Project {
        Project::from_sources_with(package, sources, Conventions::default())
    }

    /// [`Project::from_sources`] with the code base's conventions. What selection on a single
    /// file uses.
    #[must_use]
    pub fn from_sources_with(package: &str, sources: Vec<(String, String)>, conventions: Conventions) -> Project {
        let mut files = Vec::with_capacity(sources.len());
        let mut modules = HashMap::new();
        let mut namespaces = HashSet::new();
        for (rel, text) in sources {
            let (module, is_package) = module_name(package, &rel);
            let mut parent = module.as_str();
            while let Some((up, _)) = parent.rsplit_once('.') {
                namespaces.insert(up.to_string());
                parent = up;
            }
            modules.insert(module.clone(), files.len());
            files.push(ProjectFile {
                path: PathBuf::from(&rel),
                rel,
                module,
                is_package,
                text: Ok(text),
                read_error: None,
                facts: OnceLock::new(),
            });
        }
        Project {
            root: PathBuf::new(),
            package: package.to_string(),
            files,
            modules,
            namespaces,
            conventions,
            unlisted: Vec::new(),
        }
    }
}

/// Collects the `.py` entries under `dir`: every entry named so that is not a folder (regular
/// files, links, and also FIFOs, devices or sockets, which the reader then refuses with a
/// problem instead of the scan passing over them silently), and a folder named `x.py` too (not a
/// module Python imports, but a name that says it should be one). Folders that cannot be listed
/// go to `unlisted`.
fn walk(
    root: &Path,
    dir: &Path,
    out: &mut Vec<(PathBuf, String)>,
    unlisted: &mut Vec<(FileProblem, Error)>,
) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let Ok(entry) = entry else { continue };
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Ok(kind) = entry.file_type() else { continue };
        let path = entry.path();
        let rel = || {
            path.strip_prefix(root)
                .map(|p| {
                    p.components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned())
                        .collect::<Vec<_>>()
                        .join("/")
                })
                .unwrap_or_else(|_| name.to_string())
        };
        if name.ends_with(".py") {
            out.push((path.clone(), rel()));
        } else if kind.is_dir() {
            if name.starts_with('.') || name == "__pycache__" {
                continue;
            }
            // A sub-folder that cannot be listed is a problem of the scan, not its end.
            if let Err(source) = walk(root, &path, out, unlisted) {
                let err = ErrorKind::Io {
                    action: "cannot read the directory".into(),
                    source: source.into(),
                }
                .at(Location::whole(path.display().to_string()));
                unlisted.push((FileProblem::new(&rel(), &err), err));
            }
        }
    }
    Ok(())
}

/// `path` below `root`, `/`-separated.
pub(crate) fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).map_or_else(
        |_| path.to_string_lossy().into_owned(),
        |p| {
            p.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/")
        },
    )
}

/// The error of a file whose name below `root` is not UTF-8: its module name would not be its
/// name; not a module anyone imports, but not a file to pass over either (it may be patched).
pub(crate) fn name_problem(root: &Path, path: &Path) -> Option<Error> {
    if path.strip_prefix(root).ok().and_then(Path::to_str).is_some() {
        return None;
    }
    let source = std::io::Error::new(std::io::ErrorKind::InvalidData, "the file name is not UTF-8");
    Some(
        ErrorKind::Io {
            action: "cannot read".into(),
            source: source.into(),
        }
        .at(Location::whole(path.display().to_string())),
    )
}

fn read_text(root: &Path, path: &Path, rel: &str) -> Result<String, (FileProblem, Error)> {
    let fail = |err: Error| (FileProblem::new(rel, &err), err);
    if let Some(err) = name_problem(root, path) {
        return Err(fail(err));
    }
    // Regular files only, within the size limit: a FIFO or device named `x.py` is reported, not read.
    let bytes = crate::files::read_bytes(path).map_err(fail)?;
    SourceFile::from_bytes(path.display().to_string(), bytes)
        .map(|s| s.text().to_string())
        .map_err(fail)
}

/// `(module, is_package)` of a file at `rel` (relative, `/`-separated) under package `package`.
fn module_name(package: &str, rel: &str) -> (String, bool) {
    let stem = rel.strip_suffix(".py").unwrap_or(rel);
    let mut parts: Vec<&str> = if package.is_empty() { Vec::new() } else { vec![package] };
    parts.extend(stem.split('/'));
    let is_package = parts.last() == Some(&"__init__");
    if is_package {
        parts.pop();
    }
    (parts.join("."), is_package)
}

/// The package name of `dir` (see [`Project::scan`]).
fn infer_package(dir: &Path, texts: &[Result<String, FileProblem>]) -> String {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let name_of = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
    let Some(own) = name_of(&dir).filter(|n| is_identifier(n)) else {
        return String::new();
    };
    let mut parts = vec![own];
    let mut up = dir.parent();
    while let Some(p) = up {
        match name_of(p) {
            Some(n) if is_identifier(&n) && p.join("__init__.py").is_file() => parts.insert(0, n),
            _ => break,
        }
        up = p.parent();
    }
    let mut best = parts.join(".");
    // Longer names suggested by the files' own absolute imports.
    let mut candidate = parts.clone();
    for _ in 0..6 {
        let Some(p) = up else { break };
        let Some(n) = name_of(p).filter(|n| is_identifier(n)) else {
            break;
        };
        candidate.insert(0, n);
        let dotted = candidate.join(".");
        let needles = [
            format!("from {dotted}."),
            format!("import {dotted}."),
            format!("from {dotted} import"),
        ];
        if texts
            .iter()
            .flatten()
            .any(|t| needles.iter().any(|needle| t.contains(needle.as_str())))
        {
            best = dotted;
        }
        up = p.parent();
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_names_follow_the_package() {
        assert_eq!(module_name("pkg", "a/b.py"), ("pkg.a.b".into(), false));
        assert_eq!(module_name("pkg", "a/__init__.py"), ("pkg.a".into(), true));
        assert_eq!(module_name("pkg", "__init__.py"), ("pkg".into(), true));
        assert_eq!(module_name("", "x/y.py"), ("x.y".into(), false));
    }
}
