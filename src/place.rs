//! Placement: turning one hook into edits of one parsed file, in the file's own style.
//!
//! This module knows Python's layout rules: docstrings, one-line suites, statements sharing a
//! line, comments at the end of a line, tabs, CRLF, the BOM and files without a final newline.
//! It never decides whether a hook should apply (see [`crate::engine`]); it only says where
//! and how, or why it cannot.

use std::ops::Range;

use crate::edit::Edit;
use crate::marker;
use crate::outline::{Definition, ParsedFile};
use crate::parse::parse_snippet;
use crate::pattern::{visit_statements, Depth};
use crate::source::{SourceFile, Style};
use crate::spec::{Anchor, ImportLine, Nth, Selector};
use crate::syntax::Node;

/// Why a hook cannot be placed, with the offset it concerns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// Offset in the file the reason is about.
    pub offset: usize,
    /// The reason, for people.
    pub reason: String,
}

type Placed = Result<Vec<Edit>, Refusal>;

fn refuse(offset: usize, reason: impl Into<String>) -> Refusal {
    Refusal {
        offset,
        reason: reason.into(),
    }
}

/// Places hook code in one file.
pub struct Placer<'a> {
    file: &'a ParsedFile,
    recipe: &'a str,
    hook: &'a str,
}

impl<'a> Placer<'a> {
    /// A placer for `hook` of `recipe` in `file`.
    #[must_use]
    pub fn new(file: &'a ParsedFile, recipe: &'a str, hook: &'a str) -> Placer<'a> {
        Placer { file, recipe, hook }
    }

    fn source(&self) -> &SourceFile {
        self.file.source()
    }

    fn style(&self) -> &Style {
        self.source().style()
    }

    fn newline(&self) -> &'static str {
        self.style().newline().as_str()
    }

    fn text(&self) -> &str {
        self.source().text()
    }

    /// Start of the line holding `offset`.
    fn line_start(&self, offset: usize) -> usize {
        let lines = self.source().lines();
        lines.line_start(lines.line_of(offset)).unwrap_or(0)
    }

    /// Start of the line after the one holding `offset` (the text's end on the last line).
    fn next_line_start(&self, offset: usize) -> usize {
        let lines = self.source().lines();
        lines.line_start(lines.line_of(offset) + 1).unwrap_or(self.text().len())
    }

    /// The whitespace before `offset` on its line, if only whitespace precedes it there.
    fn indent_before(&self, offset: usize) -> Option<&str> {
        let before = &self.text()[self.line_start(offset)..offset];
        before
            .chars()
            .all(|c| matches!(c, ' ' | '\t' | '\x0c'))
            .then(|| before.trim_start_matches('\x0c'))
    }

    /// Whether only whitespace or a comment follows `offset` on its line.
    fn line_ends_after(&self, offset: usize) -> bool {
        let end = self.source().line_range(self.source().lines().line_of(offset)).end;
        let rest = self.text()[offset..end.max(offset)].trim_start_matches([' ', '\t', '\x0c']);
        rest.is_empty() || rest.starts_with('#') || rest == "\\"
    }

    /// Indents rendered code: the snippet's indentation unit becomes the file's, every line gets
    /// `indent`, lines inside multi-line strings stay as written, line breaks become the file's.
    /// Returns the lines, each ending with the file's line break.
    pub(crate) fn indent_code(&self, code: &str, indent: &str) -> Result<String, Refusal> {
        let snippet = SourceFile::new("<code>", code);
        let nodes = parse_snippet("<code>", code)
            .map_err(|err| refuse(0, format!("the rendered code does not parse: {err}")))?;
        let mut string_lines = Vec::new();
        for node in &nodes {
            node.walk(&mut |n| {
                if matches!(n.kind(), "Constant" | "JoinedStr") {
                    let first = snippet.lines().line_of(n.range().start);
                    let last = snippet.lines().line_of(n.range().end.saturating_sub(1));
                    string_lines.extend(first + 1..=last);
                    return false;
                }
                true
            });
        }
        let unit = snippet.style().indent_unit().to_string();
        let file_unit = self.style().indent_unit();
        let mut out = String::with_capacity(code.len() * 2);
        for (i, line) in code.split('\n').enumerate() {
            let line = line.strip_suffix('\r').unwrap_or(line);
            if string_lines.contains(&(i + 1)) {
                out.push_str(line);
            } else if !line.trim().is_empty() {
                let trimmed = line.trim_start_matches([' ', '\t']);
                let leading = &line[..line.len() - trimmed.len()];
                let levels = if unit.is_empty() { 0 } else { leading.len() / unit.len() };
                let extra = if unit.is_empty() {
                    leading
                } else {
                    &leading[levels * unit.len()..]
                };
                out.push_str(indent);
                out.push_str(&file_unit.repeat(levels));
                out.push_str(extra);
                out.push_str(trimmed);
            }
            out.push_str(self.newline());
        }
        Ok(out)
    }

