//! The server flags `sglang-hs-dump --sglang-version X` prints are the library's for X
//! (`pysplice_sglang::launch`, checked release by release against each release's own server
//! arguments in `crates/pysplice-sglang/tests/it/launch.rs`). The program is run once per
//! distinct answer of the library over every release with `deepseek_v2.py`, not once per release:
//! releases with the same answer take the same path through the program.

use crate::common;

use std::path::Path;
use std::process::Command;

use pysplice_sglang::launch::{self, ReleaseVersion};

const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");

#[test]
fn the_program_prints_the_librarys_flags_for_every_distinct_answer() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("deepseek_v2.py");
    let demo = std::fs::read(Path::new(MANIFEST).join("data/demo_model.py")).unwrap();
    std::fs::write(&file, &demo).unwrap();
    let mut seen: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    let mut releases = 0;
    for facts in launch::dump_releases() {
        releases += 1;
        let release = ReleaseVersion::parse(&facts.version).expect("the data's versions parse");
        let expected = launch::launch(Some(&release));
        let flags: Vec<String> = expected.flags.iter().map(|f| f.to_string()).collect();
        let answer = (flags, expected.notes.clone());
        if seen.contains(&answer) {
            continue;
        }
        let output = Command::new(common::program("sglang-hs-dump"))
            .args(["--json", "--dry-run", "--sglang-version", &facts.version])
            .arg(&file)
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(value["release"]["version"], facts.version.as_str());
        assert_eq!(value["release"]["source"], "--sglang-version");
        let strings = |key: &str| -> Vec<String> {
            let list = value["launch"][key]
                .as_array()
                .unwrap_or_else(|| panic!("launch.{key}"));
            list.iter().map(|s| s.as_str().unwrap().to_string()).collect()
        };
        assert_eq!(strings("flags"), answer.0, "{}", facts.version);
        assert_eq!(strings("notes"), answer.1, "{}", facts.version);
        seen.push(answer);
    }
    assert!(releases >= 123, "{releases} releases");
    // The flags differ across releases (chunked prefill, piecewise CUDA graphs, warmup, aliases).
    assert!(seen.len() >= 5, "{} distinct answers", seen.len());
    assert_eq!(std::fs::read(&file).unwrap(), demo, "a dry run wrote the file");
}
