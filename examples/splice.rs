//! Splice a hook into Python source held in memory, check it is in place, and revert it.
//!
//! ```text
//! cargo run --example splice
//! ```

use std::process::ExitCode;

use pysplice::{apply, revert, Recipe, SourceFile};

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

const SOURCE: &str = "class Model:\n    def forward(self, x):\n        return x * 2\n";

fn main() -> ExitCode {
    // An error returned from `main` would be printed in its `Debug` form; its `Display` form is
    // the message: `file:line:column: message [hook id]`.
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), pysplice::Error> {
    let recipe = Recipe::from_toml("trace.toml", RECIPE)?;
    let patched = apply(&recipe, SourceFile::new("model.py", SOURCE))?;
    print!("{}", patched.output());
    // Applying again changes nothing: every hook is already in place.
    let again = apply(&recipe, SourceFile::new("model.py", patched.output()))?;
    assert_eq!(again.output(), patched.output());
    let back = revert(&recipe, SourceFile::new("model.py", patched.output()))?;
    assert_eq!(back.output(), SOURCE);
    println!("reverted: the original bytes are back");
    Ok(())
}
