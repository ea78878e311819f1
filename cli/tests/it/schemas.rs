//! The JSON Schemas under `schemas/` are generated from the Rust types: this test fails when a
//! checked-in schema is stale. `PYSPLICE_UPDATE_SCHEMAS=1 cargo test -p pysplice-cli --test it schemas` rewrites them.

use std::path::PathBuf;

fn check(name: &str, schema: &schemars::schema::RootSchema) {
    let path = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../schemas")).join(name);
    let fresh = format!(
        "{}\n",
        serde_json::to_string_pretty(schema).expect("a schema serializes")
    );
    if std::env::var_os("PYSPLICE_UPDATE_SCHEMAS").is_some() {
        std::fs::write(&path, &fresh).expect("schemas/ is writable");
        return;
    }
    let stored = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        stored == fresh,
        "{} is stale: run `PYSPLICE_UPDATE_SCHEMAS=1 cargo test -p pysplice-cli --test it schemas` and commit it",
        path.display()
    );
}

#[test]
fn output_schema_is_current() {
    check("output.schema.json", &pysplice_programs::contract::output_schema());
}

#[test]
fn hook_spec_schema_is_current() {
    check("hook-spec.schema.json", &pysplice::Recipe::json_schema());
}

#[test]
fn output_schema_names_the_version_and_every_command() {
    let text = serde_json::to_string(&pysplice_programs::contract::output_schema()).expect("serializes");
    assert_eq!(pysplice_programs::contract::SCHEMA_VERSION, 1);
    for command in [
        "apply",
        "check",
        "revert",
        "matrix",
        "sglang-hs-dump",
        "locate",
        "graph",
        "reach",
        "forwards",
    ] {
        assert!(text.contains(&format!("\"{command}\"")), "{command} missing");
    }
}

/// The checked-in spec schema.
fn stored_spec_schema() -> Vec<u8> {
    let path = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../schemas/hook-spec.schema.json"));
    std::fs::read(path).expect("schemas/hook-spec.schema.json")
}

#[test]
fn pysplice_schema_prints_the_checked_in_spec_schema() {
    let out = std::process::Command::new(crate::common::program("pysplice"))
        .arg("schema")
        .output()
        .expect("pysplice runs");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        out.stdout,
        stored_spec_schema(),
        "`pysplice schema` differs from schemas/"
    );
    let schema: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the output is JSON");
    assert_eq!(schema["$schema"], "http://json-schema.org/draft-07/schema#");
    assert!(schema["properties"]["hook"].is_object(), "{schema:#}");
}

/// The wheel's data folder holds the schema (`[tool.maturin] data` in cli/pyproject.toml) as a
/// link to the checked-in one: a copy left there would go stale.
#[test]
fn the_wheel_data_folder_holds_the_spec_schema() {
    let data = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/wheel-data/data/share/pysplice"));
    let file = data.join("hook-spec.schema.json");
    let meta = std::fs::symlink_metadata(&file).expect("the schema in the wheel's data folder");
    assert!(
        meta.file_type().is_symlink(),
        "{} must link to schemas/",
        file.display()
    );
    assert_eq!(std::fs::read(&file).expect("the link resolves"), stored_spec_schema());
    let pyproject = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/pyproject.toml")).unwrap();
    assert!(pyproject.contains("data = \"wheel-data\""), "{pyproject}");
}

/// `pysplice schema --path` names `PREFIX/share/pysplice/hook-spec.schema.json` for a program at
/// `PREFIX/bin/pysplice` (as the wheel lays them out), and exits 1 with advice where there is none.
#[test]
fn pysplice_schema_path_names_the_installed_copy() {
    let program = crate::common::program("pysplice");
    // No copy beside the program cargo built.
    let out = std::process::Command::new(&program)
        .args(["schema", "--path"])
        .output()
        .expect("pysplice runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("pysplice schema > hook-spec.schema.json"), "{stderr}");

    // An installed layout: the program linked (or copied) into PREFIX/bin.
    let prefix = tempfile::Builder::new()
        .prefix("schema-prefix")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("a temporary prefix");
    let bin = prefix.path().join("bin");
    let share = prefix.path().join("share/pysplice");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&share).unwrap();
    let installed = bin.join("pysplice");
    if std::fs::hard_link(&program, &installed).is_err() {
        std::fs::copy(&program, &installed).expect("the program copies");
    }
    let schema = share.join("hook-spec.schema.json");
    std::fs::write(&schema, stored_spec_schema()).unwrap();
    let out = std::process::Command::new(&installed)
        .args(["schema", "--path"])
        .output()
        .expect("the installed program runs");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let printed = String::from_utf8(out.stdout).expect("a UTF-8 path");
    assert_eq!(
        std::fs::canonicalize(printed.trim_end()).unwrap(),
        std::fs::canonicalize(&schema).unwrap()
    );
}
