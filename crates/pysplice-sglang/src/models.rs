//! The hidden-state dump for every SGLang architecture with EAGLE-3 aux capture: running the
//! recipe [`crate::recipes::models_recipe`] on a whole `sglang/srt/models` folder, all files or
//! none ([`patch`], [`write_all`]).
//!
//! Architectures are the classes SGLang serves (`EntryClass` items, the names `config.json`
//! lists under `architectures`) that define or inherit `set_eagle3_layers_to_capture`. Each gets
//! the files its hooks land in: its own `__init__` (capture), and the `__init__` and `forward`
//! that run for the model it holds (init, dump), which may be defined in another file.

use std::path::{Path, PathBuf};

use pysplice::batch::{RunOptions, Tree};
use pysplice::files::DiskFile;
use pysplice::project::select::{self, RootChoices};
use pysplice::project::{Project, ScanOptions};
use pysplice::{apply, revert, Conventions, Error, ErrorKind, Location, Patched, Recipe, SelectionReason};

/// SGLang's conventions for the project layer, as the bundled models recipe declares them in
/// `[conventions]`: model files list the classes they serve in `EntryClass`
/// (`EntryClass = [DeepseekV2ForCausalLM, DeepseekV3ForCausalLM]`), and speculative-decoding
/// draft models (Eagle, NextN, MTP, Medusa, DFlash) are never architectures of their own.
///
/// ```
/// let conventions = pysplice_sglang::models::conventions();
/// assert!(conventions.is_draft("DeepseekV3ForCausalLMNextN"));
/// assert_eq!(conventions.entry_list.as_deref(), Some("EntryClass"));
/// ```
#[must_use]
pub fn conventions() -> Conventions {
    // The bundled recipe compiles (a test says so); none if it ever did not.
    Recipe::from_bundled_toml_with(
        "python/pysplice_sglang/dump/sglang_hs_dump_models.toml",
        crate::recipes::SGLANG_HS_DUMP_MODELS,
        &crate::recipes::dump_code(),
    )
    .map(|recipe| recipe.conventions)
    .unwrap_or_default()
}

/// The `sglang/srt/models` folder for a path: a file's folder, or a folder holding it (an
/// SGLang checkout, site-packages, the `sglang` package, the models folder itself).
#[must_use]
pub fn models_dir(path: &Path) -> Option<PathBuf> {
    if path.is_file() {
        return path.parent().map(Path::to_path_buf);
    }
    let tails = ["sglang/srt/models", "python/sglang/srt/models", "srt/models", "models"];
    tails
        .iter()
        .map(|tail| path.join(tail))
        .find(|dir| dir.is_dir())
        .or_else(|| {
            let has_py = std::fs::read_dir(path)
                .ok()?
                .filter_map(Result::ok)
                .any(|e| e.path().extension().is_some_and(|x| x == "py"));
            has_py.then(|| path.to_path_buf())
        })
}

/// The longest architecture name `config.json` may list: 128 bytes. The names are Python class
/// names (`DeepseekV3ForCausalLM`, 21 bytes; SGLang's longest is under 50).
pub const MAX_ARCHITECTURE_NAME: usize = 128;

/// The `architectures` a Hugging Face model folder's `config.json` lists.
///
/// # Errors
/// The reader's error ([`ErrorKind::Io`], [`ErrorKind::NotRegular`], [`ErrorKind::TooLarge`],
/// [`ErrorKind::NotUtf8`]) when the file cannot be read; [`ErrorKind::Selection`] at the place
/// where it is not JSON, at its first line when it lists no architecture, and at the name for
/// one that is not a Python name of at most [`MAX_ARCHITECTURE_NAME`] bytes (the message shows
/// a short escaped start of it).
pub fn architectures(model_dir: &Path) -> Result<Vec<String>, Error> {
    let path = if model_dir.is_dir() {
        model_dir.join("config.json")
    } else {
        model_dir.to_path_buf()
    };
    let name = path.display().to_string();
    let refuse = |message: String, line: usize, column: usize| {
        ErrorKind::Selection {
            reason: SelectionReason::Catalogue(message),
        }
        .at(Location::new(name.clone(), line.max(1), column.max(1)))
    };
    // The checked reader: config.json comes from a model download, it may be anything.
    let text = pysplice::files::read_text(&path)?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|err| refuse(format!("not JSON: {err}"), err.line(), err.column()))?;
    let names: Vec<String> = value
        .get("architectures")
        .and_then(|a| a.as_array())
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    if names.is_empty() {
        return Err(refuse("no `architectures` list of names".into(), 1, 1));
    }
    if let Some(bad) = names
        .iter()
        .find(|n| n.len() > MAX_ARCHITECTURE_NAME || !pysplice::is_identifier(n))
    {
        let at = pysplice::SourceFile::new(name.clone(), text.as_str()).location(name_offset(&text, bad));
        let why = if bad.len() > MAX_ARCHITECTURE_NAME {
            format!("{} bytes, more than the limit of {MAX_ARCHITECTURE_NAME}", bad.len())
        } else {
            "not a Python class name".to_string()
        };
        let message = format!("architecture `{}` is {why}", pysplice::report::shown(bad));
        return Err(refuse(message, at.line, at.column));
    }
    Ok(names)
}

