//! Marker neighbours: other recipes' marker lines around an insertion point, so new blocks
//! go around their frames, never into them, in an order that does not depend on the order
//! the recipes were applied in.

use crate::marker::{self, MarkerKind, MarkerLine};

use super::Placer;

impl Placer<'_> {
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
    pub(super) fn before_markers(&self, mut at: usize) -> usize {
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
    pub(super) fn after_markers(&self, mut at: usize) -> usize {
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
    pub(super) fn among_other_blocks(&self, at: usize) -> usize {
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
}
