//! The bundled specs pass every check of [`Recipe::from_toml`], so that loading them by name
//! may skip parsing their code (see [`Recipe::from_bundled_toml`]).

use super::{builtin, BUILTIN_NAMES, SGLANG_HS_DUMP, SGLANG_HS_DUMP_MODELS};
use pysplice::Recipe;

#[test]
fn bundled_specs_compile_with_every_check() {
    for (name, text) in [
        ("recipes/sglang_hs_dump.toml", SGLANG_HS_DUMP),
        ("recipes/sglang_hs_dump_models.toml", SGLANG_HS_DUMP_MODELS),
    ] {
        let checked = Recipe::from_toml(name, text).unwrap_or_else(|err| panic!("{name}: {err}"));
        let bundled = Recipe::from_bundled_toml(name, text).expect("compiles");
        assert_eq!(format!("{checked:?}"), format!("{bundled:?}"), "{name}");
    }
    for name in BUILTIN_NAMES {
        assert!(matches!(builtin(name), Some(Ok(_))), "{name}");
    }
}

#[test]
fn only_the_code_probe_is_left_out_for_a_bundled_spec() {
    let spec = |code: &str, extra: &str| {
        format!(
            "[recipe]\nid = \"r\"\nsummary = \"S\"\n[[hook]]\nid = \"h\"\nsummary = \"S\"\nin = \"f\"\nat = \"start\"\ncode = \"{code}\"\n{extra}"
        )
    };
    let broken = spec("x = (", "");
    let err = Recipe::from_toml("r.toml", &broken).unwrap_err();
    assert!(err.to_string().contains("code does not parse as Python"), "{err}");
    assert!(Recipe::from_bundled_toml("r.toml", &broken).is_ok());
    // Every other check still runs.
    let unknown = spec("x = 1", "bogus = 1\n");
    assert!(Recipe::from_bundled_toml("r.toml", &unknown).is_err());
    let undefined = spec("x = {nothing}", "");
    assert!(Recipe::from_bundled_toml("r.toml", &undefined).is_err());
}
