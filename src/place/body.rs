//! The start and end of a class or function body, and forwarders added at a class's end.

use crate::error::PlacementReason;
use crate::outline::Definition;
use crate::spec::Anchor;

use super::{refuse, CodeAt, Insertion, Placed, Placer};

impl Placer<'_> {
    /// Inserts `code` at `anchor` in the body of `def` (a class or function).
    pub(crate) fn insert_in_definition(&self, def: &Definition, anchor: &Anchor, code: &CodeAt<'_>) -> Placed {
        let node = self.file.node(def);
        let body = node.field("body").expect("definitions have a body");
        let indent = def.body_indent().to_string();
        if def.is_one_line_suite() && matches!(anchor, Anchor::Start | Anchor::End) {
            return self.expand_suite(def, body, anchor, &code(None)?);
        }
        match anchor {
            Anchor::Start => {
                let first = body.children().first().expect("a body has statements");
                let at = match def.docstring() {
                    Some(doc) if body.children().len() > 1 || self.line_ends_after(doc.end) => {
                        if !self.line_ends_after(doc.end) {
                            return Err(refuse(doc.end, PlacementReason::DocstringSharesLine));
                        }
                        self.after_markers(self.next_line_start(doc.end))
                    }
                    _ => self.before_markers(self.line_start(self.statement_start(first))),
                };
                Ok(vec![self.frame(&Insertion::new(at, indent), &code(None)?)?])
            }
            Anchor::End => {
                let last = body.children().last().expect("a body has statements");
                if !self.line_ends_after(last.range().end) {
                    return Err(refuse(last.range().end, PlacementReason::BodyEndSharesLine));
                }
                let at = self.after_markers(self.next_line_start(last.range().end));
                Ok(vec![self.frame(&Insertion::new(at, indent), &code(None)?)?])
            }
            Anchor::Before(selector) | Anchor::After(selector) => {
                self.insert_at_statements(body, selector, matches!(anchor, Anchor::After(_)), code)
            }
            Anchor::AfterImports => Err(refuse(def.range().start, PlacementReason::AfterImportsInDefinition)),
        }
    }

    /// Adds `def method(self, *args, **kwargs): return self.via.method(...)` at the end of `class`.
    pub(crate) fn add_forwarder(&self, class: &Definition, method: &str, via: &str) -> Placed {
        let code = format!("def {method}(self, *args, **kwargs):\n    return self.{via}.{method}(*args, **kwargs)");
        self.insert_in_definition(class, &Anchor::End, &|_| Ok(code.clone()))
    }
}
