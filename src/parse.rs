//! The parser adapter: the only module that touches rustpython-parser and rustpython-ast.
//!
//! It turns text into the crate's own [`Node`] tree, so the rest of the crate (and its users)
//! never see parser types and the parser can be swapped without changing the public API.

mod convert;
mod prescan;
pub(crate) mod reparse;

use rustpython_parser::{self as parser, Mode};

use crate::location::Location;
use crate::source::{floor_char_boundary, SourceFile};
use crate::syntax::{kind, Node};

pub(crate) use crate::limits::MAX_DEPTH;

/// Text that is not valid Python, as the parser (or the pre-scan before it) says; the crate's
/// [`ErrorKind::Syntax`](crate::ErrorKind::Syntax) once it becomes a [`crate::Error`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{location}: invalid Python: {message}")]
pub(crate) struct SyntaxError {
    /// The parser's message.
    pub message: String,
    /// Where the parser stopped.
    pub location: Location,
}

/// Stack reserved for the parser and the conversion (committed by the OS only as it is used), so
/// that a deeply nested file cannot overflow the caller's thread, whatever its stack size.
const PARSE_STACK: usize = 256 << 20;

/// Parses a whole file into a `Module` node whose single child is the `body` list.
///
/// # Errors
/// A [`SyntaxError`] with the parser's message and the 1-based line and column where it stopped,
/// or when the tree is nested deeper than [`MAX_DEPTH`].
pub fn parse_module(file: &SourceFile) -> Result<Node, SyntaxError> {
    let text = file.text();
    // The parser and the conversion recurse once per level: refuse what would overflow first.
    prescan::check(file).map_err(|refusal| syntax_error(file, refusal.offset, refusal.message))?;
    let parsed = stacker::grow(PARSE_STACK, || match parser::parse(text, Mode::Module, file.name()) {
        Ok(parser::ast::Mod::Module(module)) => {
            let body = convert::stmts("body", &module.body, text.len());
            Ok(Node::new(kind::MODULE, 0..text.len(), None, vec![body]))
        }
        Ok(_) => Err((0, "expected a module".to_string())),
        Err(err) => Err((err.offset.to_usize(), err.error.to_string())),
    });
    let root = parsed
        .map_err(|(offset, message)| syntax_error(file, floor_char_boundary(text, offset.min(text.len())), message))?;
    if let Some(deep) = deeper_than(&root, MAX_DEPTH) {
        let message = format!("the code is nested more than {MAX_DEPTH} levels deep, which pysplice does not handle");
        return Err(syntax_error(file, deep, message));
    }
    if let Some(at) = bare_starred_value(&root) {
        return Err(syntax_error(file, at, "cannot use starred expression here".to_string()));
    }
    Ok(root)
}

/// The start of a starred expression that is the whole value of a `return`, an assignment or
/// an expression statement (`return *x`), which CPython refuses but the parser takes.
fn bare_starred_value(root: &Node) -> Option<usize> {
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if matches!(
            node.kind(),
            kind::RETURN | kind::EXPR | kind::ASSIGN | kind::AUG_ASSIGN | kind::ANN_ASSIGN
        ) {
            if let Some(value) = node.children().iter().find(|child| child.is(kind::STARRED)) {
                return Some(value.range().start);
            }
        }
        stack.extend(node.children());
    }
    None
}

/// The start of a node deeper than `limit`, found without recursion.
fn deeper_than(root: &Node, limit: usize) -> Option<usize> {
    let mut stack = vec![(root, 0)];
    while let Some((node, depth)) = stack.pop() {
        if depth > limit {
            return Some(node.range().start);
        }
        stack.extend(node.children().iter().map(|child| (child, depth + 1)));
    }
    None
}

/// Parses a snippet of statements (hook code, patterns) named `name` in messages.
///
/// # Errors
/// A [`SyntaxError`] when the snippet is not valid Python.
pub fn parse_snippet(name: &str, text: &str) -> Result<Vec<Node>, SyntaxError> {
    let file = SourceFile::new(name, text);
    let module = parse_module(&file)?;
    Ok(module.module_body().map(Node::children).unwrap_or_default().to_vec())
}

/// A name token of a text ([`name_tokens`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NameToken {
    /// Its byte range in the text.
    pub range: std::ops::Range<usize>,
    /// Whether the token before it (line breaks, comments and indentation aside) is a `.`: an
    /// attribute name, not a variable.
    pub after_dot: bool,
}

