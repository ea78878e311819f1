//! Structural patterns: Python snippets with metavariables, matched on the syntax tree.
//!
//! `$X` matches any one node (the same `$X` twice must match equal subtrees), `$_` any one node,
//! `$$$` any sequence (of statements, arguments, elements). A compound statement written
//! without `else` matches with or without one. Identifiers and attribute names can
//! be metavariables too (`self.$ATTR = $_`). Formatting and comments never matter.
//!
//! A statement pattern matches a statement of the same shape. A pattern that is a bare expression
//! also matches any statement that contains such an expression in its own header (its test,
//! targets, value; not in the blocks under it), so `self.norm($$$)` anchors
//! `hidden_states, _ = self.norm(hidden_states, residual)`.

mod list;

use std::collections::HashMap;

use crate::error::{Error, ErrorKind, Location, SpecReason};
use crate::parse::parse_snippet;
use crate::syntax::{kind, Node, LIST};

use list::match_list;

const SEQ: &str = "__pysplice_seq__";
const ANY: &str = "__pysplice_any__";
const VAR_PREFIX: &str = "__pysplice_mv_";

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

/// A compiled pattern.
#[derive(Clone, Debug)]
pub struct Pattern {
    text: String,
    stmt: Node,
}

impl Pattern {
    /// Compiles `text` (one Python statement or expression with metavariables).
    ///
    /// ```
    /// let pattern = pysplice::Pattern::parse("self.$A = $_")?;
    /// assert_eq!(pattern.text(), "self.$A = $_");
    /// # Ok::<(), pysplice::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`ErrorKind::Syntax`] when the snippet does not parse, [`ErrorKind::Spec`] when it is not exactly
    /// one statement.
    pub fn parse(text: &str) -> Result<Pattern, Error> {
        let source = encode_metavariables(text.trim());
        let mut stmts = parse_snippet("<pattern>", &source)?;
        if stmts.len() != 1 {
            return Err(ErrorKind::Spec {
                reason: SpecReason::PatternNotOneStatement {
                    text: text.to_string(),
                    count: stmts.len(),
                },
                cause: None,
            }
            .at(Location::new("<pattern>", 1, 1)));
        }
        Ok(Pattern {
            text: text.trim().to_string(),
            stmt: stmts.remove(0),
        })
    }

    /// The pattern as written.
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether `stmt` matches this pattern (itself, or for expression patterns, its header).
    #[must_use]
    pub fn matches_statement(&self, stmt: &Node) -> bool {
        if match_node(&self.stmt, stmt, &mut HashMap::new()) {
            return true;
        }
        let Some(expr) = self.expression() else {
            return false;
        };
        let mut found = false;
        for child in header_children(stmt) {
            child.walk(&mut |node| {
                if !found && match_node(expr, node, &mut HashMap::new()) {
                    found = true;
                }
                !found
            });
        }
        found
    }

    /// The statements of `block` (a `list` node) matching this pattern, in source order.
    #[must_use]
    pub fn find_in<'a>(&self, block: &'a Node, depth: Depth) -> Vec<&'a Node> {
        let mut found = Vec::new();
        visit_statements(block, depth, &mut |stmt| {
            if self.matches_statement(stmt) {
                found.push(stmt);
            }
        });
        found
    }

    /// The expression of an expression pattern (`f($$$)`), unless it is a lone wildcard.
    fn expression(&self) -> Option<&Node> {
        let value = self.stmt.as_expr_stmt()?;
        (!is_wildcard(value)).then_some(value)
    }
}

/// Calls `visit` on every statement of `block` (a `list` node): only its direct children for
/// [`Depth::Top`], else also statements in nested blocks, never inside nested defs or classes.
pub fn visit_statements<'a>(block: &'a Node, depth: Depth, visit: &mut dyn FnMut(&'a Node)) {
    for stmt in block.children() {
        visit(stmt);
        if depth == Depth::Nested && !stmt.is_definition() {
            for inner in stmt.blocks() {
                visit_statements(inner, depth, visit);
            }
        }
    }
}

