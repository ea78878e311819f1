//! The recipes a workspace names: a list of recipe names (from an editor's settings), or else the
//! `recipes = [...]` list of a `pysplice.toml` at the workspace root. Each name is
//! `builtin:NAME` of the caller's catalogue ([`super::builtin`]) or a path, relative to the root
//! when relative.
//!
//! Loading never stops at the first problem: an editor shows every problem at once, a spec that
//! does not compile in the recipe file itself, the others as messages. A list is bounded: a name
//! given more than once is loaded once (one problem says so), and at most [`MAX_RECIPES`]
//! distinct names are loaded (one problem names the rest), so that a hostile `pysplice.toml`
//! of 40,000 entries costs what 64 cost and yields a handful of problems.
//!
//! ```
//! use pysplice::recipes::config::RecipeConfig;
//! use pysplice::recipes::BundledRecipe;
//! use pysplice::Recipe;
//!
//! fn trace() -> Result<Recipe, pysplice::Error> {
//!     Recipe::from_toml("builtin:trace", "[recipe]\nid = \"trace\"\nsummary = \"S\"\n[[hook]]\nid = \"i\"\nsummary = \"S\"\nensure-imports = [\"logging\"]\n")
//! }
//! let catalogue = [BundledRecipe::new("trace", trace)];
//! let config = RecipeConfig::load(None, Some(vec!["builtin:trace".into()]), &catalogue);
//! assert_eq!(config.recipes[0].id, "trace");
//! assert!(config.problems.is_empty() && !config.unconfigured);
//! ```

use std::path::{Path, PathBuf};

use super::BundledRecipe;
use crate::error::{Error, ErrorKind};
use crate::spec::{CodeFolder, Recipe};

/// The name of the configuration file at a workspace root.
pub const CONFIG_FILE: &str = "pysplice.toml";

