//! Statements chosen by a selector: code before or after them, or in their place.

use crate::error::PlacementReason;
use crate::spec::{Nth, StatementSelector};
use crate::syntax::Node;

use super::{count_added, refuse, CodeAt, Displacement, Insertion, Placed, Placer, Refusal};

impl Placer<'_> {
    /// The statements of `block` chosen by `selector`, or why none are.
    fn select<'n>(&self, block: &'n Node, selector: &StatementSelector) -> Result<Vec<&'n Node>, Refusal> {
        let found = selector.pattern.find_in(block, selector.depth);
        if found.is_empty() {
            return Err(refuse(
                block.range().start,
                PlacementReason::NoMatch {
                    depth: selector.depth,
                    pattern: selector.pattern.text().to_string(),
                },
            ));
        }
        let chosen = match selector.nth {
            Nth::First => found[..1].to_vec(),
            Nth::Last => found[found.len() - 1..].to_vec(),
            Nth::All => found,
        };
        for stmt in &chosen {
            if self.text()[stmt.range().start..].starts_with("elif") {
                return Err(refuse(stmt.range().start, PlacementReason::ElifAnchor));
            }
        }
        Ok(chosen)
    }

    /// Inserts `code` before or after the selected statements of `block`, at their indentation,
    /// each time rendered for the statement it goes next to.
    pub(crate) fn insert_at_statements(
        &self,
        block: &Node,
        selector: &StatementSelector,
        after: bool,
        code: &CodeAt<'_>,
    ) -> Placed {
        let mut edits = Vec::new();
        // `nth = "all"` repeats the code at every match: bounded as a whole, match by match.
        let mut added = 0;
        for stmt in self.select(block, selector)? {
            let start = self.statement_start(stmt);
            let Some(indent) = self.indent_before(start).map(str::to_string) else {
                return Err(refuse(start, PlacementReason::AnchorSharesLine));
            };
            let at = if after {
                if !self.line_ends_after(stmt.range().end) {
                    return Err(refuse(stmt.range().end, PlacementReason::AnchorSharesLine));
                }
                self.after_markers(self.next_line_start(stmt.range().end))
            } else {
                self.before_markers(self.line_start(start))
            };
            let edit = self.frame(&Insertion::new(at, indent), &code(Some(stmt))?)?;
            count_added(&mut added, &edit, start)?;
            edits.push(edit);
        }
        Ok(edits)
    }

    /// Replaces the selected statements of `block` by `code`, each time rendered for the
    /// statement it replaces.
    pub(crate) fn replace_statements(&self, block: &Node, selector: &StatementSelector, code: &CodeAt<'_>) -> Placed {
        let mut edits = Vec::new();
        let mut added = 0;
        for stmt in self.select(block, selector)? {
            let start = self.statement_start(stmt);
            let Some(indent) = self.indent_before(start).map(str::to_string) else {
                return Err(refuse(start, PlacementReason::ReplacedSharesLine));
            };
            if !self.line_ends_after(stmt.range().end) {
                return Err(refuse(stmt.range().end, PlacementReason::ReplacedSharesLine));
            }
            let from = self.line_start(start);
            let to = self.source().line_range(self.line_of(stmt.range().end)).end;
            let lines = self.indent_code(&code(Some(stmt))?, &indent)?;
            let len = lines.len();
            let place = Displacement::lines(from..to, indent);
            let edit = self.displacing_block(&place, &lines, 0..len).with_removed(stmt.range());
            count_added(&mut added, &edit, start)?;
            edits.push(edit);
        }
        Ok(edits)
    }
}
