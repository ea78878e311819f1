//! The parser adapter: the only module that touches rustpython-parser and rustpython-ast.
//!
//! It turns text into the crate's own [`Node`] tree, so the rest of the crate (and its users)
//! never see parser types and the parser can be swapped without changing the public API.

mod convert;

use rustpython_parser::{self as parser, Mode};

use crate::error::{Error, HookRef, Location};
use crate::source::{floor_char_boundary, SourceFile};
use crate::syntax::Node;

/// Parses a whole file into a `Module` node whose single child is the `body` list.
///
/// # Errors
/// [`Error::Syntax`] with the parser's message and the 1-based line and column where it stopped.
pub fn parse_module(file: &SourceFile) -> Result<Node, Error> {
    let text = file.text();
    match parser::parse(text, Mode::Module, file.name()) {
        Ok(parser::ast::Mod::Module(module)) => {
            let body = convert::stmts("body", &module.body, text.len());
            Ok(Node::new("Module", 0..text.len(), None, vec![body]))
        }
        Ok(_) => Err(syntax_error(file, 0, "expected a module".into())),
        Err(err) => {
            let offset = floor_char_boundary(text, err.offset.to_usize().min(text.len()));
            Err(syntax_error(file, offset, err.error.to_string()))
        }
    }
}

/// Parses a snippet of statements (hook code, patterns) named `name` in messages.
///
/// # Errors
/// [`Error::Syntax`] when the snippet is not valid Python.
pub fn parse_snippet(name: &str, text: &str) -> Result<Vec<Node>, Error> {
    let file = SourceFile::new(name, text);
    let module = parse_module(&file)?;
    Ok(module.children()[0].children().to_vec())
}

fn syntax_error(file: &SourceFile, offset: usize, message: String) -> Error {
    let at = file.position(offset);
    Error::Syntax {
        location: Location::new(file.name(), at.line, at.column),
        message,
        hook: HookRef::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_carry_line_and_column() {
        let file = SourceFile::new("bad.py", "x = 1\ndef f(:\n    pass\n");
        let err = parse_module(&file).unwrap_err();
        assert_eq!(err.location().line, 2);
        assert_eq!(err.location().column, 7);
        assert!(err.to_string().starts_with("bad.py:2:7: invalid Python:"), "{err}");
    }

    #[test]
    fn module_body_keeps_statement_ranges() {
        let file = SourceFile::new("m.py", "\u{feff}import os\n@d\ndef f():\n    return 1\n");
        let module = parse_module(&file).unwrap();
        let body = module.field("body").unwrap().children();
        assert_eq!(body.len(), 2);
        assert_eq!(file.slice(body[0].range()), "import os");
        assert_eq!(body[1].kind(), "FunctionDef");
        assert_eq!(body[1].label(), Some("f"));
        assert!(file.slice(body[1].range()).starts_with("def f"));
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
