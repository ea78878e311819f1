//! The recipes that ship with pysplice for SGLang, and the catalogue that names them
//! (`builtin:NAME`, see [`pysplice::recipes`]). Their code is the Python package beside them
//! (`python/pysplice_sglang/dump/`): each hook names its definitions there (`code-from`), and
//! the files are compiled in ([`DUMP_CODE`]), so that the `.py` files are the only copy.

use std::collections::BTreeMap;

use pysplice::recipes::BundledRecipe;
use pysplice::{Error, Recipe};

/// Dumps EAGLE-3 / SpecForge training hidden states from SGLang's `DeepseekV2Model`
/// (`sglang/srt/models/deepseek_v2.py`, SGLang 0.2.6 to 0.5.23; Kimi-K2.5 included) during
/// prefill passes, gated by `SGLANG_HS_DUMP_DIR`.
///
/// Its hooks take their code from [`DUMP_CODE`] (`code-from`), which the recipe is read with:
///
/// ```
/// use pysplice_sglang::recipes::{dump_code, SGLANG_HS_DUMP};
/// let recipe = pysplice::Recipe::from_toml_with("sglang_hs_dump.toml", SGLANG_HS_DUMP, &dump_code())?;
/// assert_eq!(recipe.id, "sglang-hs-dump");
/// # Ok::<(), pysplice::Error>(())
/// ```
pub const SGLANG_HS_DUMP: &str = include_str!("../python/pysplice_sglang/dump/sglang_hs_dump.toml");

/// The file of an SGLang tree that [`SGLANG_HS_DUMP`] patches.
pub const SGLANG_HS_DUMP_FILE: &str = "sglang/srt/models/deepseek_v2.py";

/// The targets of the hidden-state dump for every SGLang architecture with EAGLE-3 aux capture,
/// chosen by meaning (`[select.*]` tables); [`models_recipe`] adds the helpers of
/// [`SGLANG_HS_DUMP`].
pub const SGLANG_HS_DUMP_MODELS: &str = include_str!("../python/pysplice_sglang/dump/sglang_hs_dump_models.toml");

/// The Python files beside the dump recipes that their hooks take code from (`code-from`), by
/// their path there: the modules of the package `pysplice_sglang.dump`, compiled in.
pub const DUMP_CODE: &[(&str, &str)] = &[
    ("archive.py", include_str!("../python/pysplice_sglang/dump/archive.py")),
    ("capture.py", include_str!("../python/pysplice_sglang/dump/capture.py")),
    ("chunks.py", include_str!("../python/pysplice_sglang/dump/chunks.py")),
    ("debris.py", include_str!("../python/pysplice_sglang/dump/debris.py")),
    ("files.py", include_str!("../python/pysplice_sglang/dump/files.py")),
    ("forward.py", include_str!("../python/pysplice_sglang/dump/forward.py")),
    ("hooks.py", include_str!("../python/pysplice_sglang/dump/hooks.py")),
    (
        "parallel.py",
        include_str!("../python/pysplice_sglang/dump/parallel.py"),
    ),
    ("parts.py", include_str!("../python/pysplice_sglang/dump/parts.py")),
    (
        "provenance.py",
        include_str!("../python/pysplice_sglang/dump/provenance.py"),
    ),
    ("ring.py", include_str!("../python/pysplice_sglang/dump/ring.py")),
    ("sample.py", include_str!("../python/pysplice_sglang/dump/sample.py")),
    (
        "settings.py",
        include_str!("../python/pysplice_sglang/dump/settings.py"),
    ),
    ("sink.py", include_str!("../python/pysplice_sglang/dump/sink.py")),
    ("state.py", include_str!("../python/pysplice_sglang/dump/state.py")),
    ("status.py", include_str!("../python/pysplice_sglang/dump/status.py")),
    ("stitch.py", include_str!("../python/pysplice_sglang/dump/stitch.py")),
    ("writer.py", include_str!("../python/pysplice_sglang/dump/writer.py")),
];

/// [`DUMP_CODE`] as what a recipe reads its `code-from` files from
/// ([`pysplice::Recipe::from_toml_with`]).
#[must_use]
pub fn dump_code() -> BTreeMap<&'static str, &'static str> {
    DUMP_CODE.iter().copied().collect()
}

/// The bundled recipes, for [`pysplice::recipes::load`] and the recipe configuration of a
/// workspace: [`SGLANG_HS_DUMP`] and the dump for every architecture ([`models_recipe`]).
///
/// ```
/// let recipe = pysplice::recipes::load("builtin:sglang-hs-dump", pysplice_sglang::recipes::CATALOGUE)?;
/// assert_eq!(recipe.id, "sglang-hs-dump");
/// # Ok::<(), pysplice::Error>(())
/// ```
pub const CATALOGUE: &[BundledRecipe] = &[
    BundledRecipe::new("sglang-hs-dump", hs_dump),
    BundledRecipe::new("sglang-hs-dump-models", models_recipe),
];

/// The composed recipe: `imports` and `dump-helpers` of [`SGLANG_HS_DUMP`], then
/// the selector hooks of [`SGLANG_HS_DUMP_MODELS`], [stamped](stamp).
///
/// ```
/// let recipe = pysplice_sglang::recipes::models_recipe()?;
/// assert!(recipe.selects());
/// assert_eq!(recipe.hooks[1].id, "dump-helpers");
/// # Ok::<(), pysplice::Error>(())
/// ```
///
/// # Errors
/// [`pysplice::ErrorKind::Spec`] if a bundled recipe does not compile (a bug, caught by the tests).
pub fn models_recipe() -> Result<Recipe, Error> {
    let code = dump_code();
    let base =
        Recipe::from_bundled_toml_with("python/pysplice_sglang/dump/sglang_hs_dump.toml", SGLANG_HS_DUMP, &code)?;
    let mut models = Recipe::from_bundled_toml_with(
        "python/pysplice_sglang/dump/sglang_hs_dump_models.toml",
        SGLANG_HS_DUMP_MODELS,
        &code,
    )?;
    let mut hooks: Vec<_> = base
        .hooks
        .into_iter()
        .filter(|h| h.id == "imports" || h.id == "dump-helpers")
        .collect();
    hooks.append(&mut models.hooks);
    models.hooks = hooks;
    models.notes = base.notes;
    stamp(&mut models);
    Ok(models)
}

