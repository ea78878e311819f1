//! The outline of a file: every class and function at any depth, with the facts hooks need.

use std::ops::Range;

use crate::error::Error;
use crate::parse::parse_module;
use crate::pattern::{visit_statements, Depth};
use crate::source::SourceFile;
use crate::syntax::{kind, Node, LIST};

/// What a definition is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum DefKind {
    /// A `class` statement.
    Class,
    /// A `def` whose enclosing scope is a module or a function.
    Function,
    /// A `def` whose enclosing scope is a class body.
    Method,
}

impl DefKind {
    /// `class`, `function` or `method`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            DefKind::Class => "class",
            DefKind::Function => "function",
            DefKind::Method => "method",
        }
    }
}

/// One class or function of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Definition {
    path: String,
    kind: DefKind,
    is_async: bool,
    line: usize,
    end_line: usize,
    decorator_line: Option<usize>,
    range: Range<usize>,
    body: Range<usize>,
    body_indent: String,
    docstring: Option<Range<usize>>,
    one_line_suite: bool,
    parent: Option<usize>,
    tree_path: Vec<usize>,
}

impl Definition {
    /// The qualified path as CPython's `__qualname__` writes it (`Outer.Inner.method`, `f.<locals>.g`).
    #[must_use]
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The bare name (the last segment of the path).
    #[must_use]
    pub fn name(&self) -> &str {
        self.path.rsplit('.').next().unwrap_or(&self.path)
    }

    /// Class, function or method.
    #[must_use]
    pub fn kind(&self) -> DefKind {
        self.kind
    }

    /// Whether it is an `async def`.
    #[must_use]
    pub fn is_async(&self) -> bool {
        self.is_async
    }

    /// 1-based line of the `class` / `def` (or `async`) keyword, as CPython's `lineno`.
    #[must_use]
    pub fn line(&self) -> usize {
        self.line
    }

    /// 1-based last line of the body, as CPython's `end_lineno`.
    #[must_use]
    pub fn end_line(&self) -> usize {
        self.end_line
    }

    /// 1-based line of the first decorator, if any.
    #[must_use]
    pub fn decorator_line(&self) -> Option<usize> {
        self.decorator_line
    }

    /// Byte range from the keyword to the end of the body.
    #[must_use]
    pub fn range(&self) -> Range<usize> {
        self.range.clone()
    }

    /// Byte range of the body's statements.
    #[must_use]
    pub fn body_range(&self) -> Range<usize> {
        self.body.clone()
    }

    /// The indentation text of the body's statements (what a new body line starts with).
    #[must_use]
    pub fn body_indent(&self) -> &str {
        &self.body_indent
    }

    /// Byte range of the docstring expression, if the body starts with one.
    #[must_use]
    pub fn docstring(&self) -> Option<Range<usize>> {
        self.docstring.clone()
    }

    /// Whether the body sits on the header's line (`def f(): return x`).
    #[must_use]
    pub fn is_one_line_suite(&self) -> bool {
        self.one_line_suite
    }

    /// Index of the enclosing definition in the outline, if any.
    #[must_use]
    pub fn parent(&self) -> Option<usize> {
        self.parent
    }
}

/// A parsed file: its text, syntax tree and outline. Parse once, query many times.
#[derive(Clone, Debug)]
pub struct ParsedFile {
    source: SourceFile,
    root: Node,
    definitions: Vec<Definition>,
}

impl ParsedFile {
    /// Parses `source` and builds its outline.
    ///
    /// ```
    /// let file = pysplice::SourceFile::new("m.py", "class A:\n    async def f(self):\n        def g(): pass\n");
    /// let parsed = pysplice::ParsedFile::parse(file)?;
    /// let paths: Vec<&str> = parsed.definitions().iter().map(|d| d.path()).collect();
    /// assert_eq!(paths, ["A", "A.f", "A.f.<locals>.g"]);
    /// # Ok::<(), pysplice::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`ErrorKind::Syntax`](crate::ErrorKind::Syntax) when the text is not valid Python.
    pub fn parse(source: SourceFile) -> Result<ParsedFile, Error> {
        let root = parse_module(&source)?;
        Ok(ParsedFile::outlined(source, root))
    }

    /// [`ParsedFile::parse`] of `source`, a later version of `previous`'s text, parsing again
    /// only the top-level statements the change touches (see `parse::reparse`); the same tree
    /// and outline as a whole parse.
    pub(crate) fn reparse(source: SourceFile, previous: &ParsedFile) -> Result<ParsedFile, Error> {
        let Some(span) = crate::parse::reparse::changed_span(previous.source.text(), source.text()) else {
            return Ok(ParsedFile {
                source,
                root: previous.root.clone(),
                definitions: previous.definitions.clone(),
            });
        };
        let root = crate::parse::reparse::reparse(&previous.root, previous.source.text(), &source, &[span])?.root;
        Ok(ParsedFile::outlined(source, root))
    }

