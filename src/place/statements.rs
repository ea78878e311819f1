//! Statements chosen by a selector: code before or after them, or in their place.

use crate::pattern::Depth;
use crate::spec::{Nth, Selector};
use crate::syntax::Node;

use super::{count_added, refuse, Displacement, Insertion, Placed, Placer, Refusal};

impl Placer<'_> {
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
        // `nth = "all"` repeats the code at every match: bounded as a whole, match by match.
        let mut added = 0;
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
            let edit = self.frame(&Insertion::new(at, indent), code)?;
            count_added(&mut added, &edit, start)?;
            edits.push(edit);
        }
        Ok(edits)
    }

    /// Replaces the selected statements of `block` by `code`.
    pub(crate) fn replace_statements(&self, block: &Node, selector: &Selector, code: &str) -> Placed {
        let mut edits = Vec::new();
        let mut added = 0;
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
            let place = Displacement::lines(from..to, indent);
            let edit = self.displacing_block(&place, &lines, 0..len).with_removed(stmt.range());
            count_added(&mut added, &edit, start)?;
            edits.push(edit);
        }
        Ok(edits)
    }
}
