//! `graph`, `reach` and `forwards`.

use std::path::PathBuf;

/// Arguments of `graph`.
#[derive(clap::Args)]
pub struct GraphArgs {
    /// The package directory.
    pub dir: PathBuf,
    /// Start from this entry class.
    #[arg(long)]
    pub entry: Option<String>,
    /// Show chains that end at this class.
    #[arg(long)]
    pub target: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `reach`.
#[derive(clap::Args)]
pub struct ReachArgs {
    /// The package directory.
    pub dir: PathBuf,
    /// A method path such as `DeepseekV2Model.forward`.
    pub path: String,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `forwards`.
#[derive(clap::Args)]
pub struct ForwardsArgs {
    /// The package directory.
    pub dir: PathBuf,
    /// The wrapper class.
    pub wrapper: String,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs `graph`.
pub fn graph(_args: &GraphArgs) -> u8 {
    eprintln!("graph: not implemented yet");
    2
}

/// Runs `reach`.
pub fn reach(_args: &ReachArgs) -> u8 {
    eprintln!("reach: not implemented yet");
    2
}

/// Runs `forwards`.
pub fn forwards(_args: &ForwardsArgs) -> u8 {
    eprintln!("forwards: not implemented yet");
    2
}
