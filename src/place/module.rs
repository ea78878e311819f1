//! Module-level code: at the top (after the docstring and `__future__` imports), after the
//! leading imports, at the end.

use crate::error::PlacementReason;
use crate::spec::Anchor;
use crate::syntax::{kind, Node};

use super::{is_docstring, refuse, CodeAt, Insertion, Placed, Placer, Refusal};

impl Placer<'_> {
    /// Inserts module-level `code` at `anchor`.
    pub(crate) fn insert_in_module(&self, anchor: &Anchor, code: &CodeAt<'_>) -> Placed {
        let body = self.file.module_block();
        let place = match anchor {
            Anchor::Start => self.module_start(false)?,
            Anchor::AfterImports => self.module_start(true)?,
            Anchor::End => {
                let at = match body.children().last() {
                    Some(last) if !self.line_ends_after(last.range().end) => {
                        return Err(refuse(last.range().end, PlacementReason::ModuleEndSharesLine))
                    }
                    Some(_) | None => self.text().len(),
                };
                Insertion::new(at, "")
            }
            Anchor::Before(selector) | Anchor::After(selector) => {
                return self.insert_at_statements(body, selector, matches!(anchor, Anchor::After(_)), code)
            }
        };
        Ok(vec![self.frame(&place, &code(None)?)?])
    }

    /// Where module code starts: after the docstring and `from __future__` imports, and with
    /// `after_imports` also after the leading block of imports. Comment headers stay on top.
    pub(super) fn module_start(&self, after_imports: bool) -> Result<Insertion, Refusal> {
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
        let at = match last {
            Some(stmt) => {
                if !self.line_ends_after(stmt.range().end) {
                    return Err(refuse(stmt.range().end, PlacementReason::PreviousSharesLine));
                }
                self.after_markers(self.next_line_start(stmt.range().end))
            }
            None => match body.first() {
                Some(first) => self.before_markers(self.line_start(self.statement_start(first))),
                None => self.text().len(),
            },
        };
        Ok(Insertion::new(at, ""))
    }
}