    /// A framed block of `lines` inserted at the start of a line (`at`).
    fn block_at_line(&self, at: usize, indent: &str, lines: &str) -> Edit {
        let frame = marker::block(self.recipe, self.hook, indent, self.newline(), lines, None);
        let content = frame.content_offset..frame.content_offset + frame.content_len;
        let text = self.text();
        if at == text.len() && !text.is_empty() && !text.ends_with(['\n', '\r']) {
            // No final line break: the frame starts with one and ends without one.
            let shifted = content.start + self.newline().len()..content.end + self.newline().len();
            Edit::insertion(self.hook, at, format!("{}{}", self.newline(), frame.text)).with_inserted(shifted)
        } else {
            Edit::insertion(self.hook, at, format!("{}{}", frame.text, self.newline())).with_inserted(content)
        }
    }

    /// A framed block that displaces `range` (from a line break or a suite's colon to a line end).
    fn displacing_block(&self, range: Range<usize>, indent: &str, lines: &str, inserted: Vec<Range<usize>>) -> Edit {
        let was = &self.text()[range.clone()];
        let frame = marker::block(self.recipe, self.hook, indent, self.newline(), lines, Some(was));
        let lead = if range.start == 0 { "" } else { self.newline() };
        let base = lead.len() + frame.content_offset;
        let mut edit = Edit::replacement(self.hook, range, format!("{lead}{}", frame.text));
        for r in inserted {
            edit = edit.with_inserted(base + r.start..base + r.end);
        }
        edit
    }

    /// Inserts `code` at `anchor` in the body of `def` (a class or function).
    pub(crate) fn insert_in_definition(&self, def: &Definition, anchor: &Anchor, code: &str) -> Placed {
        let node = self.file.node(def);
        let body = node.field("body").expect("definitions have a body");
        let indent = def.body_indent().to_string();
        if def.is_one_line_suite() && matches!(anchor, Anchor::Start | Anchor::End) {
            return self.expand_suite(def, body, anchor, code);
        }
        match anchor {
            Anchor::Start => {
                let first = &body.children()[0];
                let at = match def.docstring() {
                    Some(doc) => {
                        if !self.line_ends_after(doc.end) {
                            return Err(refuse(doc.end, "the docstring shares its line with other code"));
                        }
                        self.next_line_start(doc.end)
                    }
                    None => self.line_start(first.range().start),
                };
                Ok(vec![self.block_at_line(at, &indent, &self.indent_code(code, &indent)?)])
            }
            Anchor::End => {
                let last = body.children().last().expect("a body has statements");
                if !self.line_ends_after(last.range().end) {
                    return Err(refuse(
                        last.range().end,
                        "the body's last statement shares its line with other code",
                    ));
                }
                let at = self.next_line_start(last.range().end);
                Ok(vec![self.block_at_line(at, &indent, &self.indent_code(code, &indent)?)])
            }
            Anchor::Before(selector) | Anchor::After(selector) => {
                self.insert_at_statements(body, selector, matches!(anchor, Anchor::After(_)), code)
            }
            Anchor::AfterImports => Err(refuse(def.range().start, "`after-imports` is for the module")),
        }
    }

