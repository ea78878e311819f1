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
    check("output.schema.json", &pysplice_cli::contract::output_schema());
}

#[test]
fn hook_spec_schema_is_current() {
    check("hook-spec.schema.json", &pysplice::spec::spec_schema());
}

#[test]
fn output_schema_names_the_version_and_every_command() {
    let text = serde_json::to_string(&pysplice_cli::contract::output_schema()).expect("serializes");
    assert_eq!(pysplice_cli::contract::SCHEMA_VERSION, 1);
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
