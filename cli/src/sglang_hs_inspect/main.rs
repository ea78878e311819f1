//! `sglang-hs-inspect`: check a hidden-state dump folder before training on it.
//!
//! ```text
//! sglang-hs-inspect DIR... [--json] [--png FILE] [--png-size WxH] [--python PY]
//! ```
//!
//! Counts the complete and partial samples, their tokens and bytes, draws a histogram of the
//! lengths (as text, and as a PNG with `--png`), and checks that every file agrees on what it
//! was dumped from (the provenance the recipe writes into each sample: SGLang release,
//! architecture, layer ids in both conventions, dtype, hidden size, ...); exit status 1 names
//! the odd files of a mixed folder. Reading the samples needs PyTorch, so the checker is a Python
//! program (`hs_inspect.py` beside this file; not `inspect.py`, which would shadow the standard
//! module when the file is run on its own), built into this command, which starts the
//! interpreter on it as `sglang-hs-send` does: `--python PY` picks the interpreter (default
//! `python3`), the one of the environment that has `torch`. On Unix the interpreter replaces
//! this process, so its exit status is the checker's own.

use std::ffi::OsString;
use std::path::Path;
use std::process::ExitCode;

#[path = "../shared/python_launch.rs"]
mod python_launch;

use python_launch::{exec_python, interpreter_problem, python_literal, python_of};

/// The checker.
const INSPECT: &str = include_str!("hs_inspect.py");

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    if args.iter().any(|a| a == "--version" || a == "-V") {
        println!("sglang-hs-inspect {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    let python = python_of(&args).unwrap_or_else(|| OsString::from("python3"));
    if let Some(problem) = interpreter_problem(Path::new(&python)) {
        eprintln!("sglang-hs-inspect: {problem}");
        return ExitCode::from(2);
    }
    exec_python("sglang-hs-inspect", "torch", &python, bootstrap(), &args);
    ExitCode::from(2)
}

/// The program given to `python -c`: the checker run as `__main__`. The current directory is
/// taken off `sys.path` first, so that a file where the command runs (a `torch.py` beside the
/// dump) cannot stand in for a module.
fn bootstrap() -> String {
    format!(
        "import sys\n\
         sys.path[:] = [p for p in sys.path if p not in ('', '.')]\n\
         sys.argv[0] = 'sglang-hs-inspect'\n\
         exec(compile({}, '<sglang-hs-inspect>/hs_inspect.py', 'exec'), {{'__name__': '__main__', '__file__': '<sglang-hs-inspect>/hs_inspect.py'}})\n",
        python_literal(INSPECT)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_fits_in_one_argument() {
        assert!(
            bootstrap().len() < python_launch::MAX_ARGUMENT,
            "{} bytes",
            bootstrap().len()
        );
    }
}
