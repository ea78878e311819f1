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
//! `FILE:LINE:COLUMN: kind path  Lline-end_line`. With `--json`, either form prints
//! `{"file": ..., "definitions": [{"path", "kind", "line", "end_line", "decorator_line", "async"}]}`
//! on one line, in source order (only the matching definition when PATH is given).
//!
//! Exit codes: 0 found; 1 PATH not found, ambiguous or its ordinal out of range; 2 bad usage (a
//! malformed PATH), or FILE cannot be read, is not UTF-8 or is not valid Python.

use std::collections::HashMap;

use pysplice::{Definition, Error, ParsedFile, SourceFile, Target};

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

/// One definition in `--json` output; field order is the key order printed.
#[derive(serde::Serialize)]
struct JsonDefinition<'a> {
    path: &'a str,
    kind: &'static str,
    line: usize,
    end_line: usize,
    decorator_line: Option<usize>,
    #[serde(rename = "async")]
    is_async: bool,
}

/// The whole `--json` document.
#[derive(serde::Serialize)]
struct JsonOutline<'a> {
    file: &'a str,
    definitions: Vec<JsonDefinition<'a>>,
}

/// Runs `locate`; returns the exit code.
pub fn run(args: &Args) -> u8 {
    let name = args.file.display().to_string();
    // A malformed path is bad usage whatever the file holds, so it is checked first.
    if let Some(path) = &args.path {
        match Target::parse(path, &name) {
            Ok(Target::Module) => {
                eprintln!("error: `module` is the whole file, not a definition; leave PATH out to see the outline");
                return 2;
            }
            Ok(_) => {}
            Err(err) => {
                eprintln!("error: {err}");
                return 2;
            }
        }
    }
    let bytes = match std::fs::read(&args.file) {
        Ok(bytes) => bytes,
        Err(err) => {
            eprintln!("error: {name}: cannot read: {err}");
            return 2;
        }
    };
    let parsed = match SourceFile::from_bytes(name.clone(), bytes).and_then(ParsedFile::parse) {
        Ok(parsed) => parsed,
        Err(err) => {
            eprintln!("error: {err}");
            return 2;
        }
    };
    let selected: Vec<&Definition> = match &args.path {
        None => parsed.definitions().iter().collect(),
        Some(path) => match parsed.locate(path) {
            Ok(found) => vec![found],
            Err(err) => {
                eprintln!("error: {err}");
                return match err {
                    Error::NotFound { .. } | Error::Ambiguous { .. } | Error::BadPath { .. } => 1,
                    _ => 2,
                };
            }
        },
    };
    if args.json {
        println!("{}", json(&name, &selected));
    } else if args.path.is_some() {
        for definition in selected {
            let at = parsed.source().position(definition.range().start);
            println!("{name}:{}:{}: {}", at.line, at.column, summary(definition, None));
        }
    } else {
        print!("{}", tree(&parsed));
    }
    0
}

/// The `--json` document for `definitions` of `file`, on one line.
fn json(file: &str, definitions: &[&Definition]) -> String {
    let outline = JsonOutline {
        file,
        definitions: definitions
            .iter()
            .map(|d| JsonDefinition {
                path: d.path(),
                kind: d.kind().as_str(),
                line: d.line(),
                end_line: d.end_line(),
                decorator_line: d.decorator_line(),
                is_async: d.is_async(),
            })
            .collect(),
    };
    serde_json::to_string(&outline).expect("the outline serializes")
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
