//! The bundled specs pass every check of [`Recipe::from_toml`], so that loading them by name
//! may skip parsing their code (see [`Recipe::from_bundled_toml`]).

use super::{builtin, dump_code, BUILTIN_NAMES, DUMP_CODE, SGLANG_HS_DUMP, SGLANG_HS_DUMP_MODELS};
use pysplice::Recipe;

#[test]
fn bundled_specs_compile_with_every_check() {
    for (name, text) in [
        ("python/pysplice_sglang/dump/sglang_hs_dump.toml", SGLANG_HS_DUMP),
        (
            "python/pysplice_sglang/dump/sglang_hs_dump_models.toml",
            SGLANG_HS_DUMP_MODELS,
        ),
    ] {
        let checked = Recipe::from_toml_with(name, text, &dump_code()).unwrap_or_else(|err| panic!("{name}: {err}"));
        let bundled = Recipe::from_bundled_toml_with(name, text, &dump_code()).expect("compiles");
        assert_eq!(format!("{checked:?}"), format!("{bundled:?}"), "{name}");
    }
    for name in BUILTIN_NAMES {
        assert!(matches!(builtin(name), Some(Ok(_))), "{name}");
    }
}

/// Every Python file of the dump package is compiled in (a recipe may name any of them), and
/// nothing else is: the recipes' files on disk and in the programs are the same.
#[test]
fn the_compiled_in_code_is_the_dump_package() {
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("python/pysplice_sglang/dump");
    let mut on_disk: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".py") && name != "__init__.py")
        .collect();
    on_disk.sort();
    let compiled: Vec<&str> = DUMP_CODE.iter().map(|(name, _)| *name).collect();
    assert_eq!(compiled, on_disk);
    for (name, text) in DUMP_CODE {
        assert_eq!(std::fs::read_to_string(folder.join(name)).unwrap(), *text, "{name}");
    }
    // Read from the folder (as `pysplice apply --spec FILE` reads them), the recipes are the
    // bundled ones.
    for (file, text) in [
        ("sglang_hs_dump.toml", SGLANG_HS_DUMP),
        ("sglang_hs_dump_models.toml", SGLANG_HS_DUMP_MODELS),
    ] {
        let from_disk = Recipe::from_file(&folder.join(file)).unwrap_or_else(|err| panic!("{file}: {err}"));
        let bundled = Recipe::from_toml_with(file, text, &dump_code()).unwrap();
        let code = |r: &Recipe| r.hooks.iter().map(|h| format!("{:?}", h.action)).collect::<Vec<_>>();
        assert_eq!(code(&from_disk), code(&bundled), "{file}");
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

/// The notes `pysplice apply --spec builtin:...` prints after a patch are short, each one line,
/// with a pointer to the page that has the detail; no bundled recipe warns.
#[test]
fn the_notes_are_short_and_point_to_the_detail() {
    for name in BUILTIN_NAMES {
        let recipe = builtin(name).expect("bundled").expect("compiles");
        let words: usize = recipe.notes.iter().map(|n| n.split_whitespace().count()).sum();
        assert!(words <= 120, "{name}: {words} words of notes");
        assert_eq!(recipe.warnings(), [], "{name}");
        let pointer = recipe.notes.iter().find_map(|n| {
            n.split_whitespace()
                .find(|w| w.starts_with("docs/"))
                .map(|w| w.trim_end_matches(['.', ',', ';', ')']))
        });
        if let Some(page) = pointer {
            let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join(page);
            assert!(path.is_file(), "{name}: {} is no file", path.display());
        } else {
            assert!(recipe.notes.is_empty(), "{name}: notes without a pointer to docs/");
        }
    }
}
