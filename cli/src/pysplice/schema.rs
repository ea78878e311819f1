//! `schema`: the JSON Schema of hook specs (the checked-in `schemas/hook-spec.schema.json`), for
//! the `#:schema` line that editors and taplo read, where no checkout is at hand.

use std::path::{Path, PathBuf};

/// Where the wheel installs the schema, under its installation prefix (`sys.prefix`, or
/// `~/.local` for `pip install --user`): next to the `bin/` folder of the commands.
pub const INSTALLED: &str = "share/pysplice/hook-spec.schema.json";

/// Arguments of `schema`.
#[derive(clap::Args)]
pub struct Args {
    /// Print the path of the installed copy (the wheel's `share/pysplice/hook-spec.schema.json`
    /// beside this program's `bin/` folder) instead of the schema; exit 1 when there is none.
    #[arg(long)]
    pub path: bool,
}

/// Prints the schema, or the path of its installed copy.
pub fn run(args: &Args) -> u8 {
    if !args.path {
        out!("{}", text());
        return 0;
    }
    match installed() {
        Some(path) => {
            outln!("{}", pysplice::report::printable(&path.display().to_string()));
            0
        }
        None => {
            errln!(
                "pysplice schema: no installed copy ({INSTALLED} beside this program's bin/ folder; the wheel installs one, \
                 `cargo install` does not): write one with `pysplice schema > hook-spec.schema.json`"
            );
            1
        }
    }
}

/// The schema as checked in under `schemas/`: pretty JSON and a final line break.
fn text() -> String {
    let schema = pysplice::Recipe::json_schema();
    // A schema of plain structs always serializes; the fallback keeps this free of panics.
    let json = serde_json::to_string_pretty(&schema).unwrap_or_else(|_| "{}".to_string());
    format!("{json}\n")
}

/// The installed copy for this program (`PREFIX/bin/pysplice` → `PREFIX/share/pysplice/...`),
/// when it is a regular file.
fn installed() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let prefix = exe.parent()?.parent()?;
    let path = prefix.join(INSTALLED);
    is_file(&path).then_some(path)
}

fn is_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}
