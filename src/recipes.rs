//! Recipes that ship with pysplice, found by name ([`builtin`], [`load`]), and what running them
//! needs ([`sglang`]: the server flags per SGLang release for [`SGLANG_HS_DUMP`];
//! [`sglang_install`]: an SGLang install's model file and release; [`sglang_models`]: the dump
//! for every architecture; [`config`]: the recipes a workspace names).

pub mod config;
mod probe;
pub mod sglang;
pub mod sglang_install;
pub mod sglang_models;

use std::path::Path;

use crate::error::{Error, ErrorKind, Location, SpecReason};
use crate::spec::Recipe;

/// Dumps EAGLE-3 / SpecForge training hidden states from SGLang's `DeepseekV2Model`
/// (`sglang/srt/models/deepseek_v2.py`, SGLang 0.2.6 to 0.5.23; Kimi-K2.5 included) during
/// prefill passes, gated by `SGLANG_HS_DUMP_DIR`.
///
/// ```
/// let recipe = pysplice::Recipe::from_toml("sglang_hs_dump.toml", pysplice::recipes::SGLANG_HS_DUMP)?;
/// assert_eq!(recipe.id, "sglang-hs-dump");
/// # Ok::<(), pysplice::Error>(())
/// ```
pub const SGLANG_HS_DUMP: &str = include_str!("../recipes/sglang_hs_dump.toml");

/// The file of an SGLang tree that [`SGLANG_HS_DUMP`] patches.
pub const SGLANG_HS_DUMP_FILE: &str = "sglang/srt/models/deepseek_v2.py";

/// The targets of the hidden-state dump for every SGLang architecture with EAGLE-3 aux capture,
/// chosen by meaning (`[select.*]` tables); [`sglang_models::recipe`] adds the helpers of
/// [`SGLANG_HS_DUMP`].
pub const SGLANG_HS_DUMP_MODELS: &str = include_str!("../recipes/sglang_hs_dump_models.toml");

/// What names a bundled recipe where a recipe file's path is expected: `builtin:NAME`.
pub const BUILTIN_PREFIX: &str = "builtin:";

/// The names of the bundled recipes, for [`builtin`]: [`SGLANG_HS_DUMP`] and the dump for every
/// architecture ([`sglang_models::recipe`]).
pub const BUILTIN_NAMES: [&str; 2] = ["sglang-hs-dump", "sglang-hs-dump-models"];

/// The bundled recipe called `name` (with or without [`BUILTIN_PREFIX`]), or `None` when no
/// recipe ships under that name.
///
/// ```
/// let recipe = pysplice::recipes::builtin("builtin:sglang-hs-dump").unwrap()?;
/// assert_eq!(recipe.id, "sglang-hs-dump");
/// assert!(pysplice::recipes::builtin("no-such-recipe").is_none());
/// # Ok::<(), pysplice::Error>(())
/// ```
///
/// # Errors
/// [`ErrorKind::Spec`] if a bundled recipe does not compile (a bug, caught by the tests).
#[must_use]
pub fn builtin(name: &str) -> Option<Result<Recipe, Error>> {
    match name.strip_prefix(BUILTIN_PREFIX).unwrap_or(name) {
        "sglang-hs-dump" => Some(Recipe::from_bundled_toml(
            &format!("{BUILTIN_PREFIX}sglang-hs-dump"),
            SGLANG_HS_DUMP,
        )),
        "sglang-hs-dump-models" => Some(sglang_models::recipe()),
        _ => None,
    }
}

/// A recipe named the way the programs and editors name one: `builtin:NAME` (see [`builtin`]),
/// or the path of a TOML hook spec, read as a regular file within the size limit (a FIFO is
/// refused, not waited on).
///
/// ```
/// let recipe = pysplice::recipes::load("builtin:sglang-hs-dump")?;
/// assert_eq!(recipe.id, "sglang-hs-dump");
/// let unknown = pysplice::recipes::load("builtin:nothing").unwrap_err();
/// assert!(unknown.to_string().contains("sglang-hs-dump"));
/// # Ok::<(), pysplice::Error>(())
/// ```
///
/// # Errors
/// [`ErrorKind::Spec`] for an unknown builtin name or a spec that does not compile; the read errors
/// of [`crate::files::read_text`] ([`ErrorKind::Io`], [`ErrorKind::NotRegular`], ...).
pub fn load(spec: &str) -> Result<Recipe, Error> {
    if let Some(name) = spec.strip_prefix(BUILTIN_PREFIX) {
        return builtin(name).unwrap_or_else(|| {
            Err(ErrorKind::Spec {
                reason: SpecReason::Catalogue(format!(
                    "no builtin recipe `{name}`; the builtin recipes are {}",
                    BUILTIN_NAMES.map(|n| format!("{BUILTIN_PREFIX}{n}")).join(", ")
                )),
                cause: None,
            }
            .at(Location::new(spec, 1, 1)))
        });
    }
    let text = crate::files::read_text(Path::new(spec))?;
    Recipe::from_toml(spec, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_name_compiles_with_and_without_prefix() {
        for name in BUILTIN_NAMES {
            let bare = builtin(name).expect("known").expect("compiles");
            let prefixed = load(&format!("{BUILTIN_PREFIX}{name}")).expect("compiles");
            assert_eq!(bare.id, prefixed.id);
            assert!(!bare.hooks.is_empty());
        }
    }

    #[test]
    fn an_unknown_builtin_is_a_spec_error_naming_the_known_ones() {
        let err = load("builtin:nope").unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Spec { .. }), "{err:?}");
        assert!(err.to_string().contains("builtin:sglang-hs-dump-models"), "{err}");
        assert!(builtin("nope").is_none());
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
        let recipe = load(path.to_str().unwrap()).unwrap();
        assert_eq!(recipe.id, "r");
        let missing = load(dir.path().join("missing.toml").to_str().unwrap()).unwrap_err();
        assert!(matches!(missing.kind(), ErrorKind::Io { .. }), "{missing:?}");
    }
}

#[cfg(test)]
mod bundled_tests;
