//! The recipes a workspace names: a list of recipe names (from an editor's settings), or else the
//! `recipes = [...]` list of a `pysplice.toml` at the workspace root. Each name is
//! `builtin:NAME` ([`super::builtin`]) or a path, relative to the root when relative.
//!
//! Loading never stops at the first problem: an editor shows every problem at once, a spec that
//! does not compile in the recipe file itself, the others as messages.
//!
//! ```
//! use pysplice::recipes::config::RecipeConfig;
//!
//! let config = RecipeConfig::load(None, Some(vec!["builtin:sglang-hs-dump".into()]));
//! assert_eq!(config.recipes[0].id, "sglang-hs-dump");
//! assert!(config.problems.is_empty() && !config.unconfigured);
//! ```

use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind};
use crate::spec::Recipe;

/// The name of the configuration file at a workspace root.
pub const CONFIG_FILE: &str = "pysplice.toml";

/// A workspace's recipes, and what is wrong with its configuration.
#[derive(Debug, Default)]
pub struct RecipeConfig {
    /// The recipes that compiled, in the order named, each id once.
    pub recipes: Vec<Recipe>,
    /// Problems of the configuration (an unreadable or malformed `pysplice.toml`, a recipe file
    /// that cannot be read, a recipe id named twice), as messages.
    pub problems: Vec<String>,
    /// Neither the given list nor a `pysplice.toml` names any recipe: nothing is configured.
    pub unconfigured: bool,
    /// The recipe files named, as resolved paths (builtin names excluded).
    pub spec_files: Vec<PathBuf>,
    /// Recipe files that do not compile, with the error (its location is in the file).
    pub spec_errors: Vec<(PathBuf, Error)>,
}

impl RecipeConfig {
    /// Loads the recipes of `names` (an editor's settings), or, when `names` is `None`, of the
    /// `pysplice.toml` at `root`.
    #[must_use]
    pub fn load(root: Option<&Path>, names: Option<Vec<String>>) -> RecipeConfig {
        let mut config = RecipeConfig::default();
        let configured = names.is_some();
        let mut found_file = false;
        let names = match names {
            Some(names) => names,
            None => root.map_or_else(Vec::new, |root| config.names_in_file(root, &mut found_file)),
        };
        config.unconfigured = !configured && !found_file;
        for name in names {
            config.add(root, &name);
        }
        config
    }

    /// The `recipes` list of `root/pysplice.toml`; a missing file is no problem.
    fn names_in_file(&mut self, root: &Path, found: &mut bool) -> Vec<String> {
        let path = root.join(CONFIG_FILE);
        // Regular files only, within the size limit: a `pysplice.toml` that is a FIFO or a link to
        // `/dev/zero` (in an untrusted repository) is reported, never waited on or drained.
        let text = match crate::files::read_text(&path) {
            Ok(text) => text,
            Err(err) if is_not_found(&err) => return Vec::new(),
            Err(err) => {
                *found = true;
                self.problems.push(err.to_string());
                return Vec::new();
            }
        };
        *found = true;
        let list = toml::from_str::<toml::Table>(&text)
            .map_err(|err| err.to_string())
            .and_then(|table| match table.get("recipes") {
                Some(toml::Value::Array(items)) => {
                    Ok(items.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
                }
                _ => Err("`recipes` must be a list of paths".to_string()),
            });
        list.unwrap_or_else(|err| {
            self.problems.push(format!("{}: {err}", path.display()));
            Vec::new()
        })
    }

    /// Loads one named recipe.
    fn add(&mut self, root: Option<&Path>, name: &str) {
        let loaded = if name.starts_with(super::BUILTIN_PREFIX) {
            super::load(name)
        } else {
            let path = match root {
                Some(root) if Path::new(name).is_relative() => root.join(name),
                _ => PathBuf::from(name),
            };
            self.spec_files.push(path.clone());
            match crate::files::read_text(&path) {
                Ok(text) => match Recipe::from_toml(&path.display().to_string(), &text) {
                    // A spec error is shown in the recipe file itself.
                    Err(err) => {
                        self.spec_errors.push((path, err));
                        return;
                    }
                    ok => ok,
                },
                Err(err) => Err(err),
            }
        };
        match loaded {
            Ok(recipe) if self.recipes.iter().any(|r| r.id == recipe.id) => {
                self.problems
                    .push(format!("{name}: recipe `{}` is configured twice", recipe.id));
            }
            Ok(recipe) => self.recipes.push(recipe),
            Err(err) => self.problems.push(err.to_string()),
        }
    }
}

/// Whether reading failed because the file does not exist.
fn is_not_found(err: &Error) -> bool {
    matches!(err.kind(), ErrorKind::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECIPE: &str =
        "[recipe]\nid = \"r\"\nsummary = \"s\"\n[[hook]]\nid = \"i\"\nsummary = \"s\"\nensure-imports = [\"os\"]\n";

    #[test]
    fn without_a_list_or_a_file_nothing_is_configured() {
        let dir = tempfile::tempdir().unwrap();
        let config = RecipeConfig::load(Some(dir.path()), None);
        assert!(config.unconfigured && config.recipes.is_empty() && config.problems.is_empty());
    }

    #[test]
    fn the_file_names_recipes_relative_to_the_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("r.toml"), RECIPE).unwrap();
        std::fs::write(dir.path().join("bad.toml"), "[recipe]\n").unwrap();
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "recipes = [\"r.toml\", \"bad.toml\", \"missing.toml\", \"r.toml\"]\n",
        )
        .unwrap();
        let config = RecipeConfig::load(Some(dir.path()), None);
        assert!(!config.unconfigured);
        assert_eq!(config.recipes.len(), 1);
        assert_eq!(config.spec_files.len(), 4);
        assert_eq!(config.spec_errors.len(), 1);
        assert_eq!(config.spec_errors[0].0, dir.path().join("bad.toml"));
        assert_eq!(config.problems.len(), 2, "{:?}", config.problems);
        assert!(config.problems[0].contains("missing.toml"));
        assert!(config.problems[1].contains("configured twice"));
    }

    #[test]
    fn a_malformed_file_is_a_problem() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(CONFIG_FILE), "recipes = 3\n").unwrap();
        let config = RecipeConfig::load(Some(dir.path()), None);
        assert!(!config.unconfigured);
        assert!(config.problems[0].contains("must be a list"), "{:?}", config.problems);
    }

    #[test]
    fn a_given_list_wins_over_the_file_and_builtins_need_no_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(CONFIG_FILE), "recipes = [\"x.toml\"]\n").unwrap();
        let config = RecipeConfig::load(Some(dir.path()), Some(vec!["builtin:nope".into()]));
        assert!(config.recipes.is_empty() && config.spec_files.is_empty());
        assert!(
            config.problems[0].contains("no builtin recipe"),
            "{:?}",
            config.problems
        );
    }
}
