//! Matching a list of patterns against a list of nodes, sequence wildcards (`$$$`) included,
//! in time polynomial in the lengths.

use std::collections::{HashMap, HashSet};

use crate::syntax::Node;

use super::{binding_name, is_seq, match_node, seq_name, Bindings, Bound};

/// Matches a list of patterns against a list of nodes, trying sequence wildcards shortest first,
/// and keeps the bindings of the first match found in that order (what a plain backtracking
/// search finds), in time polynomial in the lengths.
pub(super) fn match_list<'a>(pattern: &[Node], items: &'a [Node], bindings: &mut Bindings<'a>) -> bool {
    ListMatch::new(pattern, items).run(0, 0, bindings)
}

/// One list match with its memo of failures. Whether the rest of the pattern from a position
/// fails depends on the bindings only through the metavariables in that rest, so failures are
/// kept per (pattern position, item position, those bindings); a sequence wildcard that fails
/// from one item fails from every later item too, so it keeps only the first. A pattern without
/// metavariables matches an item or not whatever the bindings: that answer is kept too.
///
/// A failed [`ListMatch::run`] leaves the bindings as they were, so only patterns that bind
/// need a copy of them to try.
struct ListMatch<'p, 'a> {
    pattern: &'p [Node],
    items: &'a [Node],
    /// Whether `pattern[i]` holds a metavariable that binds, for each `i`.
    binds: Vec<bool>,
    /// The metavariables in `pattern[i..]`, for each `i`.
    names_after: Vec<Vec<String>>,
    /// For a sequence wildcard: the first item position known to fail, per bindings (the
    /// common case of a rest without metavariables, at `seq_fails_from_plain[i]`).
    seq_fails_from: Vec<HashMap<Vec<Key>, usize>>,
    seq_fails_from_plain: Vec<usize>,
    /// For any other pattern: the item positions known to fail, per bindings.
    fails: Vec<HashMap<Vec<Key>, HashSet<usize>>>,
    /// For patterns that do not bind: the positions of the items they match.
    positions: Vec<Option<Vec<usize>>>,
    /// For patterns that do not bind: whether `pattern[i]` matches `items[j]`, at
    /// `i * (items.len() + 1) + j` (empty when that table would be too large).
    element: Vec<Option<bool>>,
}

/// The identity of one binding (see `Bound::key`).
type Key = (usize, usize, usize);

/// The largest element table kept, in entries.
const ELEMENT_TABLE: usize = 1 << 22;

impl<'p, 'a> ListMatch<'p, 'a> {
    fn new(pattern: &'p [Node], items: &'a [Node]) -> ListMatch<'p, 'a> {
        let mut names_after = vec![Vec::new(); pattern.len() + 1];
        let mut binds = vec![false; pattern.len()];
        for i in (0..pattern.len()).rev() {
            let mut names = names_after[i + 1].clone();
            pattern[i].walk(&mut |node| {
                if let Some(name) = binding_name(node) {
                    binds[i] = true;
                    if !names.iter().any(|known| known == name) {
                        names.push(name.to_string());
                    }
                }
                true
            });
            names_after[i] = names;
        }
        let cells = pattern.len().saturating_mul(items.len() + 1);
        ListMatch {
            pattern,
            items,
            binds,
            names_after,
            seq_fails_from: vec![HashMap::new(); pattern.len()],
            seq_fails_from_plain: vec![usize::MAX; pattern.len()],
            positions: vec![None; pattern.len()],
            fails: vec![HashMap::new(); pattern.len()],
            element: if cells <= ELEMENT_TABLE {
                vec![None; cells]
            } else {
                Vec::new()
            },
        }
    }

    /// The bindings that `pattern[at..]` can see, as node addresses (zeros when unbound).
    fn key(&self, at: usize, bindings: &Bindings<'a>) -> Vec<(usize, usize, usize)> {
        self.names_after[at]
            .iter()
            .map(|name| bindings.get(name).map_or((0, 0, 0), Bound::key))
            .collect()
    }

    /// Whether `pattern[p..]` matches `items[i..]`; on success `bindings` holds the new bindings,
    /// on failure it is unchanged.
    fn run(&mut self, p: usize, i: usize, bindings: &mut Bindings<'a>) -> bool {
        // Recursion follows the pattern's length, which a recipe chooses.
        self.step(p, i, bindings)
    }