/// Where `value` is written as a JSON string in `text`, after the `architectures` key: the
/// offset of its opening quote (of the key when the string is written with escapes).
fn name_offset(text: &str, value: &str) -> usize {
    let key = text.find("\"architectures\"").unwrap_or(0);
    let quoted = serde_json::to_string(value).unwrap_or_default();
    text[key..].find(&quoted).map_or(key, |at| key + at)
}

/// What to do with each file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Apply (or update) the recipe.
    Apply,
    /// Remove it.
    Revert,
}

/// One file of a run, read and patched in memory.
#[derive(Debug)]
pub struct FilePatch {
    /// The file as read.
    pub file: DiskFile,
    /// Its path relative to the models folder.
    pub relative: String,
    /// The result.
    pub patched: Patched,
}

/// Test hooks: what runs between the steps of a run on a models folder, to swap its files
/// deterministically.
#[cfg(test)]
pub(crate) mod faults {
    use std::cell::RefCell;

    /// What a hook holds: the code to run, if any.
    pub(crate) type Hook = RefCell<Option<Box<dyn Fn()>>>;
    /// A hook of this thread.
    pub(crate) type At = &'static std::thread::LocalKey<Hook>;

    thread_local! {
        /// Runs after the folder is walked, before any file is read.
        pub(crate) static AFTER_WALK: Hook = RefCell::new(None);
        /// Runs after the files are scanned and selected from, before the files to patch are read.
        pub(crate) static AFTER_SCAN: Hook = RefCell::new(None);
    }

    /// Runs the hook `at` holds, if any.
    pub(crate) fn run(at: At) {
        at.with(|hook| {
            if let Some(hook) = hook.borrow().as_ref() {
                hook();
            }
        });
    }
}

/// `models_dir` walked once, and its project read through the walk's handles: every file is
/// read (for the selection, and again to be patched) where that walk met it, so that a file or a
/// sub-folder swapped for a link meanwhile is an error naming the file and nothing outside the
/// folder is ever read; a `.py` entry that is a link is an error too (never followed).
///
/// # Errors
/// Those of [`Tree::walk`]; the first of [`Project::unreadable`].
fn load(recipe: &Recipe, models_dir: &Path) -> Result<(Tree, Project), Error> {
    let tree = Tree::walk(models_dir, &RunOptions::default())?;
    #[cfg(test)]
    faults::run(&faults::AFTER_WALK);
    let options = ScanOptions::default().with_conventions(recipe.conventions.clone());
    let project = Project::scan_tree(&tree, &options);
    if let Some(err) = project.unreadable().first() {
        return Err((*err).clone());
    }
    Ok((tree, project))
}

/// Reads the file at `rel` of a [`load`]ed folder to patch it: where the walk met it, holding
/// the text the selection was made from (otherwise [`ErrorKind::Changed`], naming it).
fn read_to_patch(tree: &Tree, project: &Project, rel: &str) -> Result<DiskFile, Error> {
    let disk = tree.read(rel)?;
    let scanned = project
        .files()
        .iter()
        .find(|p| p.relative_path() == rel)
        .and_then(|p| p.text_read());
    if scanned.is_some_and(|text| text != disk.source().text()) {
        return Err(ErrorKind::Changed.at(Location::new(disk.source().name(), 1, 1)));
    }
    Ok(disk)
}