/// The most recipes a workspace loads: further names are reported, not loaded.
pub const MAX_RECIPES: usize = 64;

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
    /// `pysplice.toml` at `root`; `builtin:NAME` names a recipe of `catalogue`.
    #[must_use]
    pub fn load(root: Option<&Path>, names: Option<Vec<String>>, catalogue: &[BundledRecipe]) -> RecipeConfig {
        let mut config = RecipeConfig::default();
        let configured = names.is_some();
        let mut found_file = false;
        let names = match names {
            Some(names) => names,
            None => root.map_or_else(Vec::new, |root| config.names_in_file(root, &mut found_file)),
        };
        config.unconfigured = !configured && !found_file;
        // Each name once, in the order first named, with how often it is named.
        let mut counts: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        let mut distinct = Vec::new();
        for name in names {
            let count = counts.entry(name.clone()).or_insert(0);
            if *count == 0 {
                distinct.push(name);
            }
            *count += 1;
        }
        let total = distinct.len();
        let left_out = distinct.get(MAX_RECIPES).cloned();
        distinct.truncate(MAX_RECIPES);
        for name in &distinct {
            config.add(root, name, catalogue);
        }
        for name in &distinct {
            match counts.get(name) {
                Some(&count) if count > 1 => config
                    .problems
                    .push(format!("{}: named {count} times, loaded once", shown(name))),
                _ => {}
            }
        }
        if let Some(first) = left_out {
            config.problems.push(format!(
                "{total} recipes are named, over the limit of {MAX_RECIPES}: the first {MAX_RECIPES} are loaded, the \
                 other {} are not (from {} on)",
                total - MAX_RECIPES,
                shown(&first)
            ));
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
    fn add(&mut self, root: Option<&Path>, name: &str, catalogue: &[BundledRecipe]) {
        let loaded = if name.starts_with(super::BUILTIN_PREFIX) {
            super::load(name, catalogue)
        } else {
            let path = match root {
                Some(root) if Path::new(name).is_relative() => root.join(name),
                _ => PathBuf::from(name),
            };
            self.spec_files.push(path.clone());
            match crate::files::read_text(&path) {
                Ok(text) => {
                    match Recipe::from_toml_with(&path.display().to_string(), &text, &CodeFolder::of_recipe(&path)) {
                        // A spec error is shown in the recipe file itself.
                        Err(err) => {
                            self.spec_errors.push((path, err));
                            return;
                        }
                        ok => ok,
                    }
                }
                Err(err) => Err(err),
            }
        };
        match loaded {
            Ok(recipe) if self.recipes.iter().any(|r| r.id == recipe.id) => {
                self.problems
                    .push(format!("{}: recipe `{}` is configured twice", shown(name), recipe.id));
            }
            Ok(recipe) => self.recipes.push(recipe),
            Err(err) => self.problems.push(err.to_string()),
        }
    }
}

/// A name for a message: at most 200 characters (a name in a hostile file may be megabytes).
fn shown(name: &str) -> String {
    match name.char_indices().nth(200) {
        Some((at, _)) => format!("{}...", &name[..at]),
        None => name.to_string(),
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
        let config = RecipeConfig::load(Some(dir.path()), None, &[]);
        assert!(config.unconfigured && config.recipes.is_empty() && config.problems.is_empty());
    }

    #[test]
    fn the_file_names_recipes_relative_to_the_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("r.toml"), RECIPE).unwrap();
        std::fs::write(dir.path().join("bad.toml"), "[recipe]\n").unwrap();
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "recipes = [\"r.toml\", \"bad.toml\", \"missing.toml\", \"./r.toml\", \"r.toml\"]\n",
        )
        .unwrap();
        let config = RecipeConfig::load(Some(dir.path()), None, &[]);
        assert!(!config.unconfigured);
        assert_eq!(config.recipes.len(), 1);
        assert_eq!(config.spec_files.len(), 4);
        assert_eq!(config.spec_errors.len(), 1);
        assert_eq!(config.spec_errors[0].0, dir.path().join("bad.toml"));
        assert_eq!(config.problems.len(), 3, "{:?}", config.problems);
        assert!(config.problems[0].contains("missing.toml"));
        assert!(config.problems[1].contains("configured twice"));
        assert_eq!(config.problems[2], "r.toml: named 2 times, loaded once");
    }

    /// Regression: 40,000 names were each loaded (quadratic in the duplicate check, 24 s in the
    /// language server) and each gave a problem.
    #[test]
    fn a_long_list_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("r.toml"), RECIPE).unwrap();
        let mut names = vec!["r.toml".to_string(); 20_000];
        names.extend((0..20_000).map(|i| format!("missing-{i}.toml")));
        let start = std::time::Instant::now();
        let config = RecipeConfig::load(Some(dir.path()), Some(names), &[]);
        assert!(
            start.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
        assert_eq!(config.recipes.len(), 1);
        assert_eq!(config.spec_files.len(), MAX_RECIPES);
        // 63 missing files, the repeated name, the limit.
        assert_eq!(config.problems.len(), MAX_RECIPES + 1, "{:?}", config.problems);
        assert_eq!(
            config.problems[MAX_RECIPES - 1],
            "r.toml: named 20000 times, loaded once"
        );
        assert_eq!(
            config.problems[MAX_RECIPES],
            "20001 recipes are named, over the limit of 64: the first 64 are loaded, the other 19937 are not \
             (from missing-63.toml on)"
        );
    }

    #[test]
    fn a_malformed_file_is_a_problem() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(CONFIG_FILE), "recipes = 3\n").unwrap();
        let config = RecipeConfig::load(Some(dir.path()), None, &[]);
        assert!(!config.unconfigured);
        assert!(config.problems[0].contains("must be a list"), "{:?}", config.problems);
    }

    #[test]
    fn a_given_list_wins_over_the_file_and_builtins_need_no_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(CONFIG_FILE), "recipes = [\"x.toml\"]\n").unwrap();
        let builtin = || Recipe::from_toml("builtin:r", RECIPE);
        let catalogue = [BundledRecipe::new("r", builtin)];
        let config = RecipeConfig::load(Some(dir.path()), Some(vec!["builtin:nope".into()]), &catalogue);
        assert!(config.recipes.is_empty() && config.spec_files.is_empty());
        assert!(
            config.problems[0].contains("no builtin recipe"),
            "{:?}",
            config.problems
        );
        let config = RecipeConfig::load(None, Some(vec!["builtin:r".into()]), &catalogue);
        assert_eq!(config.recipes[0].id, "r");
        assert!(config.problems.is_empty() && config.spec_files.is_empty());
    }
}