/// The name tokens of `text` (named `name` in messages) in order, as Python's `tokenize` gives
/// them (`match`, `case` and `type` included): never a part of a string literal or a comment.
///
/// # Errors
/// A [`SyntaxError`] where the text cannot be split into tokens.
pub(crate) fn name_tokens(name: &str, text: &str) -> Result<Vec<NameToken>, SyntaxError> {
    use parser::Tok;
    let mut out = Vec::new();
    let mut after_dot = false;
    for token in parser::lexer::lex(text, Mode::Module) {
        let (tok, range) = token.map_err(|err| {
            let file = SourceFile::new(name, text);
            let offset = floor_char_boundary(text, err.location.to_usize().min(text.len()));
            syntax_error(&file, offset, err.error.to_string())
        })?;
        match tok {
            // Comments and line breaks inside brackets are no tokens of this lexer.
            Tok::Newline | Tok::Indent | Tok::Dedent => continue,
            Tok::Name { .. } | Tok::Match | Tok::Case | Tok::Type => out.push(NameToken {
                range: range.start().to_usize()..range.end().to_usize(),
                after_dot,
            }),
            _ => {}
        }
        after_dot = tok == Tok::Dot;
    }
    Ok(out)
}

fn syntax_error(file: &SourceFile, offset: usize, message: String) -> SyntaxError {
    let at = file.position(offset);
    SyntaxError {
        message,
        location: Location::new(file.name(), at.line, at.column),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::MAX_NESTING;

    #[test]
    fn syntax_errors_carry_line_and_column() {
        let file = SourceFile::new("bad.py", "x = 1\ndef f(:\n    pass\n");
        let err = parse_module(&file).unwrap_err();
        assert_eq!(err.location.line, 2);
        assert_eq!(err.location.column, 7);
        assert!(err.to_string().starts_with("bad.py:2:7: invalid Python:"), "{err}");
    }

    #[test]
    fn name_tokens_skip_strings_and_comments_and_know_attributes() {
        let text = "x = a.x + f'{x}'  # x\nif x:\n    y = (\n        x)\n";
        let names: Vec<(&str, bool)> = name_tokens("t.py", text)
            .unwrap()
            .into_iter()
            .map(|t| (&text[t.range], t.after_dot))
            .collect();
        let expected = [
            ("x", false),
            ("a", false),
            ("x", true),
            ("x", false),
            ("y", false),
            ("x", false),
        ];
        assert_eq!(names, expected);
        let err = name_tokens("t.py", "x = 1\ny = $\n").unwrap_err();
        assert_eq!(err.location.line, 2);
    }

    #[test]
    fn module_body_keeps_statement_ranges() {
        let file = SourceFile::new("m.py", "\u{feff}import os\n@d\ndef f():\n    return 1\n");
        let module = parse_module(&file).unwrap();
        let body = module.field("body").unwrap().children();
        assert_eq!(body.len(), 2);
        assert_eq!(file.slice(body[0].range()), "import os");
        assert_eq!(body[1].kind(), kind::FUNCTION_DEF);
        assert_eq!(body[1].label(), Some("f"));
        assert!(file.slice(body[1].range()).starts_with("def f"));
    }

    #[test]
    fn deep_nesting_is_refused_not_a_crash() {
        let deep = format!("x = 1{}\n", " + 1".repeat(5000));
        let err = parse_module(&SourceFile::new("deep.py", deep)).unwrap_err();
        assert!(err.to_string().contains("nested more than"), "{err}");
        let chain = format!("if x:\n    pass\n{}", "elif x:\n    pass\n".repeat(3000));
        assert!(parse_module(&SourceFile::new("elif.py", chain)).is_err());
        let fine = format!("x = 1{}\n", " + 1".repeat(150));
        assert!(parse_module(&SourceFile::new("ok.py", fine)).is_ok());
    }

    /// The deepest chains the pre-scan lets through still parse on the reserved stack and are
    /// then refused by the depth check; deeper ones never reach the parser.
    #[test]
    fn chains_at_the_prescan_limit_do_not_overflow() {
        let n = MAX_NESTING - 10;
        for text in [
            format!("Z = {}1\n", "-".repeat(n)),
            format!("Z = a{}\n", ".b".repeat(n)),
            format!("Z = {}1\n", "not ".repeat(n)),
            format!("Z = {}1\n", "lambda: ".repeat(n)),
            format!("Z = 1{}\n", "**1".repeat(n)),
            format!("Z = a{}\n", "[0]".repeat(n)),
            format!("Z = 1{}\n", " if 1 else 1".repeat(n)),
            format!("if x:\n pass\n{}", "elif x:\n pass\n".repeat(n - 10)),
        ] {
            let err = parse_module(&SourceFile::new("deep.py", text)).unwrap_err();
            assert!(err.to_string().contains("nested more than"), "{err}");
        }
        let err = parse_module(&SourceFile::new("deep.py", format!("Z = {}1\n", "-".repeat(n + 20)))).unwrap_err();
        assert_eq!(err.location.column, 4 + MAX_NESTING + 1);
        assert!(err.to_string().contains("too deeply nested"), "{err}");
    }

    #[test]
    fn garbage_never_panics() {
        for text in [
            "\0\0",
            "def",
            "class A(:",
            "\"\"\"",
            "(((((",
            "x = [",
            "\t\n  \tif x:\n y",
            "@\n",
            "lambda: (yield)",
        ] {
            let _ = parse_module(&SourceFile::new("g.py", text));
        }
    }
}
