//! The recipes' Python is the `python/hs_dump` package: `python/recipe_code.py` (which writes the
//! package's code into the TOML files) finds nothing to change.

use std::path::Path;
use std::process::Command;

#[test]
fn the_recipes_carry_the_code_of_the_hs_dump_package() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/recipe_code.py");
    let output = Command::new("python3").arg(&script).output().expect("python3 runs");
    assert!(
        output.status.success(),
        "{} found the recipes stale (run it with --write after editing python/hs_dump):\n{}{}",
        script.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