    fn step(&mut self, p: usize, i: usize, bindings: &mut Bindings<'a>) -> bool {
        let Some(first) = self.pattern.get(p) else {
            return i == self.items.len();
        };
        if is_seq(first) {
            let plain = self.names_after[p].is_empty();
            if plain && i >= self.seq_fails_from_plain[p] {
                return false;
            }
            let key = if plain { Vec::new() } else { self.key(p, bindings) };
            if !plain && self.seq_fails_from[p].get(&key).is_some_and(|&from| i >= from) {
                return false;
            }
            // A failed `run` leaves `bindings` alone: no copy needed.
            if let Some(skip) = self.seq_then_rest(p, i, bindings) {
                // A named sequence occurs once in a pattern: what it matched binds nothing else.
                if let Some(name) = seq_name(first) {
                    let items = self.items;
                    bindings.insert(name.to_string(), Bound::Seq(&items[i..skip], &[]));
                }
                return true;
            }
            let from = if plain {
                &mut self.seq_fails_from_plain[p]
            } else {
                self.seq_fails_from[p].entry(key).or_insert(i)
            };
            *from = (*from).min(i);
            return false;
        }
        let items = self.items;
        let Some(item) = items.get(i) else {
            return false;
        };
        if !self.binds[p] {
            if !self.element_matches(p, i, first, item) {
                return false;
            }
            let key = self.key(p, bindings);
            if self.fails[p].get(&key).is_some_and(|fails| fails.contains(&i)) {
                return false;
            }
            if self.run(p + 1, i + 1, bindings) {
                return true;
            }
            self.fails[p].entry(key).or_default().insert(i);
            return false;
        }
        let key = self.key(p, bindings);
        if self.fails[p].get(&key).is_some_and(|fails| fails.contains(&i)) {
            return false;
        }
        let mut trial = bindings.clone();
        if match_node(first, item, &mut trial) && self.run(p + 1, i + 1, &mut trial) {
            *bindings = trial;
            return true;
        }
        self.fails[p].entry(key).or_default().insert(i);
        false
    }

    /// Where the rest after the sequence wildcard `pattern[p]` matches from, the first position
    /// at or after `i` in order (the sequence is `items[i..that]`). Positions where the rest
    /// cannot start are passed over: after `$$$ $$$` only `i` itself (the second covers the later
    /// ones), before a pattern that binds nothing only the items it matches.
    fn seq_then_rest(&mut self, p: usize, i: usize, bindings: &mut Bindings<'a>) -> Option<usize> {
        let next = p + 1;
        match self.pattern.get(next) {
            Some(rest) if is_seq(rest) => self.run(next, i, bindings).then_some(i),
            Some(_) if !self.binds[next] => {
                let positions = self.positions(next);
                let mut k = positions.partition_point(|&j| j < i);
                while let Some(&skip) = self.positions[next].as_ref().and_then(|all| all.get(k)) {
                    if self.run(next, skip, bindings) {
                        return Some(skip);
                    }
                    k += 1;
                }
                None
            }
            _ => (i..=self.items.len()).find(|&skip| self.run(next, skip, bindings)),
        }
    }

    /// The positions of the items that `pattern[p]` (which binds nothing) matches, found once.
    fn positions(&mut self, p: usize) -> &[usize] {
        if self.positions[p].is_none() {
            let items = self.items;
            let found = (0..items.len())
                .filter(|&j| self.element_matches(p, j, &self.pattern[p], &items[j]))
                .collect();
            self.positions[p] = Some(found);
        }
        self.positions[p].as_deref().unwrap_or(&[])
    }

    /// Whether `pattern[p]`, which binds nothing, matches `items[i]`, computed once.
    fn element_matches(&mut self, p: usize, i: usize, pattern: &'p Node, item: &'a Node) -> bool {
        let cell = p * (self.items.len() + 1) + i;
        if let Some(Some(known)) = self.element.get(cell) {
            return *known;
        }
        let matched = match_node(pattern, item, &mut HashMap::new());
        if let Some(slot) = self.element.get_mut(cell) {
            *slot = Some(matched);
        }
        matched
    }
}
