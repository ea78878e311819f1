//! An SGLang install, as the [`SGLANG_HS_DUMP`](crate::recipes::SGLANG_HS_DUMP) recipe needs it: the model
//! file in a folder ([`model_file`]) or in a package folder ([`package_model_file`]), the release it belongs to ([`Release::detect`]), and how to start
//! the server for it ([`launch_for`]), with the recipe's own facts (the hook that turns on aux
//! capture, [`CAPTURE_HOOK`]) so that the flags and the recipe cannot drift apart.
//!
//! ```
//! use pysplice_sglang::install::{launch_for, Release};
//!
//! let release = Release::given("0.5.10").unwrap();
//! assert_eq!(release.source, "--sglang-version");
//! let launch = launch_for(Some(&release), &[]);
//! assert!(launch.flags.contains(&"--disable-radix-cache"));
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

use crate::launch::{self as sglang, Launch, ReleaseVersion};
use pysplice::Recipe;
use pysplice::{HookOutcome, Status};

/// The hook of [`SGLANG_HS_DUMP`](crate::recipes::SGLANG_HS_DUMP) that turns on aux hidden-state capture
/// (`set_eagle3_layers_to_capture`); skipped in releases that lack that method.
pub const CAPTURE_HOOK: &str = "capture";

/// The recipe variable that names the environment variable turning the dump on.
pub const ENV_VAR: &str = "env";

/// The environment variable that turns the dump on when the recipe does not name one.
pub const DEFAULT_ENV: &str = "SGLANG_HS_DUMP_DIR";

/// Where the printed instructions put the dump: memory-backed, so that writing samples does not
/// wait on a disk.
pub const DUMP_DIR: &str = "/dev/shm/sglang_hs";

/// Why the release is unknown, for the note under the generic flag list.
pub const UNKNOWN_RELEASE: &str =
    "no sglang/version.py, sglang/_version.py or sglang-*.dist-info beside the package; pass --sglang-version X";

/// The note added when the file has no aux capture.
const NO_CAPTURE: &str = "this file has no aux capture (set_eagle3_layers_to_capture came in SGLang 0.5.4.post2): the \
                          files hold hidden_state but no aux_hidden_state";

/// The environment variable that turns `recipe`'s dump on (its `env` variable).
#[must_use]
pub fn env_var(recipe: &Recipe) -> &str {
    recipe.vars.get(ENV_VAR).map_or(DEFAULT_ENV, String::as_str)
}

/// The model file of the SGLang package at `package` (the folder an interpreter would import
/// `sglang` from), the interpreter described as `who` in the message.
///
/// # Errors
/// The package holds no `srt/models/deepseek_v2.py`.
pub fn package_model_file(package: &Path, who: &str) -> Result<PathBuf, InstallError> {
    let file = package.join("srt/models/deepseek_v2.py");
    if !file.is_file() {
        return fail(format!(
            "{}: the SGLang that {who} has at {} holds no such file",
            file.display(),
            package.display()
        ));
    }
    Ok(file)
}

/// What to do when SGLang is not installed where an interpreter looks.
pub const REMEDY: &str = "activate the environment that has SGLang, pass --python, or give the path of deepseek_v2.py";

/// Why an SGLang install or its model file could not be found, in words that say what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstallError {
    /// The message, naming the path or interpreter and the remedy.
    pub message: String,
}

impl fmt::Display for InstallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for InstallError {}

fn fail<T>(message: String) -> Result<T, InstallError> {
    Err(InstallError { message })
}

/// The release a file belongs to, as given or found, with where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Release {
    /// The release as written (`0.5.4.post2`).
    pub text: String,
    /// The release, parsed.
    pub version: ReleaseVersion,
    /// Where it came from: a file's path, or `--sglang-version`.
    pub source: String,
}

impl Release {
    /// A release given by the user (`--sglang-version`), or `None` when `text` is not a release
    /// number.
    #[must_use]
    pub fn given(text: &str) -> Option<Release> {
        Some(Release {
            version: ReleaseVersion::parse(text)?,
            text: text.to_string(),
            source: "--sglang-version".into(),
        })
    }

    /// The release of the SGLang tree holding `file` (`.../sglang/srt/models/<file>.py`): from
    /// `sglang/_version.py`, `sglang/version.py`, or else the newest `sglang-X.dist-info` beside
    /// the package. Files are read through the checked reader; nothing is imported.
    #[must_use]
    pub fn detect(file: &Path) -> Option<Release> {
        let file = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
        let models = file.parent()?;
        let srt = models.parent()?;
        if models.file_name()? != "models" || srt.file_name()? != "srt" {
            return None;
        }
        let package = srt.parent()?;
        for name in ["_version.py", "version.py"] {
            let path = package.join(name);
            if let Ok(text) = pysplice::files::read_text(&path) {
                if let Some(release) = version_literal(&text, &path) {
                    return Some(release);
                }
            }
        }
        let site = package.parent()?;
        let mut infos: Vec<_> = std::fs::read_dir(site)
            .ok()?
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .filter_map(|name| {
                Some((
                    name.strip_prefix("sglang-")?.strip_suffix(".dist-info")?.to_string(),
                    name.clone(),
                ))
            })
            .collect();
        infos.sort();
        let (text, name) = infos.pop()?;
        Some(Release {
            version: ReleaseVersion::parse(&text)?,
            text,
            source: site.join(name).display().to_string(),
        })
    }
}

