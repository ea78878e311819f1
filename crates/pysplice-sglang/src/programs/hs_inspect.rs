//! `sglang-hs-inspect`: check a hidden-state dump folder before training on it.
//!
//! ```text
//! sglang-hs-inspect DIR... [--json] [--png FILE] [--png-size WxH] [--record FILE]... [--python PY]
//! ```
//!
//! Counts the complete and partial samples, their tokens and bytes, draws a histogram of the
//! lengths (as text, and as a PNG with `--png`), and checks that every file agrees on what it was
//! dumped from (the provenance the recipe writes into each sample: SGLang release, architecture,
//! layer ids in both conventions, dtype, hidden size, ...); exit status 1 names the odd files of a
//! mixed folder. With `sglang-hs-send`'s record (`--record FILE`, or the one in a folder) it names
//! every sample the sender did not send or mask (exit status 1 too). Each file is read within fixed
//! bounds (regular files only, torch.save's stored zip layout, a restricted reader of its pickle,
//! provenance values that are scalars or flat lists) before `torch.load` sees it: docs/safety.md
//! says what a hostile file or folder cannot do. Reading the samples needs PyTorch, so the checker
//! is a Python program (`python/pysplice_sglang/inspector.py` of this crate; not `inspect.py`, which
//! would shadow the standard module when the file is run on its own), built into this command with
//! the sample reader it imports (`masks.py` beside it, the one `sglang-hs-send` embeds too); the
//! command starts the interpreter on it as `sglang-hs-send` does: `--python PY` picks the interpreter
//! (default `python3`), the one of the environment that has `torch`. On Unix the interpreter
//! replaces this process, so its exit status is the checker's own.

use std::process::ExitCode;

use super::python_launch::{self, Program};

/// The checker.
const INSPECT: &str = include_str!("../../python/pysplice_sglang/inspector.py");
/// The bounded sample reader the checker imports, shared with `sglang-hs-send` (the loss-mask
/// script, whose reader section both use).
const LOSS_MASK: &str = include_str!("../../python/pysplice_sglang/masks.py");

/// Runs the command on the process's arguments and gives its exit status.
#[must_use]
pub fn main() -> ExitCode {
    python_launch::launch("sglang-hs-inspect", "torch", &PROGRAM)
}

/// The program: the start isolated from the working folder ([`python_launch::ISOLATE`]: a
/// `torch.py` beside the dump is never imported), the sample reader made importable from its
/// text, then the checker run as `__main__`.
const PROGRAM: Program = Program {
    name: "sglang-hs-inspect",
    package: "pysplice_sglang",
    modules: &[("masks", LOSS_MASK)],
    main: ("inspector", INSPECT),
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_starts_isolated() {
        assert!(PROGRAM.start().starts_with(python_launch::ISOLATE));
    }

    #[test]
    fn the_program_can_be_given_to_the_interpreter() {
        assert_eq!(PROGRAM.problem(), None);
    }
}
