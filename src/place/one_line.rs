//! One-line suites (`def f(x): return x`): expanded into a block for one hook, or for several
//! hooks of one recipe at once.

use crate::error::PlacementReason;
use std::ops::Range;

use crate::edit::Edit;
use crate::marker::{self, Displaced};
use crate::outline::Definition;
use crate::spec::Anchor;
use crate::syntax::Node;

use super::{refuse, Displacement, Placed, Placer, Refusal, SuitePart};

impl Placer<'_> {
    /// The first and last statement of the one-line suite `body`, and the offset just past its
    /// colon (the text after it is what the block takes the place of).
    fn suite_ends<'n>(&self, body: &'n Node) -> Result<(&'n Node, &'n Node, usize), Refusal> {
        let first = body.children().first().expect("a body has statements");
        let last = body.children().last().expect("a body has statements");
        let colon_end = self.text()[..first.range().start].trim_end_matches([' ', '\t']).len();
        if !self.text()[..colon_end].ends_with(':') {
            return Err(refuse(first.range().start, PlacementReason::NoSuiteColon));
        }
        Ok((first, last, colon_end))
    }

    /// `def f(): return x` with code at its start or end: the suite becomes a block.
    pub(super) fn expand_suite(&self, def: &Definition, body: &Node, anchor: &Anchor, code: &str) -> Placed {
        let (first, last, colon_end) = self.suite_ends(body)?;
        let text = self.text();
        let end = self.source().line_range(self.line_of(last.range().end)).end;
        let suite = text[first.range().start..end].trim_end();
        let indent = def.body_indent();
        let code_lines = self.indent_code(code, indent)?;
        let suite_line = format!("{indent}{suite}{}", self.newline());
        let docstring_only = def.docstring().is_some() && body.children().len() == 1;
        if matches!(anchor, Anchor::Start) && def.docstring().is_some() && !docstring_only {
            return Err(refuse(first.range().start, PlacementReason::OneLineDocstring));
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
        let place = Displacement::joined(colon_end..end, indent);
        Ok(vec![self.displacing_block(&place, &lines, inserted)])
    }

    /// Several hooks of this recipe on one one-line suite (`def f(x): return x` with code at its
    /// start and end and its return wrapped): one expansion of the suite into a block, framed by
    /// the first hook, holding the other hooks' blocks and inline changes as frames of their
    /// own, in recipe order. `parts` are (hook, what it does), in recipe order.
    pub(crate) fn compose_suite(&self, def: &Definition, parts: &[(&str, SuitePart<'_>)]) -> Placed {
        let node = self.file.node(def);
        let body = node.field("body").expect("definitions have a body");
        let (first, last, colon_end) = self.suite_ends(body)?;
        let text = self.text();
        if def.docstring().is_some() {
            return Err(refuse(first.range().start, PlacementReason::OneLineDocstring));
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
                    PlacementReason::BothWrap {
                        first: hook.to_string(),
                        second: other.to_string(),
                    },
                ));
            }
            let new_stmt = self.wrapped_return(ret, render)?;
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
}
