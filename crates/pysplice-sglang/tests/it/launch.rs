//! The server flags of the dump, checked release by release against the facts read from each
//! SGLang release's own server arguments (`recipes/sglang_launch.json`, written by
//! `scripts/sglang-launch-flags.py`), through the library (`launch_flags.rs`: the program
//! prints the same).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use pysplice_sglang::launch::{self as sglang, Chunking, ReleaseFacts, ReleaseVersion};

const MANIFEST: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// Every flag printed exists in the release; every flag the dump needs there is printed; the
/// warmup note comes exactly where `--skip-server-warmup` is missing.
#[track_caller]
fn check(facts: &ReleaseFacts, flags: &[String], notes: &[String]) {
    let v = &facts.version;
    let printed = |flag: &str| flags.iter().any(|f| f == flag);
    for (i, flag) in flags.iter().enumerate() {
        if flag.starts_with("--") {
            assert!(
                facts.has(flag),
                "{v}: {flag} is printed but the release has no such flag"
            );
        } else {
            assert_eq!(flag, "-1", "{v}: a value other than -1 in {flags:?}");
            assert_eq!(flags[i - 1], "--chunked-prefill-size", "{v}: {flags:?}");
        }
    }
    assert!(printed("--disable-cuda-graph"), "{v}: {flags:?}");
    assert!(printed("--disable-radix-cache"), "{v}: {flags:?}");
    let chunking_off = flags.windows(2).any(|w| w == ["--chunked-prefill-size", "-1"]);
    // chunked prefill is turned off only where it is on by default and the dump cannot stitch
    // a prompt's passes into one sample
    let stitched = matches!(facts.chunking(), Chunking::Stitched | Chunking::StitchedLate);
    assert_eq!(chunking_off, facts.chunked_prefill_on && !stitched, "{v}: {flags:?}");
    if facts.piecewise_cuda_graph_on && !facts.disable_cuda_graph_covers_piecewise {
        assert!(printed("--disable-piecewise-cuda-graph"), "{v}: {flags:?}");
    }
    assert_eq!(
        printed("--skip-server-warmup"),
        facts.has("--skip-server-warmup"),
        "{v}"
    );
    let warmup_note = notes.iter().any(|n| n.contains("warmup request"));
    assert_eq!(warmup_note, !facts.has("--skip-server-warmup"), "{v}: {notes:?}");
    let alias_note = notes.iter().any(|n| n.contains("--disable-cuda-graph is deprecated"));
    assert_eq!(
        alias_note,
        facts.is_deprecated("--disable-cuda-graph"),
        "{v}: {notes:?}"
    );
}

fn dump_releases() -> Vec<&'static ReleaseFacts> {
    let releases: Vec<_> = sglang::dump_releases().collect();
    // 123 releases with deepseek_v2.py were on PyPI when the data was first written.
    assert!(releases.len() >= 123, "{} releases", releases.len());
    releases
}

#[test]
fn every_release_gets_its_flags_from_the_library() {
    for facts in dump_releases() {
        let release = ReleaseVersion::parse(&facts.version).expect("the data's versions parse");
        let launch = sglang::launch(Some(&release));
        assert_eq!(launch.basis, Some(facts.version.as_str()));
        let flags: Vec<String> = launch.flags.iter().map(|f| f.to_string()).collect();
        check(facts, &flags, &launch.notes);
    }
}

/// The rules written by hand before the data existed, for the releases they were checked on.
fn hand_written(v: &ReleaseVersion) -> Vec<&'static str> {
    let at_least = |text: &str| *v >= ReleaseVersion::parse(text).unwrap();
    let mut flags = vec!["--disable-cuda-graph"];
    if at_least("0.5.10") && !at_least("0.5.14") {
        flags.push("--disable-piecewise-cuda-graph");
    }
    flags.push("--disable-radix-cache");
    if at_least("0.2.15") && !at_least("0.4.6") {
        flags.extend(["--chunked-prefill-size", "-1"]);
    }
    if at_least("0.4.10") {
        flags.push("--skip-server-warmup");
    }
    if at_least("0.3.6") {
        flags.push("--disable-overlap-schedule");
    }
    flags
}

