//! The workspace's commands, for the tests of a crate other than the one whose binaries they are.
//!
//! Cargo gives a test the path of a binary of its own package only (`CARGO_BIN_EXE_<name>`). The
//! SGLang programs are modules of `pysplice-sglang`, but their binaries belong to `pysplice-cli`,
//! whose binaries make the one wheel and the one `cargo install --path cli`. So the tests of
//! `pysplice-sglang` take them where cargo put them, beside the test's own folder
//! (`target/<profile>/`), and refuse one that is missing or older than a source file it was built
//! from (cargo's dep-info file beside it lists them): never a stale binary. `cargo test` at the
//! root builds them with the test binaries; a test run of the crate alone needs
//! `cargo build -p pysplice-cli --bins` first. No test runs cargo itself.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The command `name` of `pysplice-cli` (`pysplice`, `pysplice-lsp`, `sglang-hs-dump`,
/// `sglang-hs-send`, `sglang-hs-inspect`; the underscore spellings too), as cargo last built it.
///
/// # Panics
/// When the binary is missing, or a source file it was built from changed since: the message
/// says how to build it.
#[must_use]
pub fn program(name: &str) -> PathBuf {
    let name = name.replace('_', "-");
    let exe = std::env::current_exe().expect("the test knows its path");
    // target/<profile>/deps/<test>: the binaries are in target/<profile>/.
    let folder = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test lies in target/<profile>/deps/");
    let program = folder.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    let build = "`cargo build -p pysplice-cli --bins` builds it (`cargo test` at the root does too)";
    let built = modified(&program).unwrap_or_else(|| panic!("{} is missing: {build}", program.display()));
    if let Some(source) = newer_source(&folder.join(format!("{name}.d")), built) {
        panic!("{} is older than {}: {build}", program.display(), source.display());
    }
    program
}

/// A file named in the dep-info file `deps` (`target: source source ...`, spaces in names
/// escaped) modified after `built`, or missing; none when the file cannot be read (the
/// binary's own time is all there is to go by).
fn newer_source(deps: &Path, built: SystemTime) -> Option<PathBuf> {
    let text = std::fs::read_to_string(deps).ok()?;
    let line = text.lines().next()?;
    let (_, sources) = line.split_once(": ")?;
    let mut sources_of = Vec::new();
    let mut current = String::new();
    let mut chars = sources.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => current.extend(chars.next()),
            ' ' => sources_of.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
    }
    sources_of.push(current);
    sources_of
        .into_iter()
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .find(|source| modified(source).is_none_or(|time| time > built))
}

/// When `path` was last modified; none when it is missing.
fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}
