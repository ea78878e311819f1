//! `pysplice`: the general command-line front end of the pysplice library.
//!
//! Exit codes: 0 success, 1 not found / ambiguous / a hook could not be placed / check found work,
//! 2 bad usage or input that cannot be read or parsed, 3 the command succeeded but its report
//! could not be written to standard output (closed pipe, full disk).

#[macro_use]
extern crate pysplice_programs;

pysplice_programs::program_allocator!();

mod graph;
mod locate;
mod matrix;
mod schema;
mod splice;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Parse Python, find definitions by meaning, splice code from declarative hook specs.
#[derive(Parser)]
#[command(name = "pysplice", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the outline of a file, or the definitions at one path.
    Locate(locate::Args),
    /// Apply a recipe to files (in place, or as a diff with --dry-run).
    Apply(splice::ApplyArgs),
    /// Check that every required hook of a recipe is applied and up to date.
    Check(splice::FilesArgs),
    /// Remove what a recipe added, giving back the original bytes.
    Revert(splice::FilesArgs),
    /// Apply a recipe in memory to the same file of several source trees and tabulate the outcomes.
    Matrix(matrix::MatrixArgs),
    /// The class graph of a package: chains from entry classes to a target class.
    Graph(graph::GraphArgs),
    /// Which entry classes of a package end up running a method.
    Reach(graph::ReachArgs),
    /// Public methods of a delegate that a wrapper class does not expose.
    Forwards(graph::ForwardsArgs),
    /// Print the JSON Schema of hook specs (for a recipe's `#:schema` line).
    Schema(schema::Args),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let code = if err.use_stderr() { 2 } else { 0 };
            let _ = err.print();
            return ExitCode::from(code);
        }
    };
    let code = match cli.command {
        Command::Locate(args) => locate::run(&args),
        Command::Apply(args) => splice::apply(&args),
        Command::Check(args) => splice::check(&args),
        Command::Revert(args) => splice::revert(&args),
        Command::Matrix(args) => matrix::matrix(&args),
        Command::Graph(args) => graph::graph(&args),
        Command::Reach(args) => graph::reach(&args),
        Command::Forwards(args) => graph::forwards(&args),
        Command::Schema(args) => schema::run(&args),
    };
    pysplice_programs::output::finish(code)
}
