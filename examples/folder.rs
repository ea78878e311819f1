//! Apply a recipe to a package, as `pysplice apply DIR` does: every file the recipe targets is
//! planned, applied and verified in memory, then all are written or none; then revert it.
//!
//! ```text
//! cargo run --example folder
//! ```

use std::path::Path;
use std::process::ExitCode;

use pysplice::batch::{Batch, Op, RunOptions};
use pysplice::{report, Recipe};

const RECIPE: &str = r#"
[recipe]
id = "trace"
summary = "Trace forward calls"

[[hook]]
id = "imports"
summary = "Added imports"
ensure-imports = ["logging"]

[[hook]]
id = "log"
summary = "Logged each call"
in = "Model.forward"
at = "start"
code = "logging.debug('forward %s', {param.1})"
"#;

const MODEL: &str = "class Model:\n    def forward(self, x):\n        return x * 2\n";

/// A package `pkg/`: the model, a module without it, and a test that defines a `Model` too.
fn package(root: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(root.join("pkg/tests"))?;
    std::fs::write(root.join("pkg/__init__.py"), "")?;
    std::fs::write(root.join("pkg/model.py"), MODEL)?;
    std::fs::write(root.join("pkg/util.py"), "def helper():\n    return 1\n")?;
    std::fs::write(root.join("pkg/tests/test_model.py"), MODEL)
}

fn main() -> ExitCode {
    // An error returned from `main` would be printed in its `Debug` form (`Error(Parts { kind:
    // ...`); its `Display` form is the message: `file:line:column: message [hook id]`.
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    package(dir.path())?;
    let folder = dir.path().join("pkg");
    // [folder run]
    let recipe = Recipe::from_toml("trace.toml", RECIPE)?;
    // The files of the folder that define a target (or carry the recipe's markers), tests left out.
    let options = RunOptions {
        exclude: vec!["tests/*".to_string()],
    };
    let paths = [folder.clone()];
    let batch = Batch::run_with(&recipe, &paths, Op::Apply, &options);
    if let Some(err) = batch.first_error() {
        return Err(err.clone().into());
    }
    for run in &batch.files {
        for outcome in &run.outcomes {
            let name = run.path.strip_prefix(&folder).unwrap_or(&run.path);
            println!("{}: {}", name.display(), report::outcome_line(outcome));
        }
    }
    // The run's diff, each file named relative to the folder (`Patched::diff` names it by the
    // path it was read from; `with_name` gives it another).
    let mut diff = String::new();
    for (file, patched) in batch.successes() {
        let name = file.path().strip_prefix(&folder).unwrap_or(file.path());
        diff += &patched.clone().with_name(name.to_string_lossy()).diff();
    }
    print!("{diff}");
    assert!(diff.starts_with("--- a/model.py\n+++ b/model.py\n"));
    // Written all or none, each file only if it is still as it was read; a failed file is an
    // error naming it (`WriteError::Failed`), and nothing is written.
    let written = batch.write()?;
    assert_eq!(written.len(), 1);
    // `__init__.py` and `util.py` define no target: read, left as they are.
    assert_eq!(batch.not_targeted.len(), 2);

    // Reverting the folder gives back the original bytes.
    Batch::run(&recipe, &paths, Op::Revert).write()?;
    // [end]
    assert_eq!(std::fs::read_to_string(folder.join("model.py"))?, MODEL);
    assert_eq!(std::fs::read_to_string(folder.join("tests/test_model.py"))?, MODEL);
    println!("reverted: the original bytes are back");
    Ok(())
}
