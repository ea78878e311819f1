//! Placement: turning one hook into edits of one parsed file, in the file's own style.
//!
//! This module knows Python's layout rules: docstrings, decorators, one-line suites, statements
//! sharing a line, `elif` chains, comments at the end of a line, tabs, CRLF, the BOM, files
//! without a final newline, and other recipes' marker lines. It never decides whether a hook
//! should apply (see [`crate::engine`]); it only says where and how, or why it cannot.

use std::ops::Range;

use crate::edit::Edit;
use crate::marker::{self, Displaced, MarkerKind, MarkerLine};
use crate::outline::{Definition, ParsedFile};
use crate::pattern::{visit_statements, Depth};
use crate::source::{newlines_inside_literals, SourceFile, Style};
use crate::spec::{Anchor, ImportLine, Nth, Selector};
use crate::syntax::{kind, Node, LIST};

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
    /// 1-based lines that start inside a string literal: never marker lines.
    string_lines: &'a [usize],
}

impl<'a> Placer<'a> {
    /// A placer for `hook` of `recipe` in `file`, whose lines inside string literals are
    /// `string_lines` (see `source::lines_inside_strings`).
    #[must_use]
    pub fn new(file: &'a ParsedFile, recipe: &'a str, hook: &'a str, string_lines: &'a [usize]) -> Placer<'a> {
        Placer {
            file,
            recipe,
            hook,
            string_lines,
        }
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

    fn line_of(&self, offset: usize) -> usize {
        self.source().lines().line_of(offset)
    }

    /// Start of the code of the line holding `offset` (after the BOM on line 1).
    fn line_start(&self, offset: usize) -> usize {
        self.source().code_start(self.line_of(offset)).min(offset)
    }

    /// Start of the line after the one holding `offset` (the text's end on the last line).
    fn next_line_start(&self, offset: usize) -> usize {
        let lines = self.source().lines();
        lines.line_start(self.line_of(offset) + 1).unwrap_or(self.text().len())
    }

    /// Where a statement starts, decorators included.
    fn statement_start(&self, stmt: &Node) -> usize {
        let first_decorator = stmt.field("decorator_list").and_then(|list| list.children().first());
        match first_decorator {
            Some(decorator) => {
                let before = &self.text()[..decorator.range().start];
                before.rfind('@').unwrap_or(stmt.range().start)
            }
            None => stmt.range().start,
        }
    }

    /// The whitespace before `offset` on its line, if only whitespace precedes it there.
    fn indent_before(&self, offset: usize) -> Option<&str> {
        let before = &self.text()[self.line_start(offset)..offset];
        before
            .chars()
            .all(|c| matches!(c, ' ' | '\t' | '\x0c'))
            .then(|| before.trim_start_matches('\x0c'))
    }

    /// Whether only whitespace, a `;` or a comment follows `offset` on its line.
    fn line_ends_after(&self, offset: usize) -> bool {
        let end = self.source().line_range(self.line_of(offset)).end;
        let rest = self.text()[offset..end.max(offset)].trim_start_matches([' ', '\t', '\x0c']);
        let rest = rest
            .strip_prefix(';')
            .map_or(rest, |r| r.trim_start_matches([' ', '\t', '\x0c']));
        rest.is_empty() || rest.starts_with('#')
    }

