//! `sglang-hs-send`: send training conversations to a patched SGLang server (or the router in
//! front of several) once each, and set each sample's loss mask as it lands.
//!
//! ```text
//! sglang-hs-send --conversations sent.jsonl --tokenizer MODEL_DIR --url http://HOST:30000 \
//!     --dump-dir /dev/shm/sglang_hs [--concurrency 16] [--python PY]
//! sglang-hs-send --request-dumps PRODUCTION_DUMPS/ --url http://HOST:30000 --dump-dir ...
//! ```
//!
//! The second form harvests what production servers served: SGLang's own request dumps
//! (`python/pysplice_sglang/request_dumps.py` of this crate reads them without running them).
//!
//! Rendering a conversation needs the model's own tokenizer and chat template, which live in
//! Python (`transformers`), so the sender is a Python program (`python/pysplice_sglang/send.py` of
//! this crate, with `masks.py` beside it, whose rule it applies). Both are built into this
//! command, which starts the interpreter on them: one installed command (by `cargo install` or the wheel)
//! with nothing to find on disk. `--python PY` picks the interpreter (default `python3`), the
//! one of the environment that has `transformers`. On Unix the interpreter replaces this
//! process, so Ctrl-C, `kill` and the exit status are the sender's own.

use std::process::ExitCode;

use super::python_launch::{self, Program};

/// The sender.
const SEND: &str = include_str!("../../python/pysplice_sglang/send.py");
/// The loss-mask module the sender imports (also a script of its own).
const LOSS_MASK: &str = include_str!("../../python/pysplice_sglang/masks.py");
/// The reader of SGLang's request dumps (`--request-dumps`), which the sender imports.
const REQUEST_DUMPS: &str = include_str!("../../python/pysplice_sglang/request_dumps.py");
/// The publisher to SpecForge's online trainer (`--publish`), which the sender imports.
const PUBLISH: &str = include_str!("../../python/pysplice_sglang/publish.py");

/// Runs the command on the process's arguments and gives its exit status.
#[must_use]
pub fn main() -> ExitCode {
    python_launch::launch("sglang-hs-send", "transformers", &PROGRAM)
}

/// The program: the start isolated from the working folder ([`python_launch::ISOLATE`]: a
/// `types.py` or `json.py` where the command runs is never imported), the loss-mask,
/// request-dump and publisher modules made importable from their text, then the sender run as `__main__`.
const PROGRAM: Program = Program {
    name: "sglang-hs-send",
    package: "pysplice_sglang",
    modules: &[
        ("masks", LOSS_MASK),
        ("request_dumps", REQUEST_DUMPS),
        ("publish", PUBLISH),
    ],
    main: ("send", SEND),
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
