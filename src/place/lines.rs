//! Line navigation: line starts and ends around offsets, statement starts, indentation.

use crate::syntax::Node;

use super::Placer;

impl Placer<'_> {
    pub(super) fn line_of(&self, offset: usize) -> usize {
        self.source().lines().line_of(offset)
    }

    /// Start of the code of the line holding `offset` (after the BOM on line 1).
    pub(super) fn line_start(&self, offset: usize) -> usize {
        self.source().code_start(self.line_of(offset)).min(offset)
    }

    /// Start of the line after the one holding `offset` (the text's end on the last line).
    pub(super) fn next_line_start(&self, offset: usize) -> usize {
        let lines = self.source().lines();
        lines.line_start(self.line_of(offset) + 1).unwrap_or(self.text().len())
    }

    /// Where a statement starts, decorators included.
    pub(super) fn statement_start(&self, stmt: &Node) -> usize {
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
    pub(super) fn indent_before(&self, offset: usize) -> Option<&str> {
        let before = &self.text()[self.line_start(offset)..offset];
        before
            .chars()
            .all(|c| matches!(c, ' ' | '\t' | '\x0c'))
            .then(|| before.trim_start_matches('\x0c'))
    }

    /// Whether only whitespace, a `;` or a comment follows `offset` on its line.
    pub(super) fn line_ends_after(&self, offset: usize) -> bool {
        let end = self.source().line_range(self.line_of(offset)).end;
        let rest = self.text()[offset..end.max(offset)].trim_start_matches([' ', '\t', '\x0c']);
        let rest = rest
            .strip_prefix(';')
            .map_or(rest, |r| r.trim_start_matches([' ', '\t', '\x0c']));
        rest.is_empty() || rest.starts_with('#')
    }
}