/// The data agrees with the old hand-written table on the pinned releases, and across all
/// releases differs only where that table was wrong (chunked prefill on by default in
/// 0.2.13 - 0.2.14.post2) or too careful (`--skip-server-warmup` already in 0.4.9.x).
#[test]
fn data_agrees_with_the_hand_written_table() {
    let too_careful = |v: &str| v == "0.4.9" || v.starts_with("0.4.9.post");
    for version in common::pinned_versions() {
        let release = ReleaseVersion::parse(&version).unwrap();
        let mut wanted = hand_written(&release);
        if too_careful(&version) {
            // The data is right here: 0.4.9 has the flag (its server_args.py defines it).
            let at = wanted.iter().position(|f| *f == "--disable-overlap-schedule").unwrap();
            wanted.insert(at, "--skip-server-warmup");
        }
        assert_eq!(sglang::launch(Some(&release)).flags, wanted, "{version}");
    }
    let mut differ = Vec::new();
    for facts in dump_releases() {
        let release = ReleaseVersion::parse(&facts.version).unwrap();
        if facts.flags_for_dump() != hand_written(&release) {
            differ.push(facts.version.as_str());
        }
    }
    let expected = [
        "0.2.13",
        "0.2.14",
        "0.2.14.post1",
        "0.2.14.post2",
        "0.4.9",
        "0.4.9.post1",
        "0.4.9.post2",
        "0.4.9.post3",
        "0.4.9.post4",
        "0.4.9.post5",
        "0.4.9.post6",
    ];
    assert_eq!(differ, expected);
}

/// The flag table of docs/sglang.md is the one the data gives.
#[test]
fn readme_flag_table_is_the_datas() {
    let readme = std::fs::read_to_string(Path::new(MANIFEST).join("docs/sglang.md")).unwrap();
    let start = readme
        .find("| SGLang | flags |")
        .expect("docs/sglang.md has the flag table");
    let end = readme[start..].find("\n\n").map_or(readme.len(), |n| start + n + 1);
    assert_eq!(
        &readme[start..end],
        sglang::flag_table(),
        "docs/sglang.md's flag table is stale: replace it with the output of `python3 scripts/sglang-launch-flags.py --table`"
    );
}

/// The folder of cached SGLang archives: `$PYSPLICE_WHEELS` or `target/sglang-wheels`.
fn wheels() -> PathBuf {
    std::env::var_os("PYSPLICE_WHEELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(MANIFEST).join("target/sglang-wheels"))
}

/// The script, run on the pinned releases' archives (fetched by scripts/fetch-corpus.sh), reads
/// the facts that are checked in.
#[test]
fn script_reads_the_checked_in_facts_from_the_pinned_archives() {
    let versions = common::pinned_versions();
    let wheels = wheels();
    for version in &versions {
        let found = std::fs::read_dir(&wheels)
            .unwrap_or_else(|err| panic!("{}: {err}; run `bash scripts/fetch-corpus.sh` first", wheels.display()))
            .filter_map(Result::ok)
            .any(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("sglang-{version}-"))
            });
        assert!(
            found,
            "no archive of sglang {version} in {}: run `bash scripts/fetch-corpus.sh`",
            wheels.display()
        );
    }
    let output = Command::new("python3")
        .arg(Path::new(MANIFEST).join("scripts/sglang-launch-flags.py"))
        .args(["--offline", "--cache"])
        .arg(&wheels)
        .arg("--versions")
        .args(&versions)
        .env("PYSPLICE_WHEELS", &wheels)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let read: Vec<ReleaseFacts> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(read.len(), versions.len());
    for facts in read {
        let release = ReleaseVersion::parse(&facts.version).unwrap();
        assert_eq!(Some(&facts), sglang::facts(&release), "{}", facts.version);
    }
}
