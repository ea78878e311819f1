//! Recipes found by name the way programs and editors name them: `builtin:NAME` from a
//! caller-supplied catalogue of recipes shipped inside a program ([`BundledRecipe`],
//! [`builtin`]), or the path of a TOML hook spec ([`load`]); [`config`]: the recipes a workspace
//! names.
//!
//! The library ships no recipe itself: a program passes its own catalogue (an empty one where
//! it ships none).

pub mod config;

use std::path::Path;

use crate::error::{Error, ErrorKind, SpecReason};
use crate::location::Location;
use crate::spec::Recipe;

/// What names a bundled recipe where a recipe file's path is expected: `builtin:NAME`.
pub const BUILTIN_PREFIX: &str = "builtin:";

/// A recipe shipped inside a program, named `builtin:NAME`: its name and how it is built (the
/// bundled text compiled, or several composed).
///
/// ```
/// use pysplice::recipes::{load, BundledRecipe};
/// use pysplice::Recipe;
///
/// fn trace() -> Result<Recipe, pysplice::Error> {
///     Recipe::from_toml("builtin:trace", "[recipe]\nid = \"trace\"\nsummary = \"S\"\n[[hook]]\nid = \"i\"\nsummary = \"S\"\nensure-imports = [\"logging\"]\n")
/// }
/// const CATALOGUE: &[BundledRecipe] = &[BundledRecipe::new("trace", trace)];
/// assert_eq!(load("builtin:trace", CATALOGUE)?.id, "trace");
/// # Ok::<(), pysplice::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct BundledRecipe {
    /// The name after [`BUILTIN_PREFIX`].
    pub name: &'static str,
    /// Builds the recipe.
    pub build: fn() -> Result<Recipe, Error>,
}

impl BundledRecipe {
    /// The recipe `name`, built by `build`.
    #[must_use]
    pub const fn new(name: &'static str, build: fn() -> Result<Recipe, Error>) -> BundledRecipe {
        BundledRecipe { name, build }
    }
}

/// The recipe of `catalogue` called `name` (with or without [`BUILTIN_PREFIX`]), or `None` when
/// none is called so.
///
/// # Errors
/// What the recipe's `build` returns ([`ErrorKind::Spec`] for a bundled text that does not
/// compile).
#[must_use]
pub fn builtin(catalogue: &[BundledRecipe], name: &str) -> Option<Result<Recipe, Error>> {
    let name = name.strip_prefix(BUILTIN_PREFIX).unwrap_or(name);
    catalogue.iter().find(|r| r.name == name).map(|r| (r.build)())
}

/// A recipe named the way the programs and editors name one: `builtin:NAME` of `catalogue` (see
/// [`builtin`]), or the path of a TOML hook spec, read as a regular file within the size limit
/// (a FIFO is refused, not waited on).
///
/// # Errors
/// [`ErrorKind::Spec`] for a builtin name not in `catalogue` (the message names those that
/// are) or a spec that does not compile; the read errors of [`crate::files::read_text`]
/// ([`ErrorKind::Io`], [`ErrorKind::NotRegular`], ...).
pub fn load(spec: &str, catalogue: &[BundledRecipe]) -> Result<Recipe, Error> {
    if let Some(name) = spec.strip_prefix(BUILTIN_PREFIX) {
        return builtin(catalogue, name).unwrap_or_else(|| {
            let known = catalogue
                .iter()
                .map(|r| format!("{BUILTIN_PREFIX}{}", r.name))
                .collect();
            Err(ErrorKind::Spec {
                reason: SpecReason::UnknownBuiltin {
                    name: name.to_string(),
                    known,
                },
                cause: None,
            }
            .at(Location::new(spec, 1, 1)))
        });
    }
    Recipe::from_file(Path::new(spec))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace() -> Result<Recipe, Error> {
        Recipe::from_toml(
            "builtin:trace",
            "[recipe]\nid = \"trace\"\nsummary = \"s\"\n[[hook]]\nid = \"i\"\nsummary = \"s\"\nensure-imports = [\"os\"]\n",
        )
    }

    const CATALOGUE: &[BundledRecipe] = &[BundledRecipe::new("trace", trace)];

    #[test]
    fn a_builtin_is_found_with_and_without_prefix() {
        let bare = builtin(CATALOGUE, "trace").expect("known").expect("compiles");
        let prefixed = load("builtin:trace", CATALOGUE).expect("compiles");
        assert_eq!(bare.id, prefixed.id);
        assert!(builtin(&[], "trace").is_none());
    }

    #[test]
    fn an_unknown_builtin_is_a_spec_error_naming_the_known_ones() {
        let err = load("builtin:nope", CATALOGUE).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Spec { .. }), "{err:?}");
        assert!(err.to_string().contains("builtin:trace"), "{err}");
        assert!(builtin(CATALOGUE, "nope").is_none());
        let none = load("builtin:trace", &[]).unwrap_err();
        assert!(matches!(none.kind(), ErrorKind::Spec { .. }), "{none:?}");
    }

    #[test]
    fn a_path_is_read_and_compiled() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.toml");
        std::fs::write(
            &path,
            "[recipe]\nid = \"r\"\nsummary = \"s\"\n[[hook]]\nid = \"i\"\nsummary = \"s\"\nensure-imports = [\"os\"]\n",
        )
        .unwrap();
        let recipe = load(path.to_str().unwrap(), &[]).unwrap();
        assert_eq!(recipe.id, "r");
        let missing = load(dir.path().join("missing.toml").to_str().unwrap(), &[]).unwrap_err();
        assert!(matches!(missing.kind(), ErrorKind::Io { .. }), "{missing:?}");
    }
}
