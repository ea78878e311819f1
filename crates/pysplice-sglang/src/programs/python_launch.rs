//! What the commands that are Python programs built into a native launcher share
//! (`sglang-hs-send`, `sglang-hs-inspect`): the interpreter named by `--python`, the program
//! ([`Program`]: a short start given to `python -c`, each module's source an argument of its
//! own), and running the interpreter in this process's place.
//!
//! Both commands run where the data is (a dump folder, a checkout holding a `types.py`, a
//! `torch.py` left beside the samples), so no file of the working folder may run as a module.
//! The interpreter starts isolated from it in two steps:
//!
//! - here, before the interpreter starts, the relative entries of `PYTHONPATH` are dropped from
//!   its environment (its absolute entries are kept): Python makes them absolute against the
//!   working folder before any program runs (a `sitecustomize.py` there would run at start-up),
//!   and children of the program would inherit them;
//! - in the program, [`ISOLATE`] comes first: its first statement imports only `sys`, a built-in
//!   module that no file can stand in for; it takes every relative entry (`''`, the working
//!   folder of `python -c`) off `sys.path` before anything else is imported, then the entries
//!   that came from relative `PYTHONPATH` entries (when the program is run by other means).
//!
//! Python's own switches do not fit: `-I` (isolated mode) also ignores `PYTHONPATH` and the user
//! site-packages, which the environment that has `transformers` or `torch` may need (a module
//! system or an editable checkout on `PYTHONPATH`, `pip install --user`); `-P`, which only keeps
//! the working folder off `sys.path`, needs Python 3.11 and leaves relative `PYTHONPATH` entries
//! resolved against the working folder.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The whole command: `--version`, else the interpreter of `--python` (default `python3`) run
/// in this process's place with `program`; exit status 2 when it cannot be started (`needs`:
/// the package its environment must have, for the message).
pub fn launch(name: &str, needs: &str, program: &Program) -> ExitCode {
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
    exec_python(name, needs, &python, program, &args);
    ExitCode::from(2)
}

/// A Python program built into a command: a package whose modules are made importable from
/// their source, then one of them run as `__main__`. Each source travels as an argument of its
/// own after the start given to `python -c` (Linux takes at most [`MAX_ARGUMENT`] bytes in one
/// argument, and the sender with its modules is more than that); the start takes them off
/// `sys.argv` before the program reads its own arguments. The modules import each other as
/// the package's own (`from . import masks`), exactly as they do in the checkout, where the
/// package is a folder; no file on disk is imported in their place.
pub struct Program {
    /// The command's name: `sys.argv[0]`, and the prefix of the modules' `__file__`.
    pub name: &'static str,
    /// The package the modules belong to (`pysplice_sglang`).
    pub package: &'static str,
    /// The modules the main module imports, made in this order (each after those it imports):
    /// (module name within the package, source).
    pub modules: &'static [(&'static str, &'static str)],
    /// The module run as `__main__`: (module name within the package, source).
    pub main: (&'static str, &'static str),
}

impl Program {
    /// What `python -c` runs: [`ISOLATE`] first, then the package, its modules and the main
    /// module from the arguments that follow it ([`Program::sources`]).
    pub fn start(&self) -> String {
        let count = self.modules.len() + 1;
        let names: String = self
            .modules
            .iter()
            .map(|(name, _)| format!("{}, ", python_literal(name)))
            .collect();
        format!(
            "{ISOLATE}\
             _sources = sys.argv[1:{end}]\n\
             del sys.argv[1:{end}]\n\
             sys.argv[0] = {name}\n\
             _package = type(sys)({package})\n\
             _package.__path__ = []\n\
             _package.__package__ = {package}\n\
             _package.__file__ = {prefix} + '__init__.py'\n\
             sys.modules[{package}] = _package\n\
             for _name, _source in zip(({names}), _sources):\n\
             \x20   _m = type(sys)({package} + '.' + _name)\n\
             \x20   _m.__package__ = {package}\n\
             \x20   _m.__file__ = {prefix} + _name + '.py'\n\
             \x20   sys.modules[_m.__name__] = _m\n\
             \x20   setattr(_package, _name, _m)\n\
             \x20   exec(compile(_source, _m.__file__, 'exec'), _m.__dict__)\n\
             _main = {{'__name__': '__main__', '__package__': {package}, '__file__': {main}}}\n\
             _source = _sources[-1]\n\
             del _sources, _package\n\
             exec(compile(_source, _main['__file__'], 'exec'), _main)\n",
            end = count + 1,
            name = python_literal(self.name),
            package = python_literal(self.package),
            prefix = python_literal(&format!("<{}>/{}/", self.name, self.package)),
            main = python_literal(&format!("<{}>/{}/{}.py", self.name, self.package, self.main.0)),
        )
    }