    /// `def f(): return x` with code at its start or end: the suite becomes a block.
    fn expand_suite(&self, def: &Definition, body: &Node, anchor: &Anchor, code: &str) -> Placed {
        let first = &body.children()[0];
        let last = body.children().last().expect("a body has statements");
        let text = self.text();
        let colon_end = text[..first.range().start].trim_end_matches([' ', '\t']).len();
        if !text[..colon_end].ends_with(':') {
            return Err(refuse(
                first.range().start,
                "cannot find the colon of this one-line suite",
            ));
        }
        let end = self
            .source()
            .line_range(self.source().lines().line_of(last.range().end))
            .end;
        let suite = text[first.range().start..end].trim_end();
        let indent = def.body_indent();
        let code_lines = self.indent_code(code, indent)?;
        let suite_line = format!("{indent}{suite}{}", self.newline());
        let docstring_only = def.docstring().is_some() && body.children().len() == 1;
        let code_first = matches!(anchor, Anchor::Start) && !docstring_only;
        if matches!(anchor, Anchor::Start) && def.docstring().is_some() && !docstring_only {
            return Err(refuse(
                first.range().start,
                "a docstring shares its line with other statements",
            ));
        }
        let (lines, inserted) = if code_first {
            (format!("{code_lines}{suite_line}"), 0..code_lines.len())
        } else {
            (
                format!("{suite_line}{code_lines}"),
                suite_line.len()..suite_line.len() + code_lines.len(),
            )
        };
        Ok(vec![self.displacing_block(
            colon_end..end,
            indent,
            &lines,
            vec![inserted],
        )])
    }

