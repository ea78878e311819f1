//! `code-from`: a hook's code taken from Python files beside the recipe, before the recipe is
//! compiled. The hook's code becomes its `code` (if any) and each entry's piece, in order, each
//! without its trailing line breaks, joined by two blank lines, ending with one line break.
//!
//! A piece is a whole file, a top-level definition (`def`: from its first decorator to its last
//! line, plus the comments indented at the end of its body), or a function's body (`body`: the
//! definition's lines after its `def` line, dedented by 4 spaces, each parameter after the first
//! written as its `{param.N}` slot).

use std::collections::BTreeMap;
use std::path::{Component, Path};

use toml::Spanned;

use crate::error::{CodeFromProblem, Error, ErrorKind, SpecReason};
use crate::location::Location;
use crate::parse::{name_tokens, parse_module};
use crate::source::SourceFile;
use crate::syntax::{kind, Node};

use super::code_files::{CodeFileError, CodeFiles};
use super::raw::{RawCodeFrom, RawHook};

/// A code file read and parsed: its text and its top-level statements.
struct CodeFile {
    source: SourceFile,
    body: Vec<Node>,
}

/// What went wrong with one entry: the problem, and the error behind it (the reading's, the
/// parser's) when there is one.
type Failure = (CodeFromProblem, Option<Error>);

/// Gives every hook of the recipe `file` that has `code-from` entries (and a placement that
/// takes code) its code, read through `files` (`None`: the recipe was read without its folder).
/// The other hooks are left as they are.
///
/// # Errors
/// [`ErrorKind::Spec`] with [`SpecReason::CodeFrom`] at the entry at fault, naming the hook.
pub(super) fn resolve(
    file: &SourceFile,
    hooks: &mut [Spanned<RawHook>],
    files: Option<&dyn CodeFiles>,
) -> Result<(), Error> {
    let mut read: BTreeMap<String, CodeFile> = BTreeMap::new();
    for hook in hooks {
        let hook = hook.get_mut();
        let Some(entries) = &hook.code_from else { continue };
        if hook.at.is_none() && hook.replace.is_none() {
            continue; // `code-from` without a placement that takes code: refused when compiled.
        }
        let mut parts: Vec<String> = hook.code.iter().cloned().collect();
        for entry in entries {
            let fail = |(problem, cause): Failure| {
                let reason = SpecReason::CodeFrom {
                    file: entry.get_ref().file.clone(),
                    problem,
                };
                let kind = ErrorKind::Spec {
                    reason,
                    cause: cause.map(Box::new),
                };
                kind.at(file.location(entry.span().start)).with_hook(&hook.id)
            };
            let piece = piece_of(file.name(), entry.get_ref(), files, &mut read).map_err(fail)?;
            parts.push(piece);
        }
        if !parts.is_empty() {
            hook.code = Some(join(&parts));
        }
    }
    Ok(())
}

/// The parts of a hook's code as one text: each without its trailing line breaks, two blank
/// lines between them, one line break at the end.
fn join(parts: &[String]) -> String {
    let trimmed: Vec<&str> = parts.iter().map(|p| p.trim_end_matches('\n')).collect();
    let mut text = trimmed.join("\n\n\n");
    text.push('\n');
    text
}

/// The piece one entry names, its file read through `files` once per recipe (kept in `read`).
fn piece_of(
    recipe: &str,
    entry: &RawCodeFrom,
    files: Option<&dyn CodeFiles>,
    read: &mut BTreeMap<String, CodeFile>,
) -> Result<String, Failure> {
    let path = checked_path(&entry.file)?;
    let files = files.ok_or((CodeFromProblem::NeedsFolder, None))?;
    if entry.definition.is_some() && entry.body.is_some() {
        return Err((CodeFromProblem::DefAndBody, None));
    }
    if !read.contains_key(&path) {
        let code = load(files, &shown_path(recipe, &path), &path)?;
        read.insert(path.clone(), code);
    }
    let code = &read[&path];
    match (&entry.definition, &entry.body) {
        (Some(name), _) => {
            let node = definition(code, "def", name)?;
            Ok(definition_lines(code, node).join("\n"))
        }
        (None, Some(name)) => body(code, definition(code, "body", name)?),
        (None, None) => Ok(code.source.text().to_string()),
    }
}

