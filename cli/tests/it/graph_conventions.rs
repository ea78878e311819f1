//! `pysplice graph`, `reach` and `forwards` take their entry classes and draft markers from a
//! recipe's `[conventions]` (`--spec`) or from `--entry-list` / `--draft-marker`, the flags over
//! the recipe; with neither, no class is an entry and none a draft.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

const MODEL: &str = "\
class Inner:
    def forward(self):
        return 1


class Top:
    def __init__(self):
        self.model = Inner()

    def forward(self):
        return self.model.forward()


class TopSpeculative(Top):
    pass


Registered = [Top, TopSpeculative]
# SGLang's name for the list: nothing to a scan that is not told so.
EntryClass = Top
";

/// A package of one model file (`pkg`), and a recipe file beside it naming `entry_list`.
fn package(entry_list: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let pkg = dir.path().join("pkg");
    std::fs::create_dir(&pkg).unwrap();
    std::fs::write(pkg.join("__init__.py"), "").unwrap();
    std::fs::write(pkg.join("model.py"), MODEL).unwrap();
    let recipe = format!(
        "[recipe]\nid = \"r\"\nsummary = \"S\"\n[conventions]\nentry-list = \"{entry_list}\"\n\
         draft-markers = [\"speculative\"]\n[[hook]]\nid = \"h\"\nsummary = \"S\"\nensure-imports = [\"logging\"]\n"
    );
    std::fs::write(dir.path().join("recipe.toml"), recipe).unwrap();
    dir
}

fn pysplice(dir: &Path, args: &[&str]) -> Output {
    Command::new(common::program("pysplice"))
        .arg(args[0])
        .arg(dir.join("pkg"))
        .args(&args[1..])
        .output()
        .expect("pysplice runs")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn without_a_recipe_or_a_flag_no_class_is_an_entry() {
    let dir = package("Registered");
    let out = pysplice(dir.path(), &["graph"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains(" 0 entry classes"), "{}", text(&out));
    let out = pysplice(dir.path(), &["graph", "--target", "Inner"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
}

#[test]
fn the_entry_list_flag_names_the_entry_classes() {
    let dir = package("Registered");
    let out = pysplice(dir.path(), &["graph", "--entry-list", "Registered"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains(" 2 entry classes"), "{}", text(&out));
    let out = pysplice(
        dir.path(),
        &["graph", "--entry-list", "Registered", "--target", "Inner"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("Top -model-> Inner"), "{}", text(&out));
    // No draft markers without a recipe or --draft-marker.
    let out = pysplice(
        dir.path(),
        &["graph", "--entry-list", "Registered", "--entry", "TopSpeculative"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(!text(&out).contains("[draft]"), "{}", text(&out));
    let out = pysplice(
        dir.path(),
        &[
            "graph",
            "--entry-list",
            "Registered",
            "--draft-marker",
            "SPECULATIVE",
            "--entry",
            "TopSpeculative",
        ],
    );
    assert!(
        text(&out).contains("TopSpeculative ⊂ Top  model.py:14 [draft]"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_recipes_conventions_apply_and_the_flags_replace_them() {
    let dir = package("Registered");
    let recipe = dir.path().join("recipe.toml");
    let spec = recipe.to_str().unwrap();
    let out = pysplice(dir.path(), &["graph", "--spec", spec, "--target", "Inner"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("Top -model-> Inner"), "{}", text(&out));
    let out = pysplice(dir.path(), &["graph", "--spec", spec, "--entry", "TopSpeculative"]);
    assert!(text(&out).contains("[draft]"), "{}", text(&out));
    let out = pysplice(
        dir.path(),
        &[
            "graph",
            "--spec",
            spec,
            "--draft-marker",
            "nothing",
            "--entry",
            "TopSpeculative",
        ],
    );
    assert!(!text(&out).contains("[draft]"), "{}", text(&out));
    // A recipe naming another list: no entries, until the flag names the right one.
    let other = package("Elsewhere");
    let spec = other.path().join("recipe.toml");
    let spec = spec.to_str().unwrap();
    let out = pysplice(other.path(), &["graph", "--spec", spec]);
    assert!(text(&out).contains(" 0 entry classes"), "{}", text(&out));
    let out = pysplice(other.path(), &["graph", "--spec", spec, "--entry-list", "Registered"]);
    assert!(text(&out).contains(" 2 entry classes"), "{}", text(&out));
    // reach and forwards read them the same way.
    let out = pysplice(
        other.path(),
        &["reach", "--spec", spec, "--entry-list", "Registered", "Inner.forward"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = pysplice(other.path(), &["forwards", "--entry-list", "Registered", "Top"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn a_bad_recipe_or_list_name_is_a_usage_error() {
    let dir = package("Registered");
    for args in [
        &["graph", "--spec", "/no/such/recipe.toml"][..],
        &["graph", "--spec", "builtin:no-such-recipe"],
        &["graph", "--entry-list", "1st"],
        &["graph", "--entry-list", "a\u{1b}]0;x\u{7}"],
        &["reach", "--entry-list", "", "Inner.forward"],
        &["forwards", "--spec", "/no/such/recipe.toml", "Top"],
    ] {
        let out = pysplice(dir.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(
            !out.stderr.iter().any(|b| *b == 0x1b || *b == 0x07),
            "{args:?}: {}",
            text(&out)
        );
    }
}
