//! Every program answers `--version` with its name and the crate's version, and exits 0.
//! The installed commands (`cargo install --path cli`, the wheel) are the same sources under their
//! installed names; `scripts/check-install.sh` checks those.

use crate::common;

use std::process::Command;

fn version_line(example: &str) -> (i32, String) {
    let out = Command::new(common::program(example))
        .arg("--version")
        .output()
        .expect("the example runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn every_program_prints_its_version() {
    let version = env!("CARGO_PKG_VERSION");
    for example in ["pysplice", "sglang-hs-dump", "pysplice-lsp", "sglang-hs-inspect"] {
        let (code, stdout) = version_line(example);
        assert_eq!(code, 0, "{example} --version exit code");
        assert_eq!(stdout.trim_end(), format!("{example} {version}"), "{example} --version");
    }
}

#[test]
fn the_language_server_refuses_unknown_arguments_and_accepts_stdio() {
    let lsp = common::program("pysplice_lsp");
    let out = Command::new(&lsp).arg("--bogus").output().expect("the server runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unexpected argument '--bogus'"));
    // `--stdio` starts the server: with stdin closed at once it ends without `shutdown` (exit 1),
    // not with the usage error (exit 2).
    let out = Command::new(&lsp)
        .arg("--stdio")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("the server runs");
    assert_ne!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}
