//! `apply`, `check`, `revert` and `matrix`.

use std::path::PathBuf;

/// Arguments shared by `check` and `revert`.
#[derive(clap::Args)]
pub struct FilesArgs {
    /// The recipe (TOML hook spec).
    #[arg(long)]
    pub spec: PathBuf,
    /// Python files.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `apply`.
#[derive(clap::Args)]
pub struct ApplyArgs {
    #[command(flatten)]
    pub files: FilesArgs,
    /// Print a unified diff and write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// Arguments of `matrix`.
#[derive(clap::Args)]
pub struct MatrixArgs {
    /// The recipe (TOML hook spec).
    #[arg(long)]
    pub spec: PathBuf,
    /// Source trees, one per release.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs `apply`.
pub fn apply(_args: &ApplyArgs) -> u8 {
    eprintln!("apply: not implemented yet");
    2
}

/// Runs `check`.
pub fn check(_args: &FilesArgs) -> u8 {
    eprintln!("check: not implemented yet");
    2
}

/// Runs `revert`.
pub fn revert(_args: &FilesArgs) -> u8 {
    eprintln!("revert: not implemented yet");
    2
}

/// Runs `matrix`.
pub fn matrix(_args: &MatrixArgs) -> u8 {
    eprintln!("matrix: not implemented yet");
    2
}
