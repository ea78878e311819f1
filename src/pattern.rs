//! Structural patterns: Python snippets with metavariables, matched on the syntax tree.
//!
//! `$X` matches any one node (the same `$X` twice must match equal subtrees), `$_` any one node,
//! `$$$` any sequence (of statements, arguments, elements), `$$$NAME` a sequence that is
//! captured (it may occur once in a pattern). A compound statement written without `else`
//! matches with or without one. Identifiers and attribute names can be metavariables too
//! (`self.$ATTR = $_`; twice the same name means the same identifier). Formatting and comments
//! never matter.
//!
//! What a match's named metavariables stand for is its [`Captures`]: the source text of each
//! (see [`Pattern::captures`]), which hook code uses as `{$NAME}`.
//!
//! A statement pattern matches a statement of the same shape. A pattern that is a bare expression
//! also matches any statement that contains such an expression in its own header (its test,
//! targets, value; not in the blocks under it), so `self.norm($$$)` anchors
//! `hidden_states, _ = self.norm(hidden_states, residual)`.

mod list;

use std::collections::{BTreeMap, HashMap};

use crate::error::{Error, ErrorKind, SpecReason};
use crate::location::Location;
use crate::parse::parse_snippet;
pub use crate::syntax::Depth;
use crate::syntax::{kind, Node, LIST};

use list::match_list;

const SEQ: &str = "__pysplice_seq__";
const ANY: &str = "__pysplice_any__";
const VAR_PREFIX: &str = "__pysplice_mv_";
/// A named sequence wildcard, `$$$NAME`.
const SEQ_PREFIX: &str = "__pysplice_ms_";

/// What the named metavariables of one match stand for: name (without `$`) to what it matched.
/// A `$$$NAME` sequence is the text from its first item to its last (empty when it matched
/// none); in a call `f($$$ARGS)` a trailing sequence also covers the keyword arguments, so it is
/// the argument list as written. An identifier metavariable (`self.$ATTR`) is the name.
pub type Captures = BTreeMap<String, Capture>;

/// What one named metavariable matched: its source text, and the kind of the expression when it
/// is one (`$X` on an expression), which a template parenthesizes where the code around it would
/// otherwise bind into it (see [`crate::template`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capture {
    /// The source text as written (without the brackets around it, which are not its node's).
    pub text: String,
    /// The node kind (`BinOp`, `Name`...) of an expression; `None` for a sequence, an identifier
    /// or a statement, which are always inserted as written.
    pub expression: Option<&'static str>,
}

impl Capture {
    /// A capture inserted as written wherever it goes (a sequence, an identifier).
    #[must_use]
    pub fn text(text: impl Into<String>) -> Capture {
        Capture {
            text: text.into(),
            expression: None,
        }
    }

    /// A capture of one expression of node kind `kind`.
    #[must_use]
    pub fn expression(text: impl Into<String>, kind: &'static str) -> Capture {
        Capture {
            text: text.into(),
            expression: Some(kind),
        }
    }