/// The children of a statement outside its blocks: test, targets, value, items...
fn header_children(stmt: &Node) -> impl Iterator<Item = &Node> {
    stmt.children().iter().filter(|child| {
        !(child.kind() == LIST
            && matches!(
                child.label(),
                Some("body" | "orelse" | "finalbody" | "handlers" | "cases")
            ))
    })
}

/// Rewrites `$$$`, `$_` and `$NAME` into identifiers the parser accepts.
fn encode_metavariables(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        if let Some(after) = rest.strip_prefix("$$$") {
            out.push_str(SEQ);
            rest = after;
        } else {
            let name_len = rest[1..]
                .find(|c: char| !(c == '_' || c.is_ascii_alphanumeric()))
                .unwrap_or(rest.len() - 1);
            let name = &rest[1..=name_len];
            match name {
                "" => out.push('$'),
                "_" => out.push_str(ANY),
                _ => {
                    out.push_str(VAR_PREFIX);
                    out.push_str(name);
                }
            }
            rest = &rest[1 + name_len..];
        }
    }
    out.push_str(rest);
    out
}

fn wildcard_name(node: &Node) -> Option<&str> {
    let name = match node.kind() {
        kind::NAME => node.label(),
        kind::EXPR => node.as_expr_stmt().and_then(Node::as_name),
        _ => None,
    }?;
    (name == ANY || name == SEQ || name.starts_with(VAR_PREFIX)).then_some(name)
}

/// Whether `pattern` is a call whose arguments hold a sequence wildcard and no keywords
/// (`f($$$)`), which then admits any keywords.
fn open_keywords(pattern: &Node) -> bool {
    pattern
        .as_call()
        .is_some_and(|call| call.args.iter().any(is_seq) && call.keywords.is_empty())
}

fn is_wildcard(node: &Node) -> bool {
    wildcard_name(node).is_some()
}

fn is_seq(node: &Node) -> bool {
    wildcard_name(node) == Some(SEQ)
}

fn label_matches(pattern: Option<&str>, label: Option<&str>) -> bool {
    match pattern {
        Some(p) if p == ANY || p.starts_with(VAR_PREFIX) => true,
        _ => pattern == label,
    }
}

fn match_node<'a>(pattern: &Node, node: &'a Node, bindings: &mut Bindings<'a>) -> bool {
    if let Some(name) = wildcard_name(pattern) {
        // A statement wildcard matches statements; an expression wildcard any expression.
        if name == ANY || name == SEQ {
            return true;
        }
        return match bindings.get(name) {
            Some(bound) => bound.same_shape(node),
            None => {
                bindings.insert(name.to_string(), node);
                true
            }
        };
    }
    if pattern.kind() != node.kind() || !label_matches(pattern.label(), node.label()) {
        return false;
    }
    if pattern.kind() == LIST {
        // A pattern without `else` does not care whether the statement has one.
        if pattern.label() == Some("orelse") && pattern.children().is_empty() {
            return true;
        }
        return match_list(pattern.children(), node.children(), bindings);
    }
    let (p, n) = (pattern.children(), node.children());
    if p.len() != n.len() {
        return false;
    }
    // `f($$$)` matches any call of f: a sequence wildcard in the arguments also admits keywords.
    let open_keywords = open_keywords(pattern);
    p.iter()
        .zip(n)
        .enumerate()
        .all(|(i, (pc, nc))| (open_keywords && i == 2) || match_node(pc, nc, bindings))
}

