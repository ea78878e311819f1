//! `pysplice locate FILE [PATH] [--json]`.

/// Arguments of `locate`.
#[derive(clap::Args)]
pub struct Args {
    /// The Python file.
    pub file: std::path::PathBuf,
    /// A definition path such as `Class.method` (`#N` picks one of several).
    pub path: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs `locate`; returns the exit code.
pub fn run(_args: &Args) -> u8 {
    eprintln!("locate: not implemented yet");
    2
}
