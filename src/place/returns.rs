//! Wrapped returns: each `return value` of a function becomes `return TEMPLATE(value)`, with
//! an inline marker keeping the original statement.

use crate::error::PlacementReason;
use std::ops::Range;

use crate::edit::Edit;
use crate::marker;
use crate::outline::Definition;
use crate::pattern::{visit_statements, Depth};
use crate::syntax::{kind, Node};

use crate::template::TooLong;

use super::{count_added, oversized, refuse, Placer, Refusal};

impl Placer<'_> {
    /// Wraps the value of each return of `def` (not in nested defs) in `render(value)`, except
    /// returns inside statements in `exclude`. Returns the edits and how many returns were left alone.
    pub(crate) fn wrap_returns(
        &self,
        def: &Definition,
        exclude: &[Range<usize>],
        render: &dyn Fn(&str) -> Result<String, TooLong>,
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
        let mut added = 0;
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
                return Err(refuse(r.start, PlacementReason::ReturnsShareLine { line }));
            }
            lines_used.push(line);
            let new_stmt = self.wrapped_return(ret, render)?;
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
            let marker = Edit::insertion(self.hook, line_start, marker).last_at_offset();
            count_added(&mut added, &marker, r.start)?;
            let wrapped = Edit::replacement(self.hook, r.clone(), new_stmt).with_rewritten(r.clone(), 0..len);
            count_added(&mut added, &wrapped, r.start)?;
            edits.push(marker);
            edits.push(wrapped);
        }
        Ok((edits, left_alone))
    }

    /// The statement that takes the place of `ret`: `return TEMPLATE` with its value; refused
    /// when the template with that value would be too long.
    pub(super) fn wrapped_return(
        &self,
        ret: &Node,
        render: &dyn Fn(&str) -> Result<String, TooLong>,
    ) -> Result<String, Refusal> {
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
        let what = "the wrapped return value, with the template's placeholders filled in,";
        let wrapped = render(&value_text).map_err(|e| oversized(ret.range().start, what, e.bytes, e.limit))?;
        Ok(format!("return {wrapped}"))
    }
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