/// The path of an entry as [`CodeFiles`] is asked for it: `/`-separated, without `.` and with
/// each `..` taken back. An absolute path, and one that leads out of the folder through `..`,
/// are refused before anything is read.
fn checked_path(path: &str) -> Result<String, Failure> {
    // `\` is a separator on Windows only: a path starting with one is absolute there.
    if path.starts_with('\\') {
        return Err((CodeFromProblem::Absolute, None));
    }
    let mut parts: Vec<&str> = Vec::new();
    for component in Path::new(path).components() {
        match component {
            Component::Prefix(_) | Component::RootDir => return Err((CodeFromProblem::Absolute, None)),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop().ok_or((CodeFromProblem::OutsideFolder, None))?;
            }
            Component::Normal(part) => parts.push(part.to_str().unwrap_or_default()),
        }
    }
    Ok(parts.join("/"))
}

/// The name of code file `path` in messages: the recipe's folder joined with it.
fn shown_path(recipe: &str, path: &str) -> String {
    match Path::new(recipe).parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder.join(path).display().to_string(),
        _ => path.to_string(),
    }
}

/// Reads, decodes and parses the code file `path` (`name` in messages).
fn load(files: &dyn CodeFiles, name: &str, path: &str) -> Result<CodeFile, Failure> {
    let bytes = files.read(path).map_err(|err| match err {
        CodeFileError::OutsideFolder => (CodeFromProblem::OutsideFolder, None),
        CodeFileError::Io(source) => {
            let kind = ErrorKind::Io {
                action: format!("cannot read {name}"),
                source: std::sync::Arc::new(source),
            };
            (CodeFromProblem::Unreadable, Some(kind.at(Location::whole(name))))
        }
        CodeFileError::Read(err) => (CodeFromProblem::Unreadable, Some(err)),
    })?;
    let source = SourceFile::from_bytes(name, bytes).map_err(|err| {
        let at = err.location().clone();
        (CodeFromProblem::NotText { at }, Some(err))
    })?;
    let module = parse_module(&source).map_err(|err| {
        let at = err.location.clone();
        (CodeFromProblem::Unparsable { at }, Some(Error::from(err)))
    })?;
    let body = module.module_body().map(Node::children).unwrap_or_default().to_vec();
    Ok(CodeFile { source, body })
}

/// The top-level `def`, `async def` or `class` named `name` (the last, as Python binds it);
/// `key`: the entry's key that names it, for the message.
fn definition<'a>(code: &'a CodeFile, key: &'static str, name: &str) -> Result<&'a Node, Failure> {
    let defined = code.body.iter().filter(|node| node.is_definition());
    defined
        .clone()
        .rev()
        .find(|node| node.label() == Some(name))
        .ok_or_else(|| {
            let mut defined: Vec<String> = defined.filter_map(Node::label).map(str::to_string).collect();
            defined.dedup();
            let problem = CodeFromProblem::NotDefined {
                key,
                name: name.to_string(),
                defined,
            };
            (problem, None)
        })
}