/// `__version__ = "X"` (or `__version__ = version = 'X'`) as a statement of its own.
fn version_literal(text: &str, path: &Path) -> Option<Release> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix("__version__")?.trim_start().strip_prefix('=')?.trim();
        let rest = rest
            .strip_prefix("version")
            .map_or(rest, |r| r.trim_start().trim_start_matches('=').trim());
        let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
        let value = rest[1..].split(quote).next()?;
        Some(Release {
            version: ReleaseVersion::parse(value)?,
            text: value.to_string(),
            source: path.display().to_string(),
        })
    })
}

/// The server flags and notes for the dump on `release` (the generic list with a note when it
/// is unknown), plus a note when `outcomes` show that the [`CAPTURE_HOOK`] was skipped.
#[must_use]
pub fn launch_for(release: Option<&Release>, outcomes: &[HookOutcome]) -> Launch {
    let mut launch = match release {
        Some(release) => sglang::launch(Some(&release.version)),
        None => sglang::launch_unknown(UNKNOWN_RELEASE),
    };
    let no_capture = outcomes
        .iter()
        .any(|o| o.hook == CAPTURE_HOOK && matches!(o.status, Status::Skipped { .. }));
    if no_capture {
        launch.notes.push(NO_CAPTURE.into());
    }
    launch
}

/// The file to patch for `path`: `path` itself, or for a folder the `deepseek_v2.py` it holds (an
/// SGLang checkout, site-packages, the `sglang` package, the models folder).
///
/// # Errors
/// A folder that holds no `deepseek_v2.py` where one is looked for.
pub fn model_file(path: &Path) -> Result<PathBuf, InstallError> {
    if !path.is_dir() {
        return Ok(path.to_path_buf());
    }
    let file = crate::recipes::SGLANG_HS_DUMP_FILE; // sglang/srt/models/deepseek_v2.py
    let tails = [
        file.to_string(),
        format!("python/{file}"),
        file.trim_start_matches("sglang/").to_string(),
        "models/deepseek_v2.py".into(),
        "deepseek_v2.py".into(),
    ];
    match tails
        .iter()
        .map(|tail| path.join(tail))
        .find(|candidate| candidate.is_file())
    {
        Some(found) => Ok(found),
        None => fail(format!(
            "{}: no deepseek_v2.py in this folder (looked for {})",
            path.display(),
            tails.join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(version_py: Option<&str>, dist_info: &[&str]) -> (tempfile::TempDir, PathBuf) {
        let site = tempfile::tempdir().unwrap();
        let models = site.path().join("sglang/srt/models");
        std::fs::create_dir_all(&models).unwrap();
        let file = models.join("deepseek_v2.py");
        std::fs::write(&file, "x = 1\n").unwrap();
        if let Some(text) = version_py {
            std::fs::write(site.path().join("sglang/version.py"), text).unwrap();
        }
        for info in dist_info {
            std::fs::create_dir(site.path().join(info)).unwrap();
        }
        (site, file)
    }

    #[test]
    fn the_release_comes_from_version_py_then_dist_info() {
        let (_site, file) = tree(
            Some("__version__ = version = '0.5.4.post2'\n"),
            &["sglang-0.4.0.dist-info"],
        );
        let release = Release::detect(&file).unwrap();
        assert_eq!(release.text, "0.5.4.post2");
        assert!(release.source.ends_with("version.py"));
        let (_site, file) = tree(None, &["sglang-0.4.0.dist-info", "sglang-0.5.1.dist-info"]);
        assert_eq!(Release::detect(&file).unwrap().text, "0.5.1");
        let (_site, file) = tree(Some("x = 1\n"), &[]);
        assert!(Release::detect(&file).is_none());
        assert!(Release::given("not a release").is_none());
    }

    #[test]
    fn a_folder_is_searched_for_the_model_file() {
        let (site, file) = tree(None, &[]);
        assert_eq!(model_file(site.path()).unwrap(), file);
        assert_eq!(model_file(&file).unwrap(), file);
        let empty = tempfile::tempdir().unwrap();
        let err = model_file(empty.path()).unwrap_err();
        assert!(err.message.contains("no deepseek_v2.py in this folder"), "{err}");
    }

    #[test]
    fn the_recipes_name_the_capture_hook_and_the_variable_used_here() {
        for name in crate::recipes::BUILTIN_NAMES {
            let recipe = crate::recipes::builtin(name).unwrap().unwrap();
            assert!(recipe.hooks.iter().any(|h| h.id == CAPTURE_HOOK), "{name}");
            assert_eq!(env_var(&recipe), DEFAULT_ENV, "{name}");
            assert!(recipe.vars.contains_key(ENV_VAR), "{name}");
        }
    }

    #[test]
    fn a_skipped_capture_hook_adds_a_note() {
        let skipped = HookOutcome {
            hook: CAPTURE_HOOK.into(),
            status: Status::Skipped {
                reason: pysplice::OutcomeReason::new("no method"),
            },
            lines: None,
            summary: String::new(),
        };
        let plain = launch_for(None, &[]);
        let noted = launch_for(None, std::slice::from_ref(&skipped));
        assert_eq!(noted.notes.len(), plain.notes.len() + 1);
        assert!(plain.notes[0].contains(UNKNOWN_RELEASE));
    }
}
