//! `pysplice locate FILE [PATH] [--json]`.
//!
//! Without PATH: the outline of FILE as an indented tree, one line per class or function:
//!
//! ```text
//! class DeepseekV2Model  L12-80
//!   method DeepseekV2Model.__init__  L13-30
//!   async method DeepseekV2Model.forward  L33-80  decorator L32
//! ```
//!
//! With PATH (`Class.method`, `f.<locals>.g`, `A.f#2`): the definition at that path, as
//! `FILE:LINE:COLUMN: kind path  Lline-end_line`. With `--json`, either form prints one object of
//! `pysplice_programs::contract` (`"command": "locate"`) whose `definitions` are in source order (only the
//! matching definition when PATH is given); a failure prints the same object with `error` set.
//!
//! Exit codes: 0 found; 1 PATH not found, ambiguous or its ordinal out of range; 2 bad usage (a
//! malformed PATH), or FILE cannot be read, is not UTF-8 or is not valid Python.

use std::collections::HashMap;

use pysplice::{Definition, ErrorKind, ParsedFile, SourceFile, Target};
use pysplice_programs::contract::{Body, DefinitionInfo, ErrorInfo, Locate, Output};

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
pub fn run(args: &Args) -> u8 {
    let name = args.file.display().to_string();
    match find(args, &name) {
        Ok((parsed, selected)) => {
            if args.json {
                let definitions = selected.iter().map(DefinitionInfo::from).collect();
                outln!("{}", Output::new(name, Body::Locate(Locate { definitions })).to_line());
            } else if args.path.is_some() {
                for definition in &selected {
                    let at = parsed.source().position(definition.range().start);
                    outln!(
                        "{}:{}:{}: {}",
                        pysplice::report::printable(&name),
                        at.line,
                        at.column,
                        summary(definition, None)
                    );
                }
            } else {
                out!("{}", tree(&parsed));
            }
            0
        }
        Err((error, code)) => {
            if args.json {
                let body = Body::Locate(Locate {
                    definitions: Vec::new(),
                });
                outln!("{}", Output::failed(name, body, error).to_line());
            } else {
                errln!("error: {}", error.message);
            }
            code
        }
    }
}

/// The parsed file and the definitions selected, or the error and its exit code.
fn find(args: &Args, name: &str) -> Result<(ParsedFile, Vec<Definition>), (ErrorInfo, u8)> {
    // A malformed path is bad usage whatever the file holds, so it is checked first.
    if let Some(path) = &args.path {
        match Target::parse(path, name) {
            Ok(Target::Module) => {
                let message = "`module` is the whole file, not a definition; leave PATH out to see the outline";
                return Err((ErrorInfo::message(message), 2));
            }
            Ok(_) => {}
            Err(err) => return Err((ErrorInfo::from(&err), 2)),
        }
    }
    let bytes = pysplice::files::read_bytes(&args.file).map_err(|err| (ErrorInfo::from(&err), 2))?;
    let parsed = SourceFile::from_bytes(name.to_string(), bytes)
        .and_then(ParsedFile::parse)
        .map_err(|err| (ErrorInfo::from(&err), 2))?;
    let selected = match &args.path {
        None => parsed.definitions().to_vec(),
        Some(path) => match parsed.locate(path) {
            Ok(found) => vec![found.clone()],
            Err(err) => {
                let code = match err.kind() {
                    ErrorKind::NotFound { .. } | ErrorKind::Ambiguous { .. } | ErrorKind::BadPath { .. } => 1,
                    _ => 2,
                };
                return Err((ErrorInfo::from(&err), code));
            }
        },
    };
    Ok((parsed, selected))
}

/// The outline as a tree: two spaces of indentation per level of nesting. A path defined more
/// than once (in both arms of an `if`) is shown with its ordinal, `A.f#2`, as `locate` takes it.
fn tree(parsed: &ParsedFile) -> String {
    let definitions = parsed.definitions();
    // Parents come before their children, so each depth is known when its children are reached.
    let mut depths: Vec<usize> = Vec::with_capacity(definitions.len());
    let mut totals: HashMap<&str, usize> = HashMap::new();
    for definition in definitions {
        *totals.entry(definition.path()).or_default() += 1;
    }
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut out = String::new();
    for definition in definitions {
        let depth = definition.parent().map_or(0, |parent| depths[parent] + 1);
        depths.push(depth);
        let nth = seen.entry(definition.path()).or_default();
        *nth += 1;
        let ordinal = (totals[definition.path()] > 1).then_some(*nth);
        out.push_str(&"  ".repeat(depth));
        out.push_str(&summary(definition, ordinal));
        out.push('\n');
    }
    out
}

/// `[async ]kind path[#N]  Lline-end_line[  decorator Ln]`.
fn summary(definition: &Definition, ordinal: Option<usize>) -> String {
    let mut line = String::new();
    if definition.is_async() {
        line.push_str("async ");
    }
    line.push_str(definition.kind().as_str());
    line.push(' ');
    line.push_str(definition.path());
    if let Some(n) = ordinal {
        line.push_str(&format!("#{n}"));
    }
    line.push_str(&format!("  L{}-{}", definition.line(), definition.end_line()));
    if let Some(decorator) = definition.decorator_line() {
        line.push_str(&format!("  decorator L{decorator}"));
    }
    line
}