    /// The statements of `block` chosen by `selector`, or why none are.
    fn select<'n>(&self, block: &'n Node, selector: &Selector) -> Result<Vec<&'n Node>, Refusal> {
        let found = selector.pattern.find_in(block, selector.depth);
        if found.is_empty() {
            let depth = match selector.depth {
                Depth::Top => "at the top level of the body",
                Depth::Nested => "in the body",
            };
            return Err(refuse(
                block.range().start,
                format!("no statement {depth} matches `{}`", selector.pattern.text()),
            ));
        }
        Ok(match selector.nth {
            Nth::First => found[..1].to_vec(),
            Nth::Last => found[found.len() - 1..].to_vec(),
            Nth::All => found,
        })
    }

    /// Inserts `code` before or after the selected statements of `block`, at their indentation.
    pub(crate) fn insert_at_statements(&self, block: &Node, selector: &Selector, after: bool, code: &str) -> Placed {
        let mut edits = Vec::new();
        for stmt in self.select(block, selector)? {
            let r = stmt.range();
            let Some(indent) = self.indent_before(r.start).map(str::to_string) else {
                return Err(refuse(r.start, "the anchor statement shares its line with other code"));
            };
            let at = if after {
                if !self.line_ends_after(r.end) {
                    return Err(refuse(r.end, "the anchor statement shares its line with other code"));
                }
                self.next_line_start(r.end)
            } else {
                self.line_start(r.start)
            };
            edits.push(self.block_at_line(at, &indent, &self.indent_code(code, &indent)?));
        }
        Ok(edits)
    }

    /// Replaces the selected statements of `block` by `code`.
    pub(crate) fn replace_statements(&self, block: &Node, selector: &Selector, code: &str) -> Placed {
        let mut edits = Vec::new();
        for stmt in self.select(block, selector)? {
            let r = stmt.range();
            let Some(indent) = self.indent_before(r.start).map(str::to_string) else {
                return Err(refuse(
                    r.start,
                    "the statement to replace shares its line with other code",
                ));
            };
            if !self.line_ends_after(r.end) {
                return Err(refuse(
                    r.end,
                    "the statement to replace shares its line with other code",
                ));
            }
            let line_start = self.line_start(r.start);
            let from = if line_start == 0 {
                0
            } else {
                newline_before(self.text(), line_start)
            };
            let to = self.source().line_range(self.source().lines().line_of(r.end)).end;
            let lines = self.indent_code(code, &indent)?;
            let len = lines.len();
            edits.push(
                self.displacing_block(from..to, &indent, &lines, std::iter::once(0..len).collect())
                    .with_removed(r),
            );
        }
        Ok(edits)
    }

    /// Inserts module-level `code` at `anchor`.
    pub(crate) fn insert_in_module(&self, anchor: &Anchor, code: &str) -> Placed {
        let body = &self.file.root().children()[0];
        match anchor {
            Anchor::Start => Ok(vec![self.block_at_line(
                self.module_start(false)?,
                "",
                &self.indent_code(code, "")?,
            )]),
            Anchor::AfterImports => Ok(vec![self.block_at_line(
                self.module_start(true)?,
                "",
                &self.indent_code(code, "")?,
            )]),
            Anchor::End => {
                let at = match body.children().last() {
                    Some(last) if !self.line_ends_after(last.range().end) => {
                        return Err(refuse(
                            last.range().end,
                            "the module's last statement shares its line with other code",
                        ))
                    }
                    Some(last) => self.next_line_start(last.range().end).max(self.text().len()),
                    None => self.text().len(),
                };
                Ok(vec![self.block_at_line(at, "", &self.indent_code(code, "")?)])
            }
            Anchor::Before(selector) | Anchor::After(selector) => {
                self.insert_at_statements(body, selector, matches!(anchor, Anchor::After(_)), code)
            }
        }
    }

    /// Where module code starts: after the docstring and `from __future__` imports, and with
    /// `after_imports` also after the leading block of imports. Comment headers stay on top.
    fn module_start(&self, after_imports: bool) -> Result<usize, Refusal> {
        let body = self.file.module_body();
        let mut last: Option<&Node> = None;
        for (i, stmt) in body.iter().enumerate() {
            let docstring = i == 0 && is_docstring(stmt);
            let future = stmt.kind() == "ImportFrom" && stmt.label() == Some("__future__");
            let import = after_imports && matches!(stmt.kind(), "Import" | "ImportFrom");
            if docstring || future || import {
                last = Some(stmt);
            } else {
                break;
            }
        }
        let bom = if self.style().has_bom() {
            '\u{feff}'.len_utf8()
        } else {
            0
        };
        match last {
            Some(stmt) => {
                if !self.line_ends_after(stmt.range().end) {
                    return Err(refuse(
                        stmt.range().end,
                        "the statement before the insertion point shares its line",
                    ));
                }
                Ok(self.next_line_start(stmt.range().end))
            }
            None => Ok(body
                .first()
                .map_or(self.text().len(), |s| self.line_start(s.range().start))
                .max(bom)),
        }
    }

    /// Frames the imports of `wanted` that the module lacks, after its leading imports.
    pub(crate) fn ensure_imports(&self, wanted: &[ImportLine]) -> Result<(Vec<Edit>, Vec<String>), Refusal> {
        let body = self.file.module_body();
        let mut missing = Vec::new();
        let mut present = Vec::new();
        for import in wanted {
            if has_import(body, import) {
                present.push(import.statement.clone());
                continue;
            }
            if let Some(stmt) = binding_of(body, import.bound_name()) {
                return Err(refuse(
                    stmt.range().start,
                    format!(
                        "`{}` would shadow `{}`, which the module already binds differently",
                        import.statement,
                        import.bound_name()
                    ),
                ));
            }
            missing.push(import.statement.clone());
        }
        if missing.is_empty() {
            return Ok((Vec::new(), present));
        }
        let code = missing.join("\n");
        let at = self.module_start(true)?;
        Ok((vec![self.block_at_line(at, "", &self.indent_code(&code, "")?)], present))
    }

    /// Wraps the value of each return of `def` (not in nested defs) in `render(value)`, except
    /// returns inside statements in `exclude`. Returns the edits and how many returns were left alone.
    pub(crate) fn wrap_returns(
        &self,
        def: &Definition,
        exclude: &[Range<usize>],
        render: &dyn Fn(&str) -> String,
    ) -> Result<(Vec<Edit>, usize), Refusal> {
        let body = self.file.node(def).field("body").expect("definitions have a body");
        let mut returns = Vec::new();
        visit_statements(body, Depth::Nested, &mut |stmt| {
            if stmt.kind() == "Return" {
                returns.push(stmt);
            }
        });
        let mut edits = Vec::new();
        let mut left_alone = 0;
        for ret in returns {
            let r = ret.range();
            if exclude.iter().any(|x| x.start <= r.start && r.end <= x.end) {
                left_alone += 1;
                continue;
            }
            let value = &ret.children()[0];
            let value_text = if value.kind() == "absent" {
                "None".to_string()
            } else {
                let text = self.source().slice(value.range());
                if is_atom(value) {
                    text.to_string()
                } else {
                    format!("({text})")
                }
            };
            let new_stmt = format!("return {}", render(&value_text));
            let line_start = self.line_start(r.start);
            let indent: String = self.text()[line_start..r.start]
                .chars()
                .take_while(|c| matches!(c, ' ' | '\t' | '\x0c'))
                .filter(|&c| c != '\x0c')
                .collect();
            let was = self.source().slice(r.clone());
            let marker = marker::inline(
                self.recipe,
                self.hook,
                &indent,
                self.newline(),
                &new_stmt,
                r.start - line_start,
                was,
            );
            let len = new_stmt.len();
            edits.push(Edit::insertion(self.hook, line_start, marker).last_at_offset());
            edits.push(Edit::replacement(self.hook, r.clone(), new_stmt).with_rewritten(r, 0..len));
        }
        Ok((edits, left_alone))
    }

    /// Adds `def method(self, *args, **kwargs): return self.via.method(...)` at the end of `class`.
    pub(crate) fn add_forwarder(&self, class: &Definition, method: &str, via: &str) -> Placed {
        let code = format!("def {method}(self, *args, **kwargs):\n    return self.{via}.{method}(*args, **kwargs)");
        self.insert_in_definition(class, &Anchor::End, &code)
    }
}