/// The 1-based line (as `text.split('\n')` counts lines) of byte `offset`.
fn line_at(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The 1-based lines of a definition: its first (its first decorator's), its `def` or `class`
/// line, and the last line of its last statement.
fn definition_span(code: &CodeFile, node: &Node) -> (usize, usize, usize) {
    let text = code.source.text();
    let decorators = node.field("decorator_list").map(Node::children).unwrap_or_default();
    let start_line = line_at(text, node.range().start);
    let first = decorators
        .iter()
        .map(|d| line_at(text, d.range().start))
        .fold(start_line, usize::min);
    let keyword = match decorators.iter().map(|d| d.range().end).max() {
        // The first line after the last decorator that is neither blank nor a comment.
        Some(end) if node.range().start < end => {
            let lines: Vec<&str> = text.split('\n').collect();
            let after = line_at(text, end);
            (after..lines.len())
                .find(|&i| {
                    let line = lines[i].trim();
                    !line.is_empty() && !line.starts_with('#')
                })
                .map_or(start_line, |i| i + 1)
        }
        _ => start_line,
    };
    let last = line_at(text, node.range().end.saturating_sub(1).max(node.range().start));
    (first, keyword, last)
}

/// The lines of a definition: from its first decorator to its last line, plus the blank lines
/// and indented comment lines after it (comments at the end of its body, which its last
/// statement does not reach), less the blank lines at the end.
fn definition_lines<'a>(code: &'a CodeFile, node: &Node) -> Vec<&'a str> {
    let lines: Vec<&str> = code.source.text().split('\n').collect();
    let (first, _, last) = definition_span(code, node);
    let mut end = last.min(lines.len());
    while end < lines.len() && (lines[end].trim().is_empty() || is_indented_comment(lines[end])) {
        end += 1;
    }
    while end > first && lines[end - 1].trim().is_empty() {
        end -= 1;
    }
    lines[first - 1..end].to_vec()
}

/// A comment line inside a body: indented, its first character after the indentation `#`.
fn is_indented_comment(line: &str) -> bool {
    line.starts_with([' ', '\t']) && line.trim_start().starts_with('#')
}

/// The body of the function `node` as hook code: its lines after the `def` line, dedented by 4
/// spaces, each parameter after the first written as its `{param.N}` slot.
fn body(code: &CodeFile, node: &Node) -> Result<String, Failure> {
    let name = node.label().unwrap_or_default().to_string();
    if node.kind() != kind::FUNCTION_DEF {
        return Err((CodeFromProblem::BodyNeedsFunction { name }, None));
    }
    let (first, keyword, _) = definition_span(code, node);
    let file = code.source.name();
    let lines = definition_lines(code, node);
    if !lines[keyword - first].trim_end().ends_with(':') {
        let at = Location::new(file, keyword, 1);
        return Err((CodeFromProblem::SignatureSpansLines { name, at }, None));
    }
    let mut out: Vec<&str> = Vec::new();
    for (k, line) in lines[keyword - first + 1..].iter().enumerate() {
        if !line.trim().is_empty() && !line.starts_with("    ") {
            let at = Location::new(file, keyword + 1 + k, 1);
            return Err((CodeFromProblem::NotIndented { at }, None));
        }
        out.push(line.char_indices().nth(4).map_or("", |(i, _)| &line[i..]));
    }
    let mut text = out.join("\n");
    text.push('\n');
    let slots = parameter_slots(node);
    let tokens = name_tokens(file, &text).map_err(|err| {
        let at = Location::new(file, keyword, 1);
        (CodeFromProblem::Unparsable { at }, Some(Error::from(err)))
    })?;
    let mut written = String::with_capacity(text.len());
    let mut copied = 0;
    for token in tokens.into_iter().filter(|t| !t.after_dot) {
        if let Some((_, slot)) = slots.iter().find(|(name, _)| **name == text[token.range.clone()]) {
            written.push_str(&text[copied..token.range.start]);
            written.push_str(slot);
            copied = token.range.end;
        }
    }
    written.push_str(&text[copied..]);
    Ok(written)
}

/// Each named parameter of the function `node` after the first, with its `{param.N}` slot: N
/// its place among the named parameters (positional-only, regular, keyword-only), counted from
/// 0, as templates count them for a method (`param.0` the bound `self`).
fn parameter_slots(node: &Node) -> Vec<(&str, String)> {
    let Some(arguments) = node.children().iter().find(|c| c.kind() == "arguments") else {
        return Vec::new();
    };
    ["posonlyargs", "args", "kwonlyargs"]
        .into_iter()
        .filter_map(|field| arguments.field(field))
        .flat_map(Node::children)
        .filter_map(|with_default| with_default.children().first().and_then(Node::label))
        .enumerate()
        .skip(1)
        .map(|(n, name)| (name, format!("{{param.{n}}}")))
        .collect()
}