    /// The arguments after the start: each module's source, then the main module's.
    pub fn sources(&self) -> Vec<&'static str> {
        let mut sources: Vec<&'static str> = self.modules.iter().map(|(_, source)| *source).collect();
        sources.push(self.main.1);
        sources
    }

    /// Why this program cannot be given to the interpreter as it is, or `None`: every source
    /// must fit in one argument, be ASCII (an argument is decoded in the locale's encoding) and
    /// hold no NUL.
    pub fn problem(&self) -> Option<String> {
        let start = self.start();
        std::iter::once(("the start", start.as_str()))
            .chain(self.modules.iter().map(|(name, source)| (*name, *source)))
            .chain(std::iter::once((self.main.0, self.main.1)))
            .find_map(|(what, text)| {
                if text.len() >= MAX_ARGUMENT {
                    Some(format!(
                        "{what}: {} bytes, over one argument's {MAX_ARGUMENT}",
                        text.len()
                    ))
                } else if !text.is_ascii() || text.contains('\0') {
                    Some(format!("{what}: not plain ASCII without NUL"))
                } else {
                    None
                }
            })
    }
}

/// The first lines of every program given to `python -c`: `sys.path` without the working folder
/// and without the entries relative `PYTHONPATH` entries became; only `sys` and the built-in
/// `posix` are imported before (see the module documentation).
pub const ISOLATE: &str = r#"import sys
sys.path[:] = [p for p in sys.path if p.startswith('/') or p[1:3] in (':\\', ':/')]
def _isolate():
    try:
        import posix
    except ImportError:
        return
    raw = posix.environ.get(b'PYTHONPATH')
    if raw is None:
        return
    def norm(p):
        parts = []
        for part in p.split('/'):
            if part == '..':
                parts[-1:] = []
            elif part not in ('', '.'):
                parts.append(part)
        return '/' + '/'.join(parts)
    entries = raw.decode(sys.getfilesystemencoding(), 'surrogateescape').split(':')
    kept = {norm(e) for e in entries if e.startswith('/')}
    try:
        cwd = posix.getcwd()
    except OSError:
        return
    dropped = {norm(cwd + '/' + e) for e in entries if not e.startswith('/')} - kept
    sys.path[:] = [p for p in sys.path if norm(p) not in dropped]
_isolate()
del _isolate
"#;

/// `PYTHONPATH` with its relative entries dropped: `None` when it has none (left as it is),
/// `Some(None)` when nothing is left (removed), else the absolute entries in their order.
pub fn absolute_pythonpath(value: &OsStr) -> Option<Option<OsString>> {
    let paths: Vec<PathBuf> = std::env::split_paths(value).collect();
    if paths.iter().all(|p| p.is_absolute()) {
        return None;
    }
    let kept: Vec<PathBuf> = paths.into_iter().filter(|p| p.is_absolute()).collect();
    if kept.is_empty() {
        return Some(None);
    }
    Some(std::env::join_paths(kept).ok())
}

/// Linux takes at most 128 KiB in one argument (`MAX_ARG_STRLEN`).
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

/// Runs `python -c START SOURCES... ARGS...` in place of this process (on Unix: its signals and
/// exit status are the program's own); returns only when the interpreter could not be started,
/// after saying so on stderr as `name` (`needs`: the package its environment must have).
pub fn exec_python(name: &str, needs: &str, python: &OsString, program: &Program, args: &[OsString]) {
    debug_assert!(program.problem().is_none(), "{:?}", program.problem());
    let mut command = Command::new(python);
    command
        .arg("-c")
        .arg(program.start())
        .args(program.sources())
        .args(args);
    if let Some(value) = std::env::var_os("PYTHONPATH") {
        match absolute_pythonpath(&value) {
            None => {}
            Some(Some(kept)) => {
                command.env("PYTHONPATH", kept);
            }
            Some(None) => {
                command.env_remove("PYTHONPATH");
            }
        }
    }
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
    fn a_source_that_cannot_travel_as_one_argument_is_named() {
        const BIG: &str = include_str!("python_launch.rs");
        let program = |main: &'static str| Program {
            name: "p",
            package: "pkg",
            modules: &[("m", "x = 1\n")],
            main: ("p", main),
        };
        assert_eq!(program("print(1)\n").problem(), None);
        assert!(program("s = '\u{e9}'\n")
            .problem()
            .unwrap()
            .starts_with("p: not plain ASCII"));
        let huge: &'static str = Box::leak(BIG.repeat(MAX_ARGUMENT / BIG.len() + 1).into_boxed_str());
        assert!(program(huge).problem().unwrap().contains("over one argument"));
        assert_eq!(program("print(1)\n").sources(), ["x = 1\n", "print(1)\n"]);
    }

    #[test]
    fn the_start_imports_only_sys_before_it_cleans_the_path() {
        let mut lines = ISOLATE.lines();
        assert_eq!(lines.next(), Some("import sys"));
        assert!(lines.next().unwrap().starts_with("sys.path[:] = "));
    }

    #[test]
    fn relative_pythonpath_entries_are_dropped() {
        let p = |s: &str| absolute_pythonpath(OsStr::new(s));
        assert_eq!(p("/a:/b"), None);
        assert_eq!(p("/a:.:sub:/b:"), Some(Some(OsString::from("/a:/b"))));
        assert_eq!(p("sub"), Some(None));
        assert_eq!(p(""), Some(None));
    }

    #[test]
    fn the_interpreter_is_found_in_either_spelling() {
        let args = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(python_of(&args(&["--url", "x", "--python", "/p"])), Some("/p".into()));
        assert_eq!(python_of(&args(&["--python=/q"])), Some("/q".into()));
        assert_eq!(python_of(&args(&["--", "--python", "/p"])), None);
    }
}