/// The names of the bundled recipes of [`CATALOGUE`].
pub const BUILTIN_NAMES: [&str; 2] = ["sglang-hs-dump", "sglang-hs-dump-models"];

/// The version the bundled recipes write into every sample's provenance: this crate's, which is
/// the programs' (`sglang-hs-dump --version`).
pub const PYSPLICE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The `[vars]` entry of the dump recipes that names the pysplice release in each sample's
/// provenance; the TOML files say `"unknown"`, so a spec read from a file
/// (`pysplice apply --spec FILE`) keeps that, and [`stamp`] fills it for the bundled ones.
pub const VERSION_VAR: &str = "pysplice_version";

/// Gives a dump recipe's [`VERSION_VAR`] this build's [`PYSPLICE_VERSION`]; a recipe without
/// that variable is left as it is. The bundled recipes ([`builtin`], [`models_recipe`])
/// come stamped.
///
/// ```
/// use pysplice_sglang::recipes::{dump_code, SGLANG_HS_DUMP};
/// let mut recipe = pysplice::Recipe::from_toml_with("sglang_hs_dump.toml", SGLANG_HS_DUMP, &dump_code())?;
/// assert_eq!(recipe.vars["pysplice_version"], "unknown");
/// pysplice_sglang::recipes::stamp(&mut recipe);
/// assert_eq!(recipe.vars["pysplice_version"], pysplice_sglang::recipes::PYSPLICE_VERSION);
/// # Ok::<(), pysplice::Error>(())
/// ```
pub fn stamp(recipe: &mut Recipe) {
    if let Some(value) = recipe.vars.get_mut(VERSION_VAR) {
        *value = PYSPLICE_VERSION.to_string();
    }
}

/// [`SGLANG_HS_DUMP`], compiled and [stamped](stamp).
fn hs_dump() -> Result<Recipe, Error> {
    let mut recipe = Recipe::from_bundled_toml_with(
        &format!("{}sglang-hs-dump", pysplice::recipes::BUILTIN_PREFIX),
        SGLANG_HS_DUMP,
        &dump_code(),
    )?;
    stamp(&mut recipe);
    Ok(recipe)
}

/// The bundled recipe called `name` (with or without `builtin:`), or `None` when no recipe ships
/// under that name.
///
/// ```
/// let recipe = pysplice_sglang::recipes::builtin("builtin:sglang-hs-dump").unwrap()?;
/// assert_eq!(recipe.id, "sglang-hs-dump");
/// assert!(pysplice_sglang::recipes::builtin("no-such-recipe").is_none());
/// # Ok::<(), pysplice::Error>(())
/// ```
///
/// # Errors
/// [`pysplice::ErrorKind::Spec`] if a bundled recipe does not compile (a bug, caught by the tests).
#[must_use]
pub fn builtin(name: &str) -> Option<Result<Recipe, Error>> {
    pysplice::recipes::builtin(CATALOGUE, name)
}

/// A recipe named as the programs name one: `builtin:NAME` of [`CATALOGUE`] or a TOML spec's
/// path (see [`pysplice::recipes::load`]).
///
/// # Errors
/// As [`pysplice::recipes::load`].
pub fn load(spec: &str) -> Result<Recipe, Error> {
    pysplice::recipes::load(spec, CATALOGUE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pysplice::ErrorKind;

    #[test]
    fn every_builtin_name_compiles_with_and_without_prefix() {
        assert_eq!(CATALOGUE.iter().map(|r| r.name).collect::<Vec<_>>(), BUILTIN_NAMES);
        for name in BUILTIN_NAMES {
            let bare = builtin(name).expect("known").expect("compiles");
            let prefixed = load(&format!("builtin:{name}")).expect("compiles");
            assert_eq!(bare.id, prefixed.id);
            assert!(!bare.hooks.is_empty());
        }
    }

    #[test]
    fn bundled_recipes_write_this_version_and_a_spec_file_unknown() {
        let demo = include_str!("../data/demo_model.py");
        let from_file = Recipe::from_toml_with("sglang_hs_dump.toml", SGLANG_HS_DUMP, &dump_code()).expect("compiles");
        assert_eq!(from_file.vars[VERSION_VAR], "unknown");
        let models = models_recipe().expect("compiles");
        assert_eq!(models.vars[VERSION_VAR], PYSPLICE_VERSION);
        for (recipe, version) in [
            (
                builtin("sglang-hs-dump").expect("known").expect("compiles"),
                PYSPLICE_VERSION,
            ),
            (from_file, "unknown"),
        ] {
            let patched = pysplice::apply(&recipe, pysplice::SourceFile::new("deepseek_v2.py", demo)).expect("applies");
            let line = format!("pysplice_version=\"{version}\",");
            assert_eq!(patched.output().matches(&line).count(), 1, "{version}");
        }
    }

    #[test]
    fn an_unknown_builtin_is_a_spec_error_naming_the_known_ones() {
        let err = load("builtin:nope").unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Spec { .. }), "{err:?}");
        assert!(err.to_string().contains("builtin:sglang-hs-dump-models"), "{err}");
        assert!(builtin("nope").is_none());
    }
}

#[cfg(test)]
mod bundled_tests;
