//! Standard output that a closed pipe (`| head`) or a full disk (`> /dev/full`) cannot crash.
//!
//! Every report line goes through [`emit`] (or the `out!` / `outln!` macros). The first failure
//! stops all further output: a broken pipe silently (the reader has seen what it wanted), any other
//! error with one line on standard error. [`finish`] then turns a success into [`EXIT_OUTPUT`]
//! (a failure keeps its own code: it says more). Files are always written before anything is
//! printed about them, so a lost report never leaves a file half done. Messages go to standard
//! error through `errln!` ([`error_line`]), which ignores a standard error that cannot be written
//! (`eprintln!` panics there) and escapes control characters (`pysplice::report::printable_lines`): a file
//! name or a message quoting input cannot drive the terminal. Text for standard output escapes
//! names where it prints them (diffs show file contents as they are).

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

/// `eprintln!` that ignores a standard error that cannot be written, with control characters
/// other than line breaks escaped ([`error_line`](crate::output::error_line)).
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::output::error_line(&format!($($arg)*))
    };
}

/// `print!` through [`emit`](crate::output::emit).
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::emit(&format!($($arg)*))
    };
}

/// `println!` through [`emit`](crate::output::emit).
#[macro_export]
macro_rules! outln {
    () => {
        $crate::output::emit("\n")
    };
    ($($arg:tt)*) => {
        $crate::output::emit(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// Writes `line` and a line break to standard error, control characters other than line breaks
/// escaped; a standard error that cannot be written is ignored (nothing is left to tell).
pub fn error_line(line: &str) {
    let _ = writeln!(std::io::stderr(), "{}", pysplice::report::printable_lines(line));
}

/// Exit code when the command succeeded but standard output could not be written: the files are
/// as they would otherwise be, only the report was lost.
pub const EXIT_OUTPUT: u8 = 3;

static FAILED: AtomicBool = AtomicBool::new(false);

/// Writes `text` to standard output, unless an earlier write failed.
pub fn emit(text: &str) {
    if FAILED.load(Ordering::Relaxed) {
        return;
    }
    if let Err(err) = std::io::stdout().lock().write_all(text.as_bytes()) {
        failed(&err);
    }
}

fn failed(err: &std::io::Error) {
    if !FAILED.swap(true, Ordering::Relaxed) && err.kind() != std::io::ErrorKind::BrokenPipe {
        error_line(&format!("error: cannot write to standard output: {err}"));
    }
}

/// Flushes standard output; `code`, or [`EXIT_OUTPUT`] when the command succeeded but some output
/// was lost.
pub fn finish(code: u8) -> ExitCode {
    if let Err(err) = std::io::stdout().lock().flush() {
        failed(&err);
    }
    if code == 0 && FAILED.load(Ordering::Relaxed) {
        ExitCode::from(EXIT_OUTPUT)
    } else {
        ExitCode::from(code)
    }
}
