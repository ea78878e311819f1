//! Scan a small package and ask which entry classes reach a method, through which attributes.
//!
//! ```text
//! cargo run --example reach
//! ```

use std::process::ExitCode;

use pysplice::project::{Project, ScanOptions};
use pysplice::Conventions;

fn main() -> ExitCode {
    // An error returned from `main` would be printed in its `Debug` form; its `Display` form is
    // the message.
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
    let package = dir.path().join("pkg");
    std::fs::create_dir_all(&package)?;
    std::fs::write(package.join("__init__.py"), "")?;
    std::fs::write(
        package.join("inner.py"),
        "class Inner:\n    def forward(self, x):\n        return x\n",
    )?;
    std::fs::write(
        package.join("outer.py"),
        "from .inner import Inner\n\nclass Outer:\n    def __init__(self):\n        self.inner = Inner()\n\nEntryClass = Outer\n",
    )?;
    // The package's own convention: the module-level `EntryClass` lists its entry classes.
    let options = ScanOptions::default().with_conventions(Conventions::default().with_entry_list("EntryClass"));
    let project = Project::scan_with(&package, &options)?;
    let reach = project.reach("Inner.forward")?;
    for entry in &reach.entries {
        println!("{}", entry.chain);
    }
    Ok(())
}