    /// The marker line holding `at`, if any (never a line inside a string literal).
    fn marker_line(&self, at: usize) -> Option<MarkerLine<'_>> {
        if self.string_lines.binary_search(&self.line_of(at)).is_ok() {
            return None;
        }
        let line = self.source().line_range(self.line_of(at));
        marker::parse_line(&self.text()[line])
    }

    /// The kind and `(recipe, hook)` of the marker line holding `at`, if any.
    fn marker_at(&self, at: usize) -> Option<(MarkerKind, (&str, &str))> {
        self.marker_line(at).map(|m| (m.kind, (m.recipe, m.hook)))
    }

    /// `at` (a line start before a statement) moved up over the opening and inline markers of
    /// other recipes right above it, so their frames stay whole.
    fn before_markers(&self, mut at: usize) -> usize {
        while at > 0 {
            let previous = self.line_start(at - 1);
            match self.marker_line(previous) {
                // Never out of another recipe's expanded one-line suite: the body is inside it.
                Some(m) if m.opens_joined() => break,
                Some(m) if matches!(m.kind, MarkerKind::Begin | MarkerKind::Inline) && previous < at => at = previous,
                _ => break,
            }
        }
        at
    }

    /// Whether the closing marker of block `id` at `at` closes a joined frame: its opening
    /// marker, the nearest one of `id` above, says `joined=`.
    fn is_joined_closer(&self, at: usize, id: (&str, &str)) -> bool {
        let mut line = self.line_of(at);
        while line > 1 {
            line -= 1;
            let start = self.source().code_start(line);
            if let Some(m) = self.marker_line(start) {
                if m.kind == MarkerKind::Begin && (m.recipe, m.hook) == id {
                    return m.opens_joined();
                }
            }
        }
        false
    }

    /// `at` (a line start after a statement) moved down over the closing markers of other
    /// recipes' blocks that end there.
    fn after_markers(&self, mut at: usize) -> usize {
        while at < self.text().len() {
            match self.marker_at(at) {
                Some((MarkerKind::End, id)) if !self.is_joined_closer(at, id) => at = self.next_line_start(at),
                _ => break,
            }
        }
        at
    }

    /// Where among other recipes' blocks next to `at` a new block goes, whatever order the
    /// recipes were applied in: after those whose recipe id sorts before this one, before the
    /// others. This keeps applying and reverting stacked recipes stable.
    fn among_other_blocks(&self, at: usize) -> usize {
        let mut at = self.before_markers(at);
        // Back to the start of the run of whole blocks right above.
        while at > 0 {
            let previous = self.line_start(at - 1);
            let Some((MarkerKind::End, id)) = self.marker_at(previous) else {
                break;
            };
            let Some(begin) = self.opening_marker_above(previous, id) else {
                break;
            };
            at = begin;
        }
        // Then forward past the blocks of recipes that sort first.
        while at < self.text().len() {
            let Some((MarkerKind::Begin, id)) = self.marker_at(at) else {
                break;
            };
            if id.0 >= self.recipe {
                break;
            }
            let Some(end) = self.closing_marker_below(at, id) else {
                break;
            };
            at = self.next_line_start(end);
        }
        at
    }

    /// The start of the line with the opening marker of block `id` that ends on the line at `end`.
    fn opening_marker_above(&self, end: usize, id: (&str, &str)) -> Option<usize> {
        let mut line = self.line_of(end);
        while line > 1 {
            line -= 1;
            let start = self.source().code_start(line);
            match self.marker_at(start) {
                Some((MarkerKind::Begin, found)) if found == id => return Some(start),
                Some((MarkerKind::Begin | MarkerKind::End, _)) => return None,
                _ => {}
            }
        }
        None
    }

    /// The start of the line with the closing marker of block `id` that opens on the line at `begin`.
    fn closing_marker_below(&self, begin: usize, id: (&str, &str)) -> Option<usize> {
        let mut at = self.next_line_start(begin);
        while at < self.text().len() {
            match self.marker_at(at) {
                Some((MarkerKind::End, found)) if found == id => return Some(at),
                Some((MarkerKind::Begin | MarkerKind::End, _)) => return None,
                _ => at = self.next_line_start(at),
            }
        }
        None
    }

    /// Indents rendered code: the snippet's indentation unit becomes the file's, every line gets
    /// `indent`, lines inside multi-line strings stay as written, line breaks become the file's.
    /// Returns the lines, each ending with the file's line break.
    pub(crate) fn indent_code(&self, code: &str, indent: &str) -> Result<String, Refusal> {
        let snippet = SourceFile::new("<code>", code);
        // The lines a string literal continues onto, read lexically: the code was parsed when
        // the recipe was compiled, and the output is parsed again by the verification, so a
        // third parse here (the largest part of planning a long helper) would find nothing new.
        let string_lines: Vec<usize> = newlines_inside_literals(code)
            .into_iter()
            .map(|newline| snippet.lines().line_of(newline) + 1)
            .collect();
        let unit = snippet.style().indent_unit().to_string();
        // Nested levels follow the block's own indentation: a block indented with spaces in a
        // file whose unit is a tab (or the other way round) must not mix the two.
        let file_unit = match (self.style().indent_unit(), indent) {
            (file, block) if !block.is_empty() && !block.contains('\t') && file.contains('\t') => "    ",
            (file, block) if block.contains('\t') && !file.contains('\t') => "\t",
            (file, _) => file,
        };
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

    /// A framed block of `lines` inserted at the start of a line (`at`), placed among other
    /// recipes' blocks there by recipe id.
    fn block_at_line(&self, at: usize, indent: &str, lines: &str) -> Edit {
        let at = if at < self.text().len() || self.text().ends_with(['\n', '\r']) {
            self.among_other_blocks(at)
        } else {
            at
        };
        let frame = marker::block(
            self.recipe,
            self.hook,
            indent,
            self.newline(),
            lines,
            Displaced::Nothing,
        );
        let content = frame.content_offset..frame.content_offset + frame.content_len;
        let text = self.text();
        let depth = indent.len();
        if at == text.len() && !text.is_empty() && !text.ends_with(['\n', '\r']) && at > self.line_start(at) {
            // No final line break: the frame starts with one and ends without one.
            let shifted = content.start + self.newline().len()..content.end + self.newline().len();
            Edit::insertion(self.hook, at, format!("{}{}", self.newline(), frame.text))
                .with_inserted(shifted)
                .with_depth(depth)
        } else {
            Edit::insertion(self.hook, at, format!("{}{}", frame.text, self.line_break_before(at)))
                .with_inserted(content)
                .with_depth(depth)
        }
    }

    /// The line break that ends the line before `at` (a line start), for the line break after a
    /// block inserted there: in a file with mixed line breaks, a block ending in the file's `\r`
    /// would join a following `\n` into one `\r\n`.
    fn line_break_before(&self, at: usize) -> &'static str {
        let before = &self.text()[..at];
        if before.ends_with("\r\n") {
            "\r\n"
        } else if before.ends_with('\r') {
            "\r"
        } else if before.ends_with('\n') || self.text()[at..].starts_with('\n') {
            "\n"
        } else {
            self.newline()
        }
    }

    /// A framed block that takes the place of `range`: whole lines (`joined` false, from a line
    /// start to a line end) or the rest of a line after a colon (`joined` true).
    fn displacing_block(
        &self,
        range: Range<usize>,
        indent: &str,
        lines: &str,
        inserted: Range<usize>,
        joined: bool,
    ) -> Edit {
        let was = &self.text()[range.clone()];
        let displaced = if joined {
            Displaced::Joined(was)
        } else {
            Displaced::Lines(was)
        };
        let frame = marker::block(self.recipe, self.hook, indent, self.newline(), lines, displaced);
        let lead = if joined { self.newline() } else { "" };
        let base = lead.len() + frame.content_offset;
        Edit::replacement(self.hook, range, format!("{lead}{}", frame.text))
            .with_inserted(base + inserted.start..base + inserted.end)
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
                let first = body.children().first().expect("a body has statements");
                let at = match def.docstring() {
                    Some(doc) if body.children().len() > 1 || self.line_ends_after(doc.end) => {
                        if !self.line_ends_after(doc.end) {
                            return Err(refuse(doc.end, "the docstring shares its line with other code"));
                        }
                        self.after_markers(self.next_line_start(doc.end))
                    }
                    _ => self.before_markers(self.line_start(self.statement_start(first))),
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
                let at = self.after_markers(self.next_line_start(last.range().end));
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
        let first = body.children().first().expect("a body has statements");
        let last = body.children().last().expect("a body has statements");
        let text = self.text();
        let colon_end = text[..first.range().start].trim_end_matches([' ', '\t']).len();
        if !text[..colon_end].ends_with(':') {
            return Err(refuse(
                first.range().start,
                "cannot find the colon of this one-line suite",
            ));
        }
        let end = self.source().line_range(self.line_of(last.range().end)).end;
        let suite = text[first.range().start..end].trim_end();
        let indent = def.body_indent();
        let code_lines = self.indent_code(code, indent)?;
        let suite_line = format!("{indent}{suite}{}", self.newline());
        let docstring_only = def.docstring().is_some() && body.children().len() == 1;
        if matches!(anchor, Anchor::Start) && def.docstring().is_some() && !docstring_only {
            return Err(refuse(
                first.range().start,
                "a docstring shares its line with other statements",
            ));
        }
        let code_first = matches!(anchor, Anchor::Start) && !docstring_only;
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
            inserted,
            true,
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
        let chosen = match selector.nth {
            Nth::First => found[..1].to_vec(),
            Nth::Last => found[found.len() - 1..].to_vec(),
            Nth::All => found,
        };
        for stmt in &chosen {
            if self.text()[stmt.range().start..].starts_with("elif") {
                return Err(refuse(
                    stmt.range().start,
                    "the anchor is an `elif` branch, which cannot be split from its `if`; anchor on the whole `if` or inside the branch",
                ));
            }
        }
        Ok(chosen)
    }

    /// Inserts `code` before or after the selected statements of `block`, at their indentation.
    pub(crate) fn insert_at_statements(&self, block: &Node, selector: &Selector, after: bool, code: &str) -> Placed {
        let mut edits = Vec::new();
        for stmt in self.select(block, selector)? {
            let start = self.statement_start(stmt);
            let Some(indent) = self.indent_before(start).map(str::to_string) else {
                return Err(refuse(start, "the anchor statement shares its line with other code"));
            };
            let at = if after {
                if !self.line_ends_after(stmt.range().end) {
                    return Err(refuse(
                        stmt.range().end,
                        "the anchor statement shares its line with other code",
                    ));
                }
                self.after_markers(self.next_line_start(stmt.range().end))
            } else {
                self.before_markers(self.line_start(start))
            };
            edits.push(self.block_at_line(at, &indent, &self.indent_code(code, &indent)?));
        }
        Ok(edits)
    }

    /// Replaces the selected statements of `block` by `code`.
    pub(crate) fn replace_statements(&self, block: &Node, selector: &Selector, code: &str) -> Placed {
        let mut edits = Vec::new();
        for stmt in self.select(block, selector)? {
            let start = self.statement_start(stmt);
            let Some(indent) = self.indent_before(start).map(str::to_string) else {
                return Err(refuse(
                    start,
                    "the statement to replace shares its line with other code",
                ));
            };
            if !self.line_ends_after(stmt.range().end) {
                return Err(refuse(
                    stmt.range().end,
                    "the statement to replace shares its line with other code",
                ));
            }
            let from = self.line_start(start);
            let to = self.source().line_range(self.line_of(stmt.range().end)).end;
            let lines = self.indent_code(code, &indent)?;
            let len = lines.len();
            edits.push(
                self.displacing_block(from..to, &indent, &lines, 0..len, false)
                    .with_removed(stmt.range()),
            );
        }
        Ok(edits)
    }

    /// Inserts module-level `code` at `anchor`.
    pub(crate) fn insert_in_module(&self, anchor: &Anchor, code: &str) -> Placed {
        let body = self.file.module_block();
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
                    Some(_) | None => self.text().len(),
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
            // Past the imports, a string statement after the docstring (a licence, a second
            // docstring) is part of the header too: code never goes above imports below it.
            let docstring = (i == 0 || after_imports) && is_docstring(stmt);
            let future = stmt.is(kind::IMPORT_FROM) && stmt.label() == Some("__future__");
            let import = after_imports && matches!(stmt.kind(), kind::IMPORT | kind::IMPORT_FROM);
            if docstring || future || import {
                last = Some(stmt);
            } else {
                break;
            }
        }
        match last {
            Some(stmt) => {
                if !self.line_ends_after(stmt.range().end) {
                    return Err(refuse(
                        stmt.range().end,
                        "the statement before the insertion point shares its line",
                    ));
                }
                Ok(self.after_markers(self.next_line_start(stmt.range().end)))
            }
            None => Ok(match body.first() {
                Some(first) => self.before_markers(self.line_start(self.statement_start(first))),
                None => self.text().len(),
            }),
        }
    }

    /// Frames the imports of `wanted` that the module lacks, after its leading imports.
    pub(crate) fn ensure_imports(&self, wanted: &[ImportLine]) -> Result<(Vec<Edit>, Vec<String>), Refusal> {
        let body = self.file.module_block();
        let mut module_level = Vec::new();
        visit_statements(body, Depth::Nested, &mut |stmt| module_level.push(stmt));
        // Imports inside other recipes' blocks are theirs: reverting one must not take away an
        // import this recipe uses, so they do not count as present.
        let foreign = marker::block_ranges(self.source());
        let own: Vec<&Node> = module_level
            .iter()
            .copied()
            .filter(|stmt| !marker::covers(&foreign, &stmt.range()))
            .collect();
        // Only the module's own top-level statements can bind a name unconditionally.
        let own_top_level: Vec<&Node> = body
            .children()
            .iter()
            .filter(|stmt| !marker::covers(&foreign, &stmt.range()))
            .collect();
        let mut missing = Vec::new();
        let mut present = Vec::new();
        for import in wanted {
            if has_import(&own_top_level, import) {
                present.push(import.statement.clone());
                continue;
            }
            // The same import in another recipe's block binds the same thing: no conflict.
            let theirs: Vec<&Node> = module_level
                .iter()
                .copied()
                .filter(|stmt| marker::covers(&foreign, &stmt.range()))
                .collect();
            let shadowed = binding_of(&own, import).or_else(|| {
                (!has_import(&theirs, import))
                    .then(|| binding_of(&theirs, import))
                    .flatten()
            });
            if let Some(stmt) = shadowed {
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
        // Before other blocks at the same place (after-imports code that uses these names).
        let block = self
            .block_at_line(at, "", &self.indent_code(&code, "")?)
            .first_at_offset();
        Ok((vec![block], present))
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
            if stmt.is(kind::RETURN) {
                returns.push(stmt);
            }
        });
        let generator = is_generator(body);
        let mut edits = Vec::new();
        let mut left_alone = 0;
        let mut lines_used = Vec::new();
        for ret in returns {
            let r = ret.range();
            // A bare `return` ends a generator: it returns no value to wrap (and an async
            // generator may not return one), so it is left alone.
            let bare_in_generator = generator && ret.as_return() == Some(None);
            if bare_in_generator || exclude.iter().any(|x| x.start <= r.start && r.end <= x.end) {
                left_alone += 1;
                continue;
            }
            let line = self.line_of(r.start);
            if lines_used.contains(&line) {
                return Err(refuse(
                    r.start,
                    format!("two return statements share line {line}; put them on lines of their own"),
                ));
            }
            lines_used.push(line);
            let new_stmt = self.wrapped_return(ret, render);
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

    /// The statement that takes the place of `ret`: `return TEMPLATE` with its value.
    fn wrapped_return(&self, ret: &Node, render: &dyn Fn(&str) -> String) -> String {
        let value_text = if let Some(value) = ret.as_return().flatten() {
            // Everything after `return`, brackets included: a parenthesised value may span
            // lines or be an implicit concatenation that needs them.
            let text = return_value_text(self.source().slice(ret.range()));
            if is_atom(value, text) {
                text.to_string()
            } else {
                format!("({text})")
            }
        } else {
            "None".to_string()
        };
        format!("return {}", render(&value_text))
    }

    /// Several hooks of this recipe on one one-line suite (`def f(x): return x` with code at its
    /// start and end and its return wrapped): one expansion of the suite into a block, framed by
    /// the first hook, holding the other hooks' blocks and inline changes as frames of their
    /// own, in recipe order. `parts` are (hook, what it does), in recipe order.
    pub(crate) fn compose_suite(&self, def: &Definition, parts: &[(&str, SuitePart<'_>)]) -> Placed {
        let node = self.file.node(def);
        let body = node.field("body").expect("definitions have a body");
        let first = body.children().first().expect("a body has statements");
        let last = body.children().last().expect("a body has statements");
        let text = self.text();
        let colon_end = text[..first.range().start].trim_end_matches([' ', '\t']).len();
        if !text[..colon_end].ends_with(':') {
            return Err(refuse(
                first.range().start,
                "cannot find the colon of this one-line suite",
            ));
        }
        if def.docstring().is_some() {
            return Err(refuse(
                first.range().start,
                "a docstring shares its line with other statements",
            ));
        }
        let end = self.source().line_range(self.line_of(last.range().end)).end;
        let suite = text[first.range().start..end].trim_end();
        let indent = def.body_indent();
        let newline = self.newline();
        let owner = parts[0].0;
        let mut lines = String::new();
        let mut inserted: Vec<Range<usize>> = Vec::new();
        let mut rewritten = None;
        let push_code =
            |lines: &mut String, inserted: &mut Vec<Range<usize>>, hook: &str, code: &str| -> Result<(), Refusal> {
                let code = self.indent_code(code, indent)?;
                if hook == owner {
                    inserted.push(lines.len()..lines.len() + code.len());
                    lines.push_str(&code);
                } else {
                    let frame = marker::block(self.recipe, hook, indent, newline, &code, Displaced::Nothing);
                    let start = lines.len() + frame.content_offset;
                    inserted.push(start..start + frame.content_len);
                    lines.push_str(&frame.text);
                    lines.push_str(newline);
                }
                Ok(())
            };
        for (hook, part) in parts {
            if let SuitePart::Start(code) = part {
                push_code(&mut lines, &mut inserted, hook, code)?;
            }
        }
        let mut suite_line = suite.to_string();
        let mut wraps = parts.iter().filter_map(|(hook, part)| match part {
            SuitePart::Wrap(ret, render) => Some((*hook, *ret, render)),
            _ => None,
        });
        if let Some((hook, ret, render)) = wraps.next() {
            if let Some((other, _, _)) = wraps.next() {
                return Err(refuse(
                    ret.range().start,
                    format!("hooks `{hook}` and `{other}` both wrap this return"),
                ));
            }
            let new_stmt = self.wrapped_return(ret, render);
            let at = ret.range().start - first.range().start;
            let was = &suite[at..ret.range().end - first.range().start];
            let marker = marker::inline(self.recipe, hook, indent, newline, &new_stmt, indent.len() + at, was);
            lines.push_str(&marker);
            let stmt_start = lines.len() + indent.len() + at;
            rewritten = Some((ret.range(), stmt_start..stmt_start + new_stmt.len()));
            suite_line = format!(
                "{}{new_stmt}{}",
                &suite[..at],
                &suite[ret.range().end - first.range().start..]
            );
        }
        lines.push_str(indent);
        lines.push_str(&suite_line);
        lines.push_str(newline);
        for (hook, part) in parts {
            if let SuitePart::End(code) = part {
                push_code(&mut lines, &mut inserted, hook, code)?;
            }
        }
        let was = &text[colon_end..end];
        let frame = marker::block(self.recipe, owner, indent, newline, &lines, Displaced::Joined(was));
        let base = newline.len() + frame.content_offset;
        let mut edit = Edit::replacement(self.hook, colon_end..end, format!("{newline}{}", frame.text));
        for range in inserted {
            edit = edit.with_inserted(base + range.start..base + range.end);
        }
        if let Some((original, new)) = rewritten {
            edit = edit.with_rewritten(original, base + new.start..base + new.end);
        }
        Ok(vec![edit])
    }

    /// Adds `def method(self, *args, **kwargs): return self.via.method(...)` at the end of `class`.
    pub(crate) fn add_forwarder(&self, class: &Definition, method: &str, via: &str) -> Placed {
        let code = format!("def {method}(self, *args, **kwargs):\n    return self.{via}.{method}(*args, **kwargs)");
        self.insert_in_definition(class, &Anchor::End, &code)
    }
}

/// What one hook does to a one-line suite that several hooks change (see
/// [`Placer::compose_suite`]).
pub(crate) enum SuitePart<'a> {
    /// Code at the start of the body.
    Start(String),
    /// Code at the end of the body.
    End(String),
    /// The suite's return, wrapped by a template.
    Wrap(&'a Node, Box<dyn Fn(&str) -> String + 'a>),
}

/// Whether `stmt` is a string expression statement.
pub(crate) fn is_docstring(stmt: &Node) -> bool {
    stmt.as_expr_stmt()
        .is_some_and(|value| value.is(kind::CONSTANT) && value.label().is_some_and(|l| l.starts_with("str:")))
}

/// The value of a `return` statement's text: what follows the keyword, from its first bracket
/// or token to the statement's end (backslash continuations after the keyword skipped).
fn return_value_text(statement: &str) -> &str {
    let mut rest = statement.strip_prefix("return").unwrap_or(statement);
    loop {
        let trimmed = rest.trim_start_matches([' ', '\t', '\x0c']);
        match trimmed.strip_prefix('\\') {
            Some(after) => rest = after.trim_start_matches(['\r', '\n']),
            None => return trimmed,
        }
    }
}

/// Whether the value's text (`text`, the whole value with its brackets) needs no parentheses
/// inside a larger expression: one bracketed expression (`(a, b)`, not `(a), b`), or a
/// primary (a name, attribute, call, subscript or literal).
fn is_atom(value: &Node, text: &str) -> bool {
    crate::verify::brackets::is_enclosed(text)
        || matches!(
            value.kind(),
            kind::NAME | kind::ATTRIBUTE | kind::CALL | kind::SUBSCRIPT | kind::CONSTANT | kind::JOINED_STR
        )
}

/// Whether the function body `body` yields (not counting nested defs, classes and lambdas).
fn is_generator(body: &Node) -> bool {
    let mut found = false;
    body.walk(&mut |n| {
        found |= matches!(n.kind(), kind::YIELD | kind::YIELD_FROM);
        !found && !n.is_definition() && !n.is(kind::LAMBDA)
    });
    found
}

/// Whether the module has this import and binds its name unconditionally: a top-level import,
/// or a statement holding the import that binds the name on every path (`try: import x` with
/// an `except` fallback that binds `x` too). An import under `if TYPE_CHECKING:`, in one arm of
/// an `if` or in a function does not count: code placed after the imports would not find it.
fn has_import(statements: &[&Node], import: &ImportLine) -> bool {
    let name = import.bound_name();
    statements
        .iter()
        .any(|stmt| holds_import(stmt, import) && always_binds(stmt, name))
}

/// Whether `stmt` is, or holds in its blocks (not in nested defs or classes), this import.
fn holds_import(stmt: &Node, import: &ImportLine) -> bool {
    if is_same_import(stmt, import) {
        return true;
    }
    let mut holds = false;
    if !stmt.is_definition() {
        for block in stmt.blocks() {
            visit_statements(block, Depth::Nested, &mut |inner| {
                holds |= is_same_import(inner, import)
            });
        }
    }
    holds
}

/// Whether running `stmt` binds `name` on every path that goes on after it (a path that raises
/// does not go on).
fn always_binds(stmt: &Node, name: &str) -> bool {
    let block = |field: &str| stmt.field(field).is_some_and(|b| block_binds(b, name));
    match stmt.kind() {
        kind::RAISE => true,
        kind::IMPORT | kind::IMPORT_FROM => stmt.field("names").is_some_and(|names| {
            names.children().iter().any(|alias| {
                let full = alias.label().unwrap_or_default();
                let bound = match alias.asname() {
                    Some(asname) => asname,
                    None if stmt.is(kind::IMPORT) => full.split('.').next().unwrap_or(full),
                    None => full,
                };
                bound == name
            })
        }),
        kind::FUNCTION_DEF | kind::ASYNC_FUNCTION_DEF | kind::CLASS_DEF => stmt.label() == Some(name),
        kind::ASSIGN => stmt
            .as_assign()
            .is_some_and(|a| a.targets.iter().any(|t| target_binds(t, name))),
        kind::ANN_ASSIGN => stmt
            .as_ann_assign()
            .is_some_and(|a| a.value.is_some() && target_binds(a.target, name)),
        kind::IF => block("body") && block("orelse"),
        kind::WITH | kind::ASYNC_WITH => block("body"),
        kind::TRY | kind::TRY_STAR => {
            let handlers = stmt.field("handlers").map(Node::children).unwrap_or_default();
            block("finalbody")
                || ((block("body") || block("orelse"))
                    && handlers
                        .iter()
                        .all(|h| h.field("body").is_some_and(|b| block_binds(b, name))))
        }
        _ => false,
    }
}

/// Whether `stmt` itself binds `name` in its scope (an assignment, import, `def`, `class`,
/// `for` or `with` target), whether or not it always runs.
pub(crate) fn binds_name(stmt: &Node, name: &str) -> bool {
    match stmt.kind() {
        kind::AUG_ASSIGN => stmt.as_aug_assign().is_some_and(|a| target_binds(a.target, name)),
        kind::FOR | kind::ASYNC_FOR => stmt.as_for().is_some_and(|f| target_binds(f.target, name)),
        kind::ANN_ASSIGN => stmt.as_ann_assign().is_some_and(|a| target_binds(a.target, name)),
        kind::WITH | kind::ASYNC_WITH => stmt.as_with().is_some_and(|with| {
            with.items.iter().any(|item| {
                item.as_with_item()
                    .and_then(|item| item.vars)
                    .is_some_and(|vars| target_binds(vars, name))
            })
        }),
        kind::IF | kind::TRY | kind::TRY_STAR | kind::RAISE => false,
        _ => always_binds(stmt, name),
    }
}

fn block_binds(block: &Node, name: &str) -> bool {
    block.children().iter().any(|stmt| always_binds(stmt, name))
}

fn target_binds(target: &Node, name: &str) -> bool {
    match target.kind() {
        kind::NAME => target.label() == Some(name),
        kind::TUPLE | kind::LIST_DISPLAY | LIST => target.children().iter().any(|t| target_binds(t, name)),
        kind::STARRED => target.operand().is_some_and(|value| target_binds(value, name)),
        _ => false,
    }
}

/// Whether `stmt` is an import statement holding exactly `import` (`import os.path` counts for
/// `import os`: it binds `os` to the same package).
fn is_same_import(stmt: &Node, import: &ImportLine) -> bool {
    let names = stmt.field("names").map(Node::children).unwrap_or_default();
    let alias_of = |a: &Node| a.asname().map(str::to_string);
    match (stmt.kind(), &import.from) {
        (kind::IMPORT, None) => names.iter().any(|a| {
            let name = a.label().unwrap_or_default();
            let alias = alias_of(a);
            match &import.alias {
                Some(want) => name == import.name && alias.as_deref() == Some(want),
                None => {
                    alias.is_none()
                        && (name == import.name
                            || (!import.name.contains('.') && name.starts_with(&format!("{}.", import.name))))
                }
            }
        }),
        (kind::IMPORT_FROM, Some(from)) => {
            stmt.label() == Some(from.as_str())
                && names
                    .iter()
                    .any(|a| a.label() == Some(import.name.as_str()) && alias_of(a) == import.alias)
        }
        _ => false,
    }
}

/// A module-level statement that binds the name `import` would bind to something else.
fn binding_of<'n>(module_level: &[&'n Node], import: &ImportLine) -> Option<&'n Node> {
    let name = import.bound_name();
    // `import a.b` and `import a` bind `a` to the same package.
    let same_package = import.from.is_none() && import.alias.is_none();
    module_level.iter().copied().find(|stmt| match stmt.kind() {
        kind::FUNCTION_DEF | kind::ASYNC_FUNCTION_DEF | kind::CLASS_DEF => stmt.label() == Some(name),
        // The same import, only conditional (`if TYPE_CHECKING:`), binds the same thing.
        kind::IMPORT | kind::IMPORT_FROM if is_same_import(stmt, import) => false,
        kind::IMPORT | kind::IMPORT_FROM => stmt.field("names").is_some_and(|names| {
            names.children().iter().any(|a| {
                let alias = a.asname();
                let full = a.label().unwrap_or_default();
                let plain = stmt.is(kind::IMPORT) && alias.is_none();
                let bound = alias.unwrap_or_else(|| {
                    if plain {
                        full.split('.').next().unwrap_or(full)
                    } else {
                        full
                    }
                });
                bound == name && !(same_package && plain)
            })
        }),
        kind::ASSIGN | kind::ANN_ASSIGN | kind::AUG_ASSIGN => {
            let mut found = false;
            let targets: Vec<&Node> = if let Some(assign) = stmt.as_assign() {
                assign.targets.iter().collect()
            } else {
                stmt.as_ann_assign()
                    .map(|a| a.target)
                    .or_else(|| stmt.as_aug_assign().map(|a| a.target))
                    .into_iter()
                    .collect()
            };
            for target in targets {
                target.walk(&mut |n| {
                    if n.as_name() == Some(name) {
                        found = true;
                    }
                    !matches!(n.kind(), kind::ATTRIBUTE | kind::SUBSCRIPT)
                });
            }
            found
        }
        _ => false,
    })
}