/// Selects the architectures in `models_dir` and patches (or reverts) in memory every file that
/// `wanted` needs (`None`: every architecture; reverting every architecture also takes in every
/// other file that carries the recipe's markers). Nothing is written.
///
/// Every `.py` file of the folder must be readable: one that is not may define a class an
/// architecture needs or carry the recipe's markers, so it is an error naming it, never a file
/// passed over (which would skip architectures for a wrong reason, or leave a file patched after
/// a revert that reports success). Files are read only where one walk of the folder met them
/// ([`pysplice::batch::Tree`]): never through a symbolic link, never outside the folder.
///
/// # Errors
/// [`ErrorKind::Io`] when the folder, a sub-folder or a file cannot be read (also
/// [`ErrorKind::NotRegular`], [`ErrorKind::TooLarge`], [`ErrorKind::NotUtf8`] for a file, a `.py`
/// link or folder); [`ErrorKind::FileReplaced`] or [`ErrorKind::FolderReplaced`], naming the
/// file, for a file or a folder swapped (for a link, another file) since the walk;
/// [`ErrorKind::Selection`] for an architecture that is unknown or cannot be patched; the first
/// file's error (with its path) when a hook cannot be placed or the markers were edited.
pub fn patch(
    recipe: &Recipe,
    models_dir: &Path,
    wanted: Option<&[String]>,
    mode: Mode,
) -> Result<(RootChoices, Vec<FilePatch>), Error> {
    let (tree, project) = load(recipe, models_dir)?;
    let selection = select::choose_roots(&project, recipe);
    let root = models_dir.display().to_string();
    if let Some(names) = wanted {
        if let Some(err) = without_capture(&project, &selection, names, models_dir) {
            return Err(err);
        }
    }
    let mut files = select::expand(recipe, &selection, wanted, &root)?;
    if mode == Mode::Revert && wanted.is_none() {
        // Every file carrying the recipe's markers, also those no architecture selects any
        // more (patched by an older recipe or for a class since excluded).
        for f in project.files() {
            let rel = f.relative_path();
            let marked = f.text_read().is_some_and(|t| pysplice::marker::carries(t, &recipe.id));
            if marked && !files.iter().any(|x| x.file == rel) {
                files.push(select::FileRecipe {
                    file: rel.to_string(),
                    recipe: recipe.clone(),
                });
            }
        }
    }
    #[cfg(test)]
    faults::run(&faults::AFTER_SCAN);
    let mut out = Vec::with_capacity(files.len());
    for f in files {
        let disk = read_to_patch(&tree, &project, &f.file)?;
        let patched = match mode {
            Mode::Apply => apply(&f.recipe, disk.source().clone())?,
            Mode::Revert => revert(&f.recipe, disk.source().clone())?,
        };
        out.push(FilePatch {
            file: disk,
            relative: f.file,
            patched,
        });
    }
    Ok((selection, out))
}

/// The first name of `wanted` that no architecture of `selection` answers to but that a class
/// of the folder is called (a model SGLang serves in this release without aux capture, such as
/// `Glm4vForConditionalGeneration` from 0.5.4.post2 on): an error saying so, at the folder.
fn without_capture(project: &Project, selection: &RootChoices, wanted: &[String], dir: &Path) -> Option<Error> {
    wanted.iter().find_map(|name| {
        if name == "all" || !selection.named(name).is_empty() {
            return None;
        }
        let file = project.files().iter().find(|f| {
            f.text_read()
                .is_some_and(|text| text.lines().any(|line| defines_class(line, name)))
        })?;
        let message = format!(
            "`{}` is a class of this release ({}) but has no aux capture in it: neither it nor a class it \
             inherits from defines set_eagle3_layers_to_capture, so its hidden states cannot be dumped for \
             EAGLE-3 here (docs/sglang.md's architecture table gives the releases that have it)",
            pysplice::report::shown(name),
            pysplice::report::shown(file.relative_path())
        );
        Some(
            ErrorKind::Selection {
                reason: SelectionReason::Catalogue(message),
            }
            .at(Location::whole(dir.display().to_string())),
        )
    })
}

/// Whether `line` is the statement `class NAME(...)` or `class NAME:` at module level.
fn defines_class(line: &str, name: &str) -> bool {
    line.strip_prefix("class ")
        .and_then(|rest| rest.trim_start().strip_prefix(name))
        .is_some_and(|rest| rest.trim_start().starts_with(['(', ':']))
}

/// The files of `models_dir` (relative paths, sorted) that carry `recipe`'s markers.
///
/// # Errors
/// As [`patch`]: the folder or one of its `.py` files cannot be read.
pub fn marked_files(recipe: &Recipe, models_dir: &Path) -> Result<Vec<String>, Error> {
    let (_, project) = load(recipe, models_dir)?;
    let mut out: Vec<String> = project
        .files()
        .iter()
        .filter(|f| f.text_read().is_some_and(|t| pysplice::marker::carries(t, &recipe.id)))
        .map(|f| f.relative_path().to_string())
        .collect();
    out.sort();
    Ok(out)
}

