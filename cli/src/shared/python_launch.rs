//! What the commands that are Python programs built into a native launcher share
//! (`sglang-hs-send`, `sglang-hs-inspect`): the interpreter named by `--python`, the program as a
//! Python string literal for `python -c`, and running the interpreter in this process's place.

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, ExitCode};

/// The whole command: `--version`, else the interpreter of `--python` (default `python3`) run
/// in this process's place with the program `bootstrap` gives; exit status 2 when it cannot be
/// started (`needs`: the package its environment must have, for the message).
pub fn launch(name: &str, needs: &str, bootstrap: impl FnOnce() -> String) -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    if args.iter().any(|a| a == "--version" || a == "-V") {
        println!("{name} {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    let python = python_of(&args).unwrap_or_else(|| OsString::from("python3"));
    if let Some(problem) = interpreter_problem(Path::new(&python)) {
        eprintln!("{name}: {problem}");
        return ExitCode::from(2);
    }
    exec_python(name, needs, &python, bootstrap(), &args);
    ExitCode::from(2)
}

/// Linux takes at most 128 KiB in one argument (`MAX_ARG_STRLEN`): the program goes in one.
pub const MAX_ARGUMENT: usize = 128 * 1024;

/// The value of `--python PY` or `--python=PY` (the program's own parser accepts and ignores it).
pub fn python_of(args: &[OsString]) -> Option<OsString> {
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
pub fn interpreter_problem(python: &Path) -> Option<String> {
    python.is_dir().then(|| {
        format!(
            "`{}` is a folder, not an interpreter; pass its interpreter: --python {}",
            python.display(),
            python.join("bin/python").display()
        )
    })
}

/// `text` as a Python string literal.
pub fn python_literal(text: &str) -> String {
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

/// Runs `python -c PROGRAM ARGS...` in place of this process (on Unix: its signals and exit
/// status are the program's own); returns only when the interpreter could not be started, after
/// saying so on stderr as `name` (`needs`: the package its environment must have).
pub fn exec_python(name: &str, needs: &str, python: &OsString, program: String, args: &[OsString]) {
    debug_assert!(program.len() < MAX_ARGUMENT);
    let mut command = Command::new(python);
    command.arg("-c").arg(program).args(args);
    let err = run(command);
    let shown = Path::new(python).display();
    if err.kind() == std::io::ErrorKind::NotFound {
        eprintln!(
            "{name}: cannot run `{shown}`: no such program; pass --python with the \
             interpreter of the environment that has {needs}"
        );
    } else {
        eprintln!("{name}: cannot run `{shown}`: {err}");
    }
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
