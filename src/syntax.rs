//! The crate's own syntax tree: a small, uniform view of a parsed Python file.
//!
//! Every node has a kind (the name CPython's `ast` module gives it: `FunctionDef`, `Name`,
//! `Call`, ...), a byte range, an optional label (identifier, attribute name, constant value,
//! operator) and its children in field order. List-valued fields become `list` nodes labelled
//! with the field name, absent optional fields become `absent` nodes, so two trees of the same
//! shape line up child by child. Parser types never leak out of [`crate::parse`].
//!
//! Kinds are named by the constants of [`kind`]; the fields of the nodes the crate reads are
//! reached through typed views (`as_call`, `as_assign`, `as_function_def`...), whose child
//! order is documented once, next to the views.

pub mod kind;
mod view;

use std::ops::Range;

/// The kind of a list node (a list-valued field such as `body`).
pub const LIST: &str = "list";
/// The kind of an absent optional field (`return` without a value, no `else`...).
pub const ABSENT: &str = "absent";

/// One node of the syntax tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    kind: &'static str,
    range: Range<usize>,
    label: Option<Box<str>>,
    children: Vec<Node>,
}

impl Drop for Node {
    /// Drops the subtree iteratively, so a deep tree cannot overflow the stack.
    fn drop(&mut self) {
        if self.children.is_empty() {
            return;
        }
        // Child lists are detached one by one, so each node is dropped without children of its
        // own; only the lists move, not the nodes.
        let mut pending = vec![std::mem::take(&mut self.children)];
        while let Some(mut list) = pending.pop() {
            for node in &mut list {
                if !node.children.is_empty() {
                    pending.push(std::mem::take(&mut node.children));
                }
            }
        }
    }
}

impl Node {
    /// A node of `kind` over `range` with an optional label and children.
    #[must_use]
    pub fn new(kind: &'static str, range: Range<usize>, label: Option<Box<str>>, children: Vec<Node>) -> Node {
        Node {
            kind,
            range,
            label,
            children,
        }
    }

    /// A copy of this subtree with every range moved by `delta` bytes, for a tree spliced into
    /// a text where it sits elsewhere.
    pub(crate) fn shifted(&self, delta: isize) -> Node {
        let range = self.range.start.wrapping_add_signed(delta)..self.range.end.wrapping_add_signed(delta);
        let children = self.children.iter().map(|child| child.shifted(delta)).collect();
        Node::new(self.kind, range, self.label.clone(), children)
    }

    /// CPython's `ast` class name (`If`, `Call`...), `"list"` (a list of statements or
    /// expressions: a body, arguments) or `"absent"` (an optional child that is not there).
    #[must_use]
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// Byte range in the source text. List nodes span their items (empty when there are none).
    #[must_use]
    pub fn range(&self) -> Range<usize> {
        self.range.clone()
    }

    /// The identifier, attribute, constant value, operator or field name this node carries.
    #[must_use]
    pub fn label(&self) -> Option<&str> {
        self.label.as_deref()
    }

    /// Children in field order.
    #[must_use]
    pub fn children(&self) -> &[Node] {
        &self.children
    }

    /// The node reached by following child positions `path` down from this one (how an
    /// outline records where a definition sits), or `None` when the path leads nowhere.
    #[must_use]
    pub(crate) fn at_path(&self, path: &[usize]) -> Option<&Node> {
        path.iter().try_fold(self, |node, &i| node.children.get(i))
    }

    /// The list child holding field `name` (`body`, `orelse`, `handlers`, `finalbody`, `decorator_list`...).
    #[must_use]
    pub fn field(&self, name: &str) -> Option<&Node> {
        self.children
            .iter()
            .find(|child| child.kind == LIST && child.label.as_deref() == Some(name))
    }

    /// Whether this node is a statement that defines a scope: `def`, `async def` or `class`.
    #[must_use]
    pub fn is_definition(&self) -> bool {
        matches!(
            self.kind,
            kind::FUNCTION_DEF | kind::ASYNC_FUNCTION_DEF | kind::CLASS_DEF
        )
    }

    /// The statement blocks directly under this statement (`body`, `orelse`, handler bodies,
    /// `finalbody`, match-case bodies), in source order.
    #[must_use]
    pub fn blocks(&self) -> Vec<&Node> {
        let mut blocks = Vec::new();
        for child in &self.children {
            if child.kind == LIST {
                match child.label.as_deref() {
                    Some("body" | "orelse" | "finalbody") => blocks.push(child),
                    Some("handlers" | "cases") => {
                        for inner in &child.children {
                            blocks.extend(inner.field("body"));
                        }
                    }
                    _ => {}
                }
            }
        }
        blocks.sort_by_key(|block| block.range.start);
        blocks
    }

    /// Structural equality: same kinds, labels and children, ranges ignored.
    #[must_use]
    pub fn same_shape(&self, other: &Node) -> bool {
        self.kind == other.kind
            && self.label == other.label
            && self.children.len() == other.children.len()
            && self.children.iter().zip(&other.children).all(|(a, b)| a.same_shape(b))
    }

    /// Calls `visit` on this node and every descendant, parents first. `visit` returns whether
    /// to descend into the node's children.
    pub fn walk<'a>(&'a self, visit: &mut dyn FnMut(&'a Node) -> bool) {
        if visit(self) {
            for child in &self.children {
                child.walk(visit);
            }
        }
    }
}

/// Whether `name` is a Python name (an identifier): a letter or `_`, then letters, digits and
/// `_`. Letters and digits are Unicode's alphabetic and alphanumeric characters, close to
/// Python's `XID_Start`/`XID_Continue`; keywords count as names.
#[must_use]
pub fn is_identifier(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c == '_' || c.is_alphabetic())
        && name.chars().all(|c| c == '_' || c.is_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::is_identifier;

    #[test]
    fn identifiers_start_with_a_letter_or_underscore() {
        for name in ["x", "_x1", "forward", "données", "class"] {
            assert!(is_identifier(name), "{name}");
        }
        for name in ["", "1x", "a-b", "a.b", "a b", "x\u{1b}"] {
            assert!(!is_identifier(name), "{name}");
        }
    }
}

/// How deep in a block to look for matching statements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Depth {
    /// Only the statements directly in the block.
    Top,
    /// Anywhere in the block, inside `if`/`for`/`with`/`try`..., never inside nested defs or classes.
    #[default]
    Nested,
}

/// Whether `stmt` is a string expression statement.
pub(crate) fn is_docstring(stmt: &Node) -> bool {
    stmt.as_expr_stmt()
        .is_some_and(|value| value.is(kind::CONSTANT) && value.label().is_some_and(|l| l.starts_with("str:")))
}