fn newline_before(text: &str, line_start: usize) -> usize {
    if text[..line_start].ends_with("\r\n") {
        line_start - 2
    } else {
        line_start.saturating_sub(1)
    }
}

/// Whether `stmt` is a string expression statement.
pub(crate) fn is_docstring(stmt: &Node) -> bool {
    stmt.kind() == "Expr"
        && stmt.children()[0].kind() == "Constant"
        && stmt.children()[0].label().is_some_and(|l| l.starts_with("str:"))
}

/// Expressions that need no parentheses inside a larger expression.
fn is_atom(value: &Node) -> bool {
    matches!(
        value.kind(),
        "Name"
            | "Attribute"
            | "Call"
            | "Subscript"
            | "Constant"
            | "List"
            | "Dict"
            | "Set"
            | "ListComp"
            | "SetComp"
            | "DictComp"
            | "JoinedStr"
    )
}

/// Whether the module's top level already has exactly this import.
fn has_import(body: &[Node], import: &ImportLine) -> bool {
    body.iter().any(|stmt| {
        let names = stmt.field("names").map(Node::children).unwrap_or_default();
        let alias_of = |a: &Node| a.children().first().and_then(Node::label).map(str::to_string);
        match (stmt.kind(), &import.from) {
            ("Import", None) => names.iter().any(|a| {
                let name = a.label().unwrap_or_default();
                let alias = alias_of(a);
                match &import.alias {
                    Some(want) => name == import.name && alias.as_deref() == Some(want),
                    // `import os.path` binds `os` to the same package as `import os`.
                    None => {
                        alias.is_none()
                            && (name == import.name
                                || name.starts_with(&format!("{}.", import.name)) && !import.name.contains('.'))
                    }
                }
            }),
            ("ImportFrom", Some(from)) => {
                stmt.label() == Some(from.as_str())
                    && names
                        .iter()
                        .any(|a| a.label() == Some(import.name.as_str()) && alias_of(a) == import.alias)
            }
            _ => false,
        }
    })
}

/// A top-level statement that binds `name` (an assignment, def, class or other import).
fn binding_of<'n>(body: &'n [Node], name: &str) -> Option<&'n Node> {
    body.iter().find(|stmt| match stmt.kind() {
        "FunctionDef" | "AsyncFunctionDef" | "ClassDef" => stmt.label() == Some(name),
        "Import" | "ImportFrom" => stmt.field("names").is_some_and(|names| {
            names.children().iter().any(|a| {
                let alias = a.children().first().and_then(Node::label);
                let bound = alias.unwrap_or_else(|| {
                    let full = a.label().unwrap_or_default();
                    if stmt.kind() == "Import" {
                        full.split('.').next().unwrap_or(full)
                    } else {
                        full
                    }
                });
                bound == name
            })
        }),
        "Assign" | "AnnAssign" | "AugAssign" => {
            let mut found = false;
            let targets: Vec<&Node> = match stmt.kind() {
                "Assign" => stmt.children()[0].children().iter().collect(),
                _ => vec![&stmt.children()[0]],
            };
            for target in targets {
                target.walk(&mut |n| {
                    if n.kind() == "Name" && n.label() == Some(name) {
                        found = true;
                    }
                    !matches!(n.kind(), "Attribute" | "Subscript")
                });
            }
            found
        }
        _ => false,
    })
}