    /// The source text.
    #[cfg(test)]
    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }
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
        let pattern = Pattern {
            text: text.trim().to_string(),
            stmt: stmts.remove(0),
        };
        if let Some(name) = pattern.repeated_sequence() {
            return Err(ErrorKind::Spec {
                reason: SpecReason::RepeatedSequence {
                    text: pattern.text.clone(),
                    name,
                },
                cause: None,
            }
            .at(Location::new("<pattern>", 1, 1)));
        }
        Ok(pattern)
    }

    /// A `$$$NAME` that occurs more than once (also as `$NAME`): a sequence is only captured,
    /// never compared, so its name stands alone.
    fn repeated_sequence(&self) -> Option<String> {
        let mut counts: HashMap<&str, (usize, bool)> = HashMap::new();
        self.stmt.walk(&mut |node| {
            if let Some((name, seq)) = node.label().and_then(metavariable) {
                let entry = counts.entry(name).or_default();
                entry.0 += 1;
                entry.1 |= seq;
            }
            true
        });
        let mut repeated: Vec<&str> = counts
            .iter()
            .filter(|(_, (count, seq))| *seq && *count > 1)
            .map(|(name, _)| *name)
            .collect();
        repeated.sort_unstable();
        repeated.first().map(|name| format!("$$${name}"))
    }

    /// The names of the metavariables a match captures (without `$`), sorted.
    ///
    /// ```
    /// let pattern = pysplice::Pattern::parse("self.$ATTR = nn.$CLS($$$ARGS, $_)")?;
    /// assert_eq!(pattern.metavariables(), ["ARGS", "ATTR", "CLS"]);
    /// # Ok::<(), pysplice::Error>(())
    /// ```
    #[must_use]
    pub fn metavariables(&self) -> Vec<String> {
        let mut names = Vec::new();
        self.stmt.walk(&mut |node| {
            if let Some((name, _)) = node.label().and_then(metavariable) {
                names.push(name.to_string());
            }
            true
        });
        names.sort_unstable();
        names.dedup();
        names
    }

    /// The names of the metavariables (without `$`) that only ever stand for an identifier:
    /// used as an attribute or definition name (`self.$ATTR`, `def $F(...)`), sorted.
    #[must_use]
    pub fn identifiers(&self) -> Vec<String> {
        let mut names = Vec::new();
        self.stmt.walk(&mut |node| {
            if let Some((name, false)) = node.label().and_then(metavariable) {
                if wildcard_name(node).is_none() {
                    names.push(name.to_string());
                }
            }
            true
        });
        names.sort_unstable();
        names.dedup();
        names
    }

    /// What the metavariables stood for when `stmt` (a statement of the file whose text is
    /// `text`) matched, the same match [`Pattern::matches_statement`] finds; `None` when it
    /// does not match.
    #[must_use]
    pub(crate) fn captures(&self, stmt: &Node, text: &str) -> Option<Captures> {
        let bindings = self.match_bindings(stmt)?;
        Some(
            bindings
                .iter()
                .filter_map(|(encoded, bound)| {
                    let (name, _) = metavariable(encoded)?;
                    let source = bound.text(text).to_string();
                    let capture = match bound {
                        Bound::Node(node) if node.is_expression() => Capture::expression(source, node.kind()),
                        _ => Capture::text(source),
                    };
                    Some((name.to_string(), capture))
                })
                .collect(),
        )
    }

    /// The pattern as written.
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether `stmt` matches this pattern (itself, or for expression patterns, its header).
    #[must_use]
    pub fn matches_statement(&self, stmt: &Node) -> bool {
        self.match_bindings(stmt).is_some()
    }

    /// The bindings of the match of `stmt`: the statement itself, else (expression patterns)
    /// the first match in its header, parents first.
    fn match_bindings<'a>(&self, stmt: &'a Node) -> Option<Bindings<'a>> {
        let mut bindings = HashMap::new();
        if match_node(&self.stmt, stmt, &mut bindings) {
            return Some(bindings);
        }
        let expr = self.expression()?;
        let mut found = None;
        for child in header_children(stmt) {
            child.walk(&mut |node| {
                if found.is_none() {
                    let mut bindings = HashMap::new();
                    if match_node(expr, node, &mut bindings) {
                        found = Some(bindings);
                    }
                }
                found.is_none()
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
pub(crate) fn visit_statements<'a>(block: &'a Node, depth: Depth, visit: &mut dyn FnMut(&'a Node)) {
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
            let name_len = after
                .find(|c: char| !(c == '_' || c.is_ascii_alphanumeric()))
                .unwrap_or(after.len());
            match &after[..name_len] {
                "" | "_" => out.push_str(SEQ),
                name => {
                    out.push_str(SEQ_PREFIX);
                    out.push_str(name);
                }
            }
            rest = &after[name_len..];
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
    (name == ANY || name == SEQ || name.starts_with(VAR_PREFIX) || name.starts_with(SEQ_PREFIX)).then_some(name)
}

/// The name (as written) of a named metavariable, encoded as `encoded`, and whether it is a
/// sequence (`$$$NAME`).
fn metavariable(encoded: &str) -> Option<(&str, bool)> {
    match (encoded.strip_prefix(VAR_PREFIX), encoded.strip_prefix(SEQ_PREFIX)) {
        (Some(name), _) => Some((name, false)),
        (None, Some(name)) => Some((name, true)),
        (None, None) => None,
    }
}

/// The encoded name of a named metavariable this pattern node binds, as a node (`$X`,
/// `$$$X`) or as its label (`self.$ATTR`).
fn binding_name(node: &Node) -> Option<&str> {
    node.label().filter(|label| metavariable(label).is_some())
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
    wildcard_name(node).is_some_and(|name| name == SEQ || name.starts_with(SEQ_PREFIX))
}

/// The encoded name of a named sequence wildcard.
fn seq_name(node: &Node) -> Option<&str> {
    wildcard_name(node).filter(|name| name.starts_with(SEQ_PREFIX))
}

/// Whether the label of `node` fits the pattern's label: equal, `$_`, or a metavariable (bound
/// to this node's label, or already bound to the same name).
fn label_matches<'a>(pattern: Option<&str>, node: &'a Node, bindings: &mut Bindings<'a>) -> bool {
    match pattern {
        Some(p) if p == ANY => true,
        Some(p) if p.starts_with(VAR_PREFIX) => bind(bindings, p, Bound::Label(node)),
        _ => pattern == node.label(),
    }
}

/// Binds `name` to `bound`, or checks that what it is bound to already is the same.
fn bind<'a>(bindings: &mut Bindings<'a>, name: &str, bound: Bound<'a>) -> bool {
    match bindings.get(name) {
        Some(known) => known.same(&bound),
        None => {
            bindings.insert(name.to_string(), bound);
            true
        }
    }
}

fn match_node<'a>(pattern: &Node, node: &'a Node, bindings: &mut Bindings<'a>) -> bool {
    if let Some(name) = wildcard_name(pattern) {
        // A statement wildcard matches statements; an expression wildcard any expression.
        if name == ANY || name == SEQ {
            return true;
        }
        return bind(bindings, name, Bound::Node(node));
    }
    if pattern.kind() != node.kind() || !label_matches(pattern.label(), node, bindings) {
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
    let matched = p
        .iter()
        .zip(n)
        .enumerate()
        .all(|(i, (pc, nc))| (open_keywords && i == 2) || match_node(pc, nc, bindings));
    if matched && open_keywords {
        // A trailing `$$$NAME` of the arguments also captures the keywords it admitted.
        let trailing = pattern.as_call().and_then(|call| call.args.last()).and_then(seq_name);
        if let (Some(name), Some(keywords)) = (trailing, n.get(2)) {
            if let Some(Bound::Seq(_, extra)) = bindings.get_mut(name) {
                *extra = keywords.children();
            }
        }
    }
    matched
}

/// What one metavariable stands for in a match.
#[derive(Clone, Copy, Debug)]
enum Bound<'a> {
    /// A node (`$X`).
    Node(&'a Node),
    /// The identifier a node carries (`self.$ATTR`, `def $F(...)`).
    Label(&'a Node),
    /// The items a `$$$NAME` matched, and the keyword arguments a call's trailing one admitted.
    Seq(&'a [Node], &'a [Node]),
}

impl Bound<'_> {
    /// Whether a second occurrence matching `other` agrees with this binding: equal subtrees,
    /// or the same identifier (as a label, or as a name).
    fn same(&self, other: &Bound<'_>) -> bool {
        match (self, other) {
            (Bound::Node(a), Bound::Node(b)) => a.same_shape(b),
            (Bound::Label(a), Bound::Label(b)) => a.label() == b.label(),
            (Bound::Label(l), Bound::Node(n)) | (Bound::Node(n), Bound::Label(l)) => {
                n.as_name().is_some() && n.as_name() == l.label()
            }
            // A sequence name occurs once (checked when the pattern is compiled).
            _ => false,
        }
    }

    /// The source text it stands for in `text` (empty if the ranges do not fit the text).
    fn text<'s>(&'s self, text: &'s str) -> &'s str {
        match self {
            Bound::Node(node) => text.get(node.range()).unwrap_or_default(),
            Bound::Label(node) => node.label().unwrap_or_default(),
            Bound::Seq(items, extra) => {
                let start = items.iter().chain(*extra).map(|n| n.range().start).min();
                let end = items.iter().chain(*extra).map(|n| n.range().end).max();
                match (start, end) {
                    (Some(start), Some(end)) => text.get(start..end).unwrap_or_default(),
                    _ => "",
                }
            }
        }
    }

    /// An identity of the binding for the list matcher's memo: node addresses and a tag.
    fn key(&self) -> (usize, usize, usize) {
        let at = |node: &Node| std::ptr::from_ref::<Node>(node) as usize;
        match self {
            Bound::Node(node) => (at(node), 0, 1),
            Bound::Label(node) => (at(node), 0, 2),
            Bound::Seq(items, extra) => (items.as_ptr() as usize, items.len(), 3 + extra.len()),
        }
    }
}

/// Metavariable bindings: encoded name to what it stands for.
type Bindings<'a> = HashMap<String, Bound<'a>>;

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
    fn captures_are_the_source_text_of_each_metavariable() {
        let text = "self.norm = nn.LayerNorm(dim,  eps=1e-6, elementwise_affine=False)";
        let stmt = first_stmt(text);
        let p = Pattern::parse("self.$ATTR = nn.$CLS($$$ARGS)").unwrap();
        let captures = p.captures(&stmt, text).unwrap();
        assert_eq!(captures["ATTR"], Capture::text("norm"));
        assert_eq!(captures["CLS"], Capture::text("LayerNorm"));
        // A trailing sequence of a call's arguments is the argument list as written.
        assert_eq!(captures["ARGS"].as_str(), "dim,  eps=1e-6, elementwise_affine=False");
        let p = Pattern::parse("self.$ATTR = nn.$CLS($X, $$$REST)").unwrap();
        let captures = p.captures(&stmt, text).unwrap();
        assert_eq!(
            (captures["X"].as_str(), captures["REST"].as_str()),
            ("dim", "eps=1e-6, elementwise_affine=False")
        );
        // An empty sequence captures nothing; a sequence inside a list its items.
        let text = "x = g([a,  b], c)";
        let stmt = first_stmt(text);
        let p = Pattern::parse("$T = g([$$$ITEMS], c, $$$NONE)").unwrap();
        let captures = p.captures(&stmt, text).unwrap();
        assert_eq!(
            captures,
            Captures::from([
                ("ITEMS".to_string(), Capture::text("a,  b")),
                ("NONE".to_string(), Capture::text("")),
                ("T".to_string(), Capture::expression("x", "Name"))
            ])
        );
        // An expression pattern captures at its match in the statement's header.
        let text = "h, _ = self.norm(h, residual)";
        let p = Pattern::parse("self.norm($$$ARGS)").unwrap();
        assert_eq!(
            p.captures(&first_stmt(text), text).unwrap()["ARGS"].as_str(),
            "h, residual"
        );
        assert_eq!(p.captures(&first_stmt("y = 1"), "y = 1"), None);
        assert_eq!(p.metavariables(), ["ARGS"]);
        // An expression is captured with its kind, without the brackets around it.
        let text = "y = (1 + 2)";
        let p = Pattern::parse("y = $VAL").unwrap();
        assert_eq!(
            p.captures(&first_stmt(text), text).unwrap()["VAL"],
            Capture::expression("1 + 2", "BinOp")
        );
    }

    #[test]
    fn an_identifier_metavariable_twice_is_the_same_identifier() {
        let p = Pattern::parse("self.$A = $A").unwrap();
        assert!(p.matches_statement(&first_stmt("self.x = x")));
        assert!(!p.matches_statement(&first_stmt("self.x = y")));
        let p = Pattern::parse("self.$A = self.$A + 1").unwrap();
        assert!(p.matches_statement(&first_stmt("self.n = self.n + 1")));
        assert!(!p.matches_statement(&first_stmt("self.n = self.m + 1")));
    }

    #[test]
    fn a_named_sequence_stands_alone() {
        for text in [
            "f($$$A, $$$A)",
            "f($$$A, $A)",
            "f($A, [$$$A])",
            "if c:\n    $$$A\n    $$$A",
        ] {
            let err = Pattern::parse(text).unwrap_err();
            assert!(
                matches!(err.kind(), ErrorKind::Spec { reason: SpecReason::RepeatedSequence { name, .. }, .. } if name == "$$$A"),
                "{text}: {err}"
            );
        }
        assert!(Pattern::parse("$$$A").is_ok());
        assert!(Pattern::parse("f($$$, $$$)").is_ok());
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
            return bind(bindings, name, Bound::Node(node));
        }
        if pattern.kind() != node.kind() || !label_matches(pattern.label(), node, bindings) {
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

    /// Bindings as (name, identity), comparable between the two matchers.
    fn addresses(bindings: &Bindings<'_>) -> Vec<(String, (usize, usize, usize))> {
        let mut out: Vec<_> = bindings
            .iter()
            .map(|(name, bound)| (name.clone(), bound.key()))
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
        let first = bindings.values().next().map(|bound| bound.text(""));
        assert!(
            matches!(bindings.values().next(), Some(Bound::Node(n)) if n.label() == Some("a0")),
            "{first:?}"
        );
    }
}
