//! `sglang-hs-send`: send training conversations to a patched SGLang server (or the router in
//! front of several) once each, and set each sample's loss mask as it lands.
//!
//! ```text
//! sglang-hs-send --conversations sent.jsonl --tokenizer MODEL_DIR --url http://HOST:30000 \
//!     --dump-dir /dev/shm/sglang_hs [--concurrency 16] [--python PY]
//! ```
//!
//! Rendering a conversation needs the model's own tokenizer and chat template, which live in
//! Python (`transformers`), so the sender is a Python program (`send.py` beside this file, with
//! `scripts/specforge_loss_mask.py`, whose rule it applies). Both are built into this command,
//! which starts the interpreter on them: one installed command (by `cargo install` or the wheel)
//! with nothing to find on disk. `--python PY` picks the interpreter (default `python3`), the
//! one of the environment that has `transformers`. On Unix the interpreter replaces this
//! process, so Ctrl-C, `kill` and the exit status are the sender's own.

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, ExitCode};

/// The sender.
const SEND: &str = include_str!("send.py");
/// The loss-mask module the sender imports (also a script of its own).
const LOSS_MASK: &str = include_str!("../../../scripts/specforge_loss_mask.py");
/// Linux takes at most 128 KiB in one argument (`MAX_ARG_STRLEN`): the program goes in one.
const MAX_ARGUMENT: usize = 128 * 1024;

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    if args.iter().any(|a| a == "--version" || a == "-V") {
        println!("sglang-hs-send {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    let python = python_of(&args).unwrap_or_else(|| OsString::from("python3"));
    if let Some(problem) = interpreter_problem(Path::new(&python)) {
        eprintln!("sglang-hs-send: {problem}");
        return ExitCode::from(2);
    }
    let program = bootstrap();
    debug_assert!(program.len() < MAX_ARGUMENT);
    let mut command = Command::new(&python);
    command.arg("-c").arg(program).args(&args);
    let err = run(command);
    let shown = Path::new(&python).display();
    if err.kind() == std::io::ErrorKind::NotFound {
        eprintln!(
            "sglang-hs-send: cannot run `{shown}`: no such program; pass --python with the \
             interpreter of the environment that has transformers"
        );
    } else {
        eprintln!("sglang-hs-send: cannot run `{shown}`: {err}");
    }
    ExitCode::from(2)
}

/// The value of `--python PY` or `--python=PY` (the sender's own parser accepts and ignores it).
fn python_of(args: &[OsString]) -> Option<OsString> {
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        if arg == "--" {
            return None;
        }
        if arg == "--python" {
            return it.next().cloned();
        }
        if let Some(value) = arg.to_str().and_then(|a| a.strip_prefix("--python=")) {
            return Some(OsString::from(value));
        }
    }
    None
}

/// Why `python` cannot be the interpreter, said before trying to run it.
fn interpreter_problem(python: &Path) -> Option<String> {
    python.is_dir().then(|| {
        format!(
            "`{}` is a folder, not an interpreter; pass its interpreter: --python {}",
            python.display(),
            python.join("bin/python").display()
        )
    })
}

/// The program given to `python -c`: the loss-mask module made importable from its text, then
/// the sender run as `__main__`. The current directory is taken off `sys.path` first, so that
/// a file where the command runs cannot stand in for a module.
fn bootstrap() -> String {
    format!(
        "import sys, types\n\
         sys.path[:] = [p for p in sys.path if p not in ('', '.')]\n\
         sys.argv[0] = 'sglang-hs-send'\n\
         _m = types.ModuleType('specforge_loss_mask')\n\
         _m.__file__ = '<sglang-hs-send>/specforge_loss_mask.py'\n\
         exec(compile({}, _m.__file__, 'exec'), _m.__dict__)\n\
         sys.modules['specforge_loss_mask'] = _m\n\
         del _m\n\
         exec(compile({}, '<sglang-hs-send>/send.py', 'exec'), {{'__name__': '__main__', '__file__': '<sglang-hs-send>/send.py'}})\n",
        python_literal(LOSS_MASK),
        python_literal(SEND)
    )
}

/// `text` as a Python string literal.
fn python_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8 + 2);
    out.push('\'');
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            ' '..='~' => out.push(c),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('\'');
    out
}

/// Runs the interpreter; returns only when it could not be started.
#[cfg(unix)]
fn run(mut command: Command) -> std::io::Error {
    use std::os::unix::process::CommandExt;
    command.exec()
}

/// Runs the interpreter and exits with its status; returns only when it could not be started.
#[cfg(not(unix))]
fn run(mut command: Command) -> std::io::Error {
    match command.status() {
        Ok(status) => std::process::exit(status.code().unwrap_or(1)),
        Err(err) => err,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_fits_in_one_argument() {
        assert!(bootstrap().len() < MAX_ARGUMENT, "{} bytes", bootstrap().len());
    }

    #[test]
    fn literals_escape_what_python_would_read_otherwise() {
        assert_eq!(
            python_literal("a'b\\c\n\u{e9}\u{1f600}"),
            "'a\\'b\\\\c\\n\\u00e9\\U0001f600'"
        );
    }

    #[test]
    fn the_interpreter_is_found_in_either_spelling() {
        let args = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(python_of(&args(&["--url", "x", "--python", "/p"])), Some("/p".into()));
        assert_eq!(python_of(&args(&["--python=/q"])), Some("/q".into()));
        assert_eq!(python_of(&args(&["--", "--python", "/p"])), None);
    }
}