    /// The file with the outline of `root`, its tree.
    fn outlined(source: SourceFile, root: Node) -> ParsedFile {
        let mut definitions = Vec::new();
        let mut tree_path = vec![0];
        // `parse_module` and `parse::reparse` always give a `Module` with its body.
        if let Some(body) = root.module_body() {
            collect(&source, body, None, &mut tree_path, &mut definitions);
        }
        ParsedFile {
            source,
            root,
            definitions,
        }
    }

    /// The file's text and style.
    #[must_use]
    pub fn source(&self) -> &SourceFile {
        &self.source
    }

    /// The `Module` node.
    #[must_use]
    pub fn root(&self) -> &Node {
        &self.root
    }

    /// The statements at the top level of the module.
    #[must_use]
    pub fn module_body(&self) -> &[Node] {
        self.root.module_body().map(Node::children).unwrap_or_default()
    }

    /// The `body` list node of the module.
    pub(crate) fn module_block(&self) -> &Node {
        // `parse_module` always gives a `Module` with its body.
        self.root.module_body().expect("a parsed file has a module body")
    }

    /// Every class and function in source order, parents before their children.
    #[must_use]
    pub fn definitions(&self) -> &[Definition] {
        &self.definitions
    }

    /// The syntax node of a definition of this file.
    ///
    /// Never panics: a [`Definition`] of another file gives the node at the same place in this
    /// file when there is one, else the module ([`ParsedFile::root`]).
    #[must_use]
    pub fn node(&self, definition: &Definition) -> &Node {
        self.root.at_path(&definition.tree_path).unwrap_or(&self.root)
    }
}

/// The enclosing definition while walking: its index and the names its scope declares `global`.
#[derive(Clone, Copy)]
struct Enclosing<'a> {
    index: usize,
    globals: &'a [String],
}

/// Walks a `list` of statements, recording definitions and descending into every block.
fn collect(
    source: &SourceFile,
    list: &Node,
    scope: Option<Enclosing<'_>>,
    tree_path: &mut Vec<usize>,
    out: &mut Vec<Definition>,
) {
    for (i, stmt) in list.children().iter().enumerate() {
        tree_path.push(i);
        if stmt.is_definition() {
            let index = out.len();
            out.push(definition(source, stmt, scope, tree_path, out));
            let globals = global_names(stmt);
            descend(
                source,
                stmt,
                Some(Enclosing {
                    index,
                    globals: &globals,
                }),
                tree_path,
                out,
            );
        } else {
            descend(source, stmt, scope, tree_path, out);
        }
        tree_path.pop();
    }
}

/// Descends into the statement blocks of `stmt` (bodies, branches, handlers, cases).
fn descend(
    source: &SourceFile,
    stmt: &Node,
    scope: Option<Enclosing<'_>>,
    tree_path: &mut Vec<usize>,
    out: &mut Vec<Definition>,
) {
    for (i, child) in stmt.children().iter().enumerate() {
        tree_path.push(i);
        match (child.kind(), child.label()) {
            (LIST, Some("body" | "orelse" | "finalbody")) => collect(source, child, scope, tree_path, out),
            (LIST, Some("handlers" | "cases")) => {
                for (j, inner) in child.children().iter().enumerate() {
                    tree_path.push(j);
                    descend(source, inner, scope, tree_path, out);
                    tree_path.pop();
                }
            }
            _ => {}
        }
        tree_path.pop();
    }
}

/// The names a definition's own scope declares `global` (not those of nested scopes).
fn global_names(def: &Node) -> Vec<String> {
    let mut names = Vec::new();
    if let Some(body) = def.field("body") {
        visit_statements(body, Depth::Nested, &mut |stmt| {
            if stmt.is(kind::GLOBAL) {
                let declared = stmt.field("names").map(Node::children).unwrap_or_default();
                names.extend(declared.iter().filter_map(Node::label).map(str::to_string));
            }
        });
    }
    names
}