/// The architectures of `selection` patched in `patches` (the files as read): those whose
/// `capture` hook has a frame in the method it targets. What a `--check` without `--arch` checks
/// a folder for, the architectures an earlier `--arch` run patched.
#[must_use]
pub fn patched_architectures(recipe: &Recipe, selection: &RootChoices, files: &[(String, String)]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for root in selection.roots.iter().filter(|r| r.skipped.is_none()) {
        let placed = root.targets.iter().filter(|t| t.hook == "capture").any(|t| {
            files
                .iter()
                .find(|(name, _)| *name == t.file)
                .is_some_and(|(name, text)| has_frame_in(recipe, name, text, "capture", &t.path))
        });
        if placed && !out.contains(&root.class) {
            out.push(root.class.clone());
        }
    }
    out.sort();
    out
}

/// Whether `text` holds a frame of `hook` inside the definition `path`.
fn has_frame_in(recipe: &Recipe, name: &str, text: &str, hook: &str, path: &str) -> bool {
    let file = pysplice::SourceFile::new(name, text);
    let Ok(frames) = pysplice::marker::scan(&file, &recipe.id) else {
        return false;
    };
    let Ok(parsed) = pysplice::ParsedFile::parse(file) else {
        return false;
    };
    let Some(def) = parsed.definitions().iter().find(|d| d.path() == path) else {
        return false;
    };
    frames
        .iter()
        .any(|f| f.hook == hook && def.line() <= f.line && f.line <= def.end_line())
}

/// For a `--revert` or `--check` that names no architecture: every file of `models_dir` that
/// carries the recipe's markers, reverted, or checked for the architectures patched in them
/// ([`patched_architectures`]); with those architectures. Nothing is written.
///
/// # Errors
/// As [`patch`]; [`ErrorKind::Selection`] (at the folder) for a check when a marked file serves
/// none of the architectures found patched, naming it.
pub fn patch_marked(
    recipe: &Recipe,
    models_dir: &Path,
    mode: Mode,
) -> Result<(RootChoices, Vec<FilePatch>, Vec<String>), Error> {
    let marked = marked_files(recipe, models_dir)?;
    if mode == Mode::Revert {
        let (selection, mut patches) = patch(recipe, models_dir, None, Mode::Revert)?;
        patches.retain(|p| marked.contains(&p.relative));
        return Ok((selection, patches, Vec::new()));
    }
    let (_, project) = load(recipe, models_dir)?;
    let selection = select::choose_roots(&project, recipe);
    let texts: Vec<(String, String)> = project
        .files()
        .iter()
        .filter(|f| marked.iter().any(|m| m == f.relative_path()))
        .map(|f| (f.relative_path().to_string(), f.text_read().unwrap_or("").to_string()))
        .collect();
    let archs = patched_architectures(recipe, &selection, &texts);
    let (selection, patches) = patch(recipe, models_dir, Some(&archs), Mode::Apply)?;
    let stray: Vec<&str> = marked
        .iter()
        .filter(|m| !patches.iter().any(|p| &p.relative == *m))
        .map(String::as_str)
        .collect();
    if !stray.is_empty() {
        let message = format!(
            "{} carry this recipe's markers but serve no architecture patched here (none whose __init__ \
             has the capture hook); check them with --arch CLASS, or remove the patch with --revert",
            pysplice::report::shown(&stray.join(", "))
        );
        return Err(usage_error(models_dir, message));
    }
    Ok((selection, patches, archs))
}

/// Writes every changed file, or none (see [`pysplice::files::write_all`]), and gives the files
/// written.
///
/// # Errors
/// As [`pysplice::files::write_all`] ([`ErrorKind::Io`], [`ErrorKind::Changed`], ...).
pub fn write_all(patches: &[FilePatch]) -> Result<Vec<&DiskFile>, Error> {
    let changes: Vec<(&DiskFile, &str)> = patches
        .iter()
        .filter(|p| p.patched.changed())
        .map(|p| (&p.file, p.patched.output()))
        .collect();
    if !changes.is_empty() {
        pysplice::files::write_all(&changes)?;
    }
    Ok(changes.into_iter().map(|(file, _)| file).collect())
}

/// An error for a path given by the user.
#[must_use]
pub fn usage_error(path: &Path, message: String) -> Error {
    ErrorKind::Selection {
        reason: SelectionReason::Catalogue(message),
    }
    .at(Location::whole(path.display().to_string()))
}

#[cfg(test)]
mod tests;