/// Metavariable bindings: name to the node it stands for.
type Bindings<'a> = HashMap<String, &'a Node>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_snippet;

    fn first_stmt(code: &str) -> Node {
        parse_snippet("t.py", code).unwrap().remove(0)
    }

    #[test]
    fn metavariables_are_encoded() {
        assert_eq!(
            encode_metavariables("f($$$, $X, $_) + $"),
            format!("f({SEQ}, {VAR_PREFIX}X, {ANY}) + $")
        );
    }

    #[test]
    fn formatting_and_comments_do_not_matter() {
        let p = Pattern::parse("hidden_states, _ = self.norm(hidden_states, residual)").unwrap();
        assert!(p.matches_statement(&first_stmt(
            "hidden_states , _=self.norm(  # c\n  hidden_states, residual)"
        )));
        assert!(!p.matches_statement(&first_stmt("hidden_states, _ = self.norm(hidden_states)")));
    }

    #[test]
    fn sequences_and_bound_variables() {
        let p = Pattern::parse("$X = self.norm($X, $$$)").unwrap();
        assert!(p.matches_statement(&first_stmt("h = self.norm(h, r, eps=1)")));
        assert!(!p.matches_statement(&first_stmt("h = self.norm(g, r)")));
        let p = Pattern::parse("if not self.pp_group.is_last_rank:\n    $$$\nelse:\n    $$$").unwrap();
        assert!(p.matches_statement(&first_stmt(
            "if not self.pp_group.is_last_rank:\n    return x\nelse:\n    y = 1\n    z = 2\n"
        )));
        // `else: $$$` admits an empty `else`; a pattern without `else` admits any `else`.
        assert!(p.matches_statement(&first_stmt("if not self.pp_group.is_last_rank:\n    return x\n")));
        let p = Pattern::parse("if not self.pp_group.is_last_rank:\n    $$$").unwrap();
        assert!(p.matches_statement(&first_stmt("if not self.pp_group.is_last_rank:\n    a\nelse:\n    b\n")));
        let p = Pattern::parse("if c:\n    $$$\nelse:\n    b").unwrap();
        assert!(!p.matches_statement(&first_stmt("if c:\n    a\nelse:\n    c\n")));
    }

    #[test]
    fn expression_patterns_match_statement_headers_only() {
        let p = Pattern::parse("self.norm($$$)").unwrap();
        assert!(p.matches_statement(&first_stmt("hidden_states, _ = self.norm(hidden_states, residual)")));
        assert!(!p.matches_statement(&first_stmt("if x:\n    self.norm(y)\n")));
        let p = Pattern::parse("self.$A = $_").unwrap();
        assert!(p.matches_statement(&first_stmt("self.capture_aux_hidden_states = False")));
    }

    #[test]
    fn find_in_respects_depth_and_skips_nested_defs() {
        let block = parse_snippet("t.py", "x = 1\nif c:\n    x = 1\ndef f():\n    x = 1\n").unwrap();
        let list = Node::new(LIST, 0..0, Some("body".into()), block);
        let p = Pattern::parse("x = $_").unwrap();
        assert_eq!(p.find_in(&list, Depth::Top).len(), 1);
        assert_eq!(p.find_in(&list, Depth::Nested).len(), 2);
    }

    #[test]
    fn bad_patterns_are_errors() {
        assert!(matches!(
            Pattern::parse("x = (").as_ref().map_err(Error::kind),
            Err(ErrorKind::Syntax { .. })
        ));
        assert!(matches!(
            Pattern::parse("x = 1\ny = 2").as_ref().map_err(Error::kind),
            Err(ErrorKind::Spec { .. })
        ));
    }

    /// The backtracking list match this module used before it kept a memo: the reference.
    fn naive_match_node<'a>(pattern: &Node, node: &'a Node, bindings: &mut Bindings<'a>) -> bool {
        if let Some(name) = wildcard_name(pattern) {
            if name == ANY || name == SEQ {
                return true;
            }
            return match bindings.get(name) {
                Some(bound) => bound.same_shape(node),
                None => {
                    bindings.insert(name.to_string(), node);
                    true
                }
            };
        }
        if pattern.kind() != node.kind() || !label_matches(pattern.label(), node.label()) {
            return false;
        }
        if pattern.kind() == LIST {
            if pattern.label() == Some("orelse") && pattern.children().is_empty() {
                return true;
            }
            return naive_match_list(pattern.children(), node.children(), bindings);
        }
        let (p, n) = (pattern.children(), node.children());
        if p.len() != n.len() {
            return false;
        }
        let open_keywords = open_keywords(pattern);
        p.iter()
            .zip(n)
            .enumerate()
            .all(|(i, (pc, nc))| (open_keywords && i == 2) || naive_match_node(pc, nc, bindings))
    }

    fn naive_match_list<'a>(pattern: &[Node], items: &'a [Node], bindings: &mut Bindings<'a>) -> bool {
        let Some((first, rest)) = pattern.split_first() else {
            return items.is_empty();
        };
        if is_seq(first) {
            return (0..=items.len()).any(|skip| {
                let mut trial = bindings.clone();
                if naive_match_list(rest, &items[skip..], &mut trial) {
                    *bindings = trial;
                    true
                } else {
                    false
                }
            });
        }
        match items.split_first() {
            Some((item, items_rest)) => {
                let mut trial = bindings.clone();
                if naive_match_node(first, item, &mut trial) && naive_match_list(rest, items_rest, &mut trial) {
                    *bindings = trial;
                    true
                } else {
                    false
                }
            }
            None => false,
        }
    }

    /// Bindings as (name, node address), comparable between the two matchers.
    fn addresses(bindings: &Bindings<'_>) -> Vec<(String, usize)> {
        let mut out: Vec<_> = bindings
            .iter()
            .map(|(name, node)| (name.clone(), std::ptr::from_ref::<Node>(node) as usize))
            .collect();
        out.sort();
        out
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(1024))]
        /// The memoised matcher finds what the backtracking one finds, with the same bindings.
        #[test]
        fn memo_matches_like_backtracking(
            items in proptest::collection::vec(proptest::sample::select(vec!["a", "b", "a.b", "f(a)", "f(b, a)"]), 0..7),
            parts in proptest::collection::vec(
                proptest::sample::select(vec!["$$$", "$$$", "$Y", "$Y", "$_", "$X", "a", "f($$$)", "f($Y)", "$Y.b"]),
                0..6,
            ),
            target in proptest::sample::select(vec!["$X", "a", "$_"]),
        ) {
            let pattern = Pattern::parse(&format!("{target} = g({})", parts.join(", "))).unwrap();
            for lhs in ["a", "b"] {
                let stmt = first_stmt(&format!("{lhs} = g({})", items.join(", ")));
                let (mut fast, mut slow) = (HashMap::new(), HashMap::new());
                let found = match_node(&pattern.stmt, &stmt, &mut fast);
                proptest::prop_assert_eq!(found, naive_match_node(&pattern.stmt, &stmt, &mut slow));
                if found {
                    proptest::prop_assert_eq!(addresses(&fast), addresses(&slow));
                }
            }
        }
    }

    #[test]
    fn many_sequence_wildcards_against_long_calls() {
        let args: Vec<String> = (0..1000).map(|i| format!("a{i}")).collect();
        let call = first_stmt(&format!("g({})", args.join(", ")));
        let missing = Pattern::parse("g($$$, $$$, $$$, $$$, $$$, $$$, missing)").unwrap();
        assert!(!missing.matches_statement(&call));
        let spread = Pattern::parse("g($$$, a1, $$$, a500, $$$, $X, $$$, a998, $$$)").unwrap();
        assert!(spread.matches_statement(&call));
        let last = Pattern::parse("g($$$, a999)").unwrap();
        assert!(last.matches_statement(&call));
        let mut bindings = HashMap::new();
        let bound = Pattern::parse("g($$$, $X, $$$, a999)").unwrap();
        assert!(match_node(&bound.stmt, &call, &mut bindings));
        // Shortest skip first: `$X` is the first argument.
        assert_eq!(bindings.values().next().and_then(|n| n.label()), Some("a0"));
    }
}