fn definition(
    source: &SourceFile,
    stmt: &Node,
    scope: Option<Enclosing<'_>>,
    tree_path: &[usize],
    out: &[Definition],
) -> Definition {
    let name = stmt.label().unwrap_or_default();
    let parent = scope.map(|s| s.index);
    let parent_def = parent.map(|i| &out[i]);
    // CPython: a name declared `global` in the enclosing scope gets a bare qualified name.
    let declared_global = scope.is_some_and(|s| s.globals.iter().any(|g| g == name));
    let path = match parent_def {
        None => name.to_string(),
        Some(_) if declared_global => name.to_string(),
        Some(p) if p.kind == DefKind::Class => format!("{}.{name}", p.path),
        Some(p) => format!("{}.<locals>.{name}", p.path),
    };
    let kind = match (stmt.kind(), parent_def.map(|p| p.kind)) {
        (kind::CLASS_DEF, _) => DefKind::Class,
        (_, Some(DefKind::Class)) => DefKind::Method,
        _ => DefKind::Function,
    };
    let range = stmt.range();
    let body = stmt.field("body").map_or(range.end..range.end, Node::range);
    let lines = source.lines();
    let decorator_line = stmt
        .field("decorator_list")
        .and_then(|list| list.children().first())
        .map(|first| lines.line_of(first.range().start));
    let first = stmt.field("body").and_then(|b| b.children().first());
    let header_line = lines.line_start(lines.line_of(range.start)).unwrap_or(0);
    let header_indent = leading_whitespace(&source.text()[header_line..range.start]);
    let (one_line_suite, body_indent) = match first {
        Some(first) => {
            // A statement on a backslash continuation line is indented as its logical line is.
            let text = source.text();
            let mut line = lines.line_of(first.range().start);
            while line > 1
                && lines
                    .line_start(line)
                    .is_some_and(|start| text[..start].trim_end_matches(['\n', '\r']).ends_with('\\'))
            {
                line -= 1;
            }
            let line_start = lines.line_start(line).unwrap_or(0);
            let before = &text[line_start..first.range().start];
            if before
                .chars()
                .all(|c| matches!(c, ' ' | '\t' | '\x0c' | '\\' | '\n' | '\r'))
            {
                let indent = &before[..before.len() - before.trim_start_matches([' ', '\t', '\x0c']).len()];
                (false, indent.trim_start_matches('\x0c').to_string())
            } else {
                (true, format!("{header_indent}{}", source.style().indent_unit()))
            }
        }
        None => (false, format!("{header_indent}{}", source.style().indent_unit())),
    };
    let docstring = first
        .and_then(Node::as_expr_stmt)
        .filter(|value| value.is(kind::CONSTANT) && value.label().is_some_and(|l| l.starts_with("str:")))
        .map(Node::range);
    Definition {
        path,
        kind,
        is_async: stmt.is(kind::ASYNC_FUNCTION_DEF),
        line: lines.line_of(range.start),
        end_line: lines.line_of(range.end.saturating_sub(1).max(range.start)),
        decorator_line,
        range,
        body,
        body_indent,
        docstring,
        one_line_suite,
        parent,
        tree_path: tree_path.to_vec(),
    }
}

/// The whitespace a line starts with (form feeds dropped: they reset indentation in Python).
fn leading_whitespace(text: &str) -> String {
    let trimmed = text.trim_start_matches([' ', '\t', '\x0c']);
    text[..text.len() - trimmed.len()].replace('\x0c', "")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Top-level statements to build files from, and pieces to edit them with: some keep the file
    /// valid, some open brackets or strings, continue lines, indent, or add what only the start
    /// of a file may hold.
    const STATEMENTS: &[&str] = &[
        "import os\n",
        "x = (1,\n     2)\n",
        "@dec\ndef f(a):\n    return a\n",
        "class A(B):\n    def g(self):\n        # note\n        pass\n",
        "if x:\n    y = 1\nelse:\n    y = 2\n",
        "s = \"\"\"doc\nstring\"\"\"\n",
        "z = 1; w = 2\n",
        "\n# comment\n\n",
        "async def h():\n    await q\n",
        "t = a \\\n    + b\n",
    ];
    const PIECES: &[&str] = &[
        "",
        "\n",
        "x",
        "#",
        "(",
        ")",
        "\"\"\"",
        "'",
        "\\\n",
        ":\n    ",
        "    ",
        "\u{feff}",
        "def k():\n    pass\n",
        "class C:\n",
        "# coding: latin-1\n",
        "\r\n",
        "\t",
        "é",
        "return 1\n",
        "else:\n",
    ];

    fn text_of(parts: &[usize]) -> String {
        parts.iter().map(|&i| STATEMENTS[i % STATEMENTS.len()]).collect()
    }

    /// The largest char boundary at or before `at`.
    fn boundary(text: &str, at: usize) -> usize {
        let mut at = at.min(text.len());
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        at
    }

    proptest! {
        /// Re-parsing from an earlier version gives what a whole parse gives: the same tree and
        /// outline, or the same error.
        #[test]
        fn reparse_equals_a_whole_parse(
            parts in proptest::collection::vec(0usize..STATEMENTS.len(), 1..8),
            edits in proptest::collection::vec((0usize..400, 0usize..12, 0usize..PIECES.len()), 1..4),
        ) {
            let mut text = text_of(&parts);
            let mut previous = ParsedFile::parse(SourceFile::new("m.py", text.as_str())).unwrap();
            for (at, len, piece) in edits {
                let start = boundary(&text, at);
                let end = boundary(&text, start + len);
                text.replace_range(start..end, PIECES[piece]);
                let whole = ParsedFile::parse(SourceFile::new("m.py", text.as_str()));
                let again = ParsedFile::reparse(SourceFile::new("m.py", text.as_str()), &previous);
                match (whole, again) {
                    (Ok(whole), Ok(again)) => {
                        prop_assert!(whole.root == again.root, "{text:?}");
                        prop_assert_eq!(&whole.definitions, &again.definitions);
                        previous = again;
                    }
                    (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
                    (a, b) => prop_assert!(false, "{text:?}: whole {:?}, again {:?}", a.is_ok(), b.is_ok()),
                }
            }
        }
    }
}
