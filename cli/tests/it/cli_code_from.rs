//! `pysplice apply --spec FILE` with a recipe whose hook takes its code from a Python file
//! beside it (`code-from`): the code is found in the recipe's folder, wherever the program runs;
//! a missing code file is a bad spec naming the recipe's line, and nothing is written.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use pysplice::{CodeFolder, Recipe, SourceFile};

const RECIPE: &str = r#"[recipe]
id = "count"
summary = "Count calls"

[[hook]]
id = "count"
summary = "Counted calls"
in = "Model.forward"
at = "start"
code-from = [{ file = "hooks/count.py", body = "count" }]
"#;

const HOOKS: &str = "def count(self, x):\n    self.calls = getattr(self, 'calls', 0) + 1\n    self.last = x\n";

const MODEL: &str = "class Model:\n    def forward(self, hidden):\n        return hidden\n";

/// A folder with `recipes/r.toml` (`recipe`), `recipes/hooks/count.py` and `model.py`.
fn folder(recipe: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp folder");
    std::fs::create_dir_all(dir.path().join("recipes/hooks")).expect("folders");
    std::fs::write(dir.path().join("recipes/r.toml"), recipe).expect("recipe");
    std::fs::write(dir.path().join("recipes/hooks/count.py"), HOOKS).expect("hooks");
    std::fs::write(dir.path().join("model.py"), MODEL).expect("model");
    dir
}

/// `pysplice apply --spec recipes/r.toml model.py`, run in `dir` (another folder than the
/// recipe's).
fn apply(dir: &Path) -> Output {
    Command::new(common::program("pysplice"))
        .current_dir(dir)
        .args(["apply", "--spec", "recipes/r.toml", "model.py"])
        .output()
        .expect("the program runs")
}

#[test]
fn apply_takes_the_code_from_the_file_beside_the_recipe() {
    let dir = folder(RECIPE);
    let recipe_path = dir.path().join("recipes/r.toml");
    let recipe = Recipe::from_toml_with("recipes/r.toml", RECIPE, &CodeFolder::of_recipe(&recipe_path))
        .expect("the recipe compiles");
    let expected = pysplice::apply(&recipe, SourceFile::new("model.py", MODEL)).expect("applies");
    let output = apply(dir.path());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let written = std::fs::read_to_string(dir.path().join("model.py")).expect("model");
    assert_eq!(written, expected.output());
    // The body, with the method's own parameter in place of `x`.
    assert!(written.contains("        self.last = hidden\n"), "{written}");
}

#[test]
fn a_missing_code_file_is_a_bad_spec_at_its_entry_and_nothing_is_written() {
    let dir = folder(&RECIPE.replace("hooks/count.py", "hooks/gone.py"));
    let output = apply(dir.path());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("recipes/r.toml:10:14:")
            && stderr.contains("code-from `hooks/gone.py`")
            && stderr.contains("[hook count]"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("model.py")).expect("model"),
        MODEL
    );
}
