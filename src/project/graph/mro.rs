//! Method resolution: the C3 order of a class's project bases, which class defines a method
//! for an instance, and whether a call on an instance runs a given class's body.
//!
//! Every class is linearised once, bases first (an explicit stack, no recursion: a chain of
//! thousands of classes needs no deep stack), from its bases' memoised orders. The merge keeps a
//! cursor per list and counts how many lists hold each class in their tails, so each step is
//! a lookup instead of a search: a class costs the length of its bases' orders, not their square.
//! An order is cut at [`MAX_MRO_LEN`] classes (with a diagnostic), which bounds the whole
//! computation by the number of classes times that length.

use std::collections::{HashMap, HashSet, VecDeque};

use super::{BaseTarget, ClassGraph, ClassId, Diagnostic};
use crate::project::facts::MethodFacts;
use crate::project::Resolved;

impl ClassGraph<'_> {
    pub(super) fn class_bases(&self, id: ClassId) -> Vec<ClassId> {
        let mut out = Vec::new();
        for link in &self.nodes[id.0].bases {
            for t in &link.targets {
                if let BaseTarget::Class(b) = t {
                    if !out.contains(b) && *b != id {
                        out.push(*b);
                    }
                }
            }
        }
        out
    }

    /// The C3 linearisation of every class over its project bases (depth-first order where C3
    /// fails; a base on a cycle counts as the base alone), bases before subclasses. Returns the
    /// work done (list cells visited), for tests that bound it.
    pub(super) fn compute_mros(&mut self) -> u64 {
        let n = self.nodes.len();
        let bases: Vec<Vec<ClassId>> = self.ids().map(|id| self.class_bases(id)).collect();
        self.mro = vec![Vec::new(); n];
        // 0: not seen, 1: on the stack (its bases are being linearised), 2: done.
        let mut state = vec![0u8; n];
        // Per class: its order holds each class once (not so only around a cycle of bases).
        let mut clean = vec![true; n];
        let mut merge = Merge {
            tails: vec![0; n],
            seen: vec![false; n],
            work: 0,
        };
        for root in 0..n {
            if state[root] != 0 {
                continue;
            }
            state[root] = 1;
            let mut stack = vec![(root, 0usize)];
            while let Some((c, next)) = stack.last_mut() {
                let c = *c;
                if let Some(&b) = bases[c].get(*next) {
                    *next += 1;
                    if state[b.0] == 0 {
                        state[b.0] = 1;
                        stack.push((b.0, 0));
                    }
                    continue;
                }
                stack.pop();
                let lists: Vec<&[ClassId]> = bases[c]
                    .iter()
                    .map(|b| match state[b.0] {
                        2 => &self.mro[b.0][..],
                        _ => std::slice::from_ref(b),
                    })
                    .chain(std::iter::once(&bases[c][..]))
                    .collect();
                let one_clean_base = matches!(&bases[c][..], [b] if state[b.0] == 2 && clean[b.0]);
                let (order, cut) = merge.linearise(ClassId(c), &lists, one_clean_base);
                clean[c] = merge.each_once(&order);
                if cut {
                    let node = &self.nodes[c];
                    self.diagnostics.push(Diagnostic::DeepInheritance {
                        class: node.name.clone(),
                        file: node.file.clone(),
                        line: node.line,
                        limit: MAX_MRO_LEN,
                    });
                }
                self.mro[c] = order;
                state[c] = 2;
            }
        }
        merge.work
    }

    /// The first class in the MRO of `id` that defines method `name`.
    ///
    /// # Panics
    ///
    /// When `id` is not a class of this graph (not an index into [`ClassGraph::classes`]).
    #[must_use]
    pub fn owner_of(&self, id: ClassId, name: &str) -> Option<ClassId> {
        self.mro[id.0].iter().copied().find(|&c| self.facts(c).defines(name))
    }

    /// Whether calling method `m` on an instance of `k` runs the body of `t.m`: `k` is `t`, `k`
    /// inherits `t.m`, or the overriding methods on the way call `super().m(...)` or
    /// `Base.m(self, ...)` until they reach it.
    ///
    /// # Panics
    ///
    /// When `k` or `t` is not a class of this graph (not an index into [`ClassGraph::classes`]).
    #[must_use]
    pub fn runs(&self, k: ClassId, t: ClassId, m: &str) -> Option<RunPath> {
        let mro = &self.mro[k.0];
        let mut pos = 0;
        let mut through = Vec::new();
        loop {
            let x = pos + mro.get(pos..)?.iter().position(|&c| self.facts(c).defines(m))?;
            let class = mro[x];
            if class == t {
                return Some(RunPath {
                    direct: x == 0,
                    through,
                });
            }
            let facts = self.facts(class);
            let methods: Vec<&MethodFacts> = facts.methods_named(m).collect();
            if let Some(method) = methods.iter().find(|md| md.super_calls.iter().any(|s| s == m)) {
                through.push((class, method.line));
                pos = x + 1;
                continue;
            }
            let mut jumped = None;
            for method in &methods {
                for (base, called) in &method.explicit_calls {
                    if called != m {
                        continue;
                    }
                    let resolved = self.project.resolve(self.nodes[class.0].key.file, &method.locals, base);
                    for r in resolved {
                        if let Resolved::Class(key) = r {
                            if let Some(&b) = self.index.get(&key) {
                                if let Some(i) = mro.iter().position(|&c| c == b).filter(|&i| i > x) {
                                    jumped = Some((i, method.line));
                                }
                            }
                        }
                    }
                }
            }
            let (i, line) = jumped?;
            through.push((class, line));
            pos = i;
        }
    }

    /// A shortest inheritance path from `from` up to its ancestor `to` (both included).
    ///
    /// # Panics
    ///
    /// When `from`, or a class on the way up, is not a class of this graph (not an index into
    /// [`ClassGraph::classes`]).
    #[must_use]
    pub fn inheritance_path(&self, from: ClassId, to: ClassId) -> Option<Vec<ClassId>> {
        let mut parent: HashMap<ClassId, ClassId> = HashMap::new();
        let mut queue = VecDeque::from([from]);
        let mut seen = HashSet::from([from]);
        while let Some(c) = queue.pop_front() {
            if c == to {
                let mut path = vec![c];
                let mut at = c;
                while let Some(&p) = parent.get(&at) {
                    path.push(p);
                    at = p;
                }
                path.reverse();
                return Some(path);
            }
            for b in self.class_bases(c) {
                if seen.insert(b) {
                    parent.insert(b, c);
                    queue.push_back(b);
                }
            }
        }
        None
    }
}

/// How a method call reaches a method body (see [`ClassGraph::runs`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunPath {
    /// The class itself defines the method.
    pub direct: bool,
    /// Overriding methods passed through (class, line of their `def`), calling up by `super()`
    /// or an explicit base call.
    pub through: Vec<(ClassId, usize)>,
}

/// The most classes one method resolution order holds: 1,000. Python has no such limit, but a
/// deeper hierarchy is no program's (CPython itself keeps every class's whole order, so a
/// chain of N classes costs it N²/2 entries); past it the order is cut there, and the graph
/// reports [`Diagnostic::DeepInheritance`] for the class.
pub const MAX_MRO_LEN: usize = 1_000;

/// Scratch space for linearising, kept across classes (all zero and false between merges).
struct Merge {
    /// Per class: in how many of the lists being merged it sits after the cursor's head.
    tails: Vec<u32>,
    /// Per class: already in the order being built (the depth-first fallback).
    seen: Vec<bool>,
    /// List cells visited so far.
    work: u64,
}

impl Merge {
    /// `id` followed by the C3 merge of `lists` (its bases' orders, then its bases), or by
    /// their depth-first order when C3 finds none; whether it was cut at [`MAX_MRO_LEN`].
    /// `one_clean_base`: the class has one base, whose order holds each class once.
    fn linearise(&mut self, id: ClassId, lists: &[&[ClassId]], one_clean_base: bool) -> (Vec<ClassId>, bool) {
        let mut out = vec![id];
        if let [only] = lists {
            // No bases.
            debug_assert!(only.is_empty());
            return (out, false);
        }
        if let ([single, _], true) = (lists, one_clean_base) {
            // One base: its order, after the class (which C3 gives unless the class is in it,
            // on a cycle).
            self.work += single.len() as u64;
            if !single.contains(&id) {
                let take = single.len().min(MAX_MRO_LEN - 1);
                out.extend_from_slice(&single[..take]);
                return (out, single.len() > take);
            }
        }
        let mut cursors = vec![0usize; lists.len()];
        for list in lists {
            for c in list.iter().skip(1) {
                self.tails[c.0] += 1;
            }
            self.work += list.len() as u64;
        }
        let left = |cursors: &[usize]| lists.iter().zip(cursors).any(|(l, &at)| at < l.len());
        // `Some(cut)` when the merge got through (or stopped at the limit), `None` when C3 has no order.
        let merged = loop {
            if !left(&cursors) {
                break Some(false);
            }
            if out.len() == MAX_MRO_LEN {
                break Some(true);
            }
            self.work += lists.len() as u64;
            let head = lists
                .iter()
                .zip(&cursors)
                .filter_map(|(l, &at)| l.get(at).copied())
                .find(|h| self.tails[h.0] == 0);
            let Some(head) = head else { break None };
            out.push(head);
            for (list, at) in lists.iter().zip(cursors.iter_mut()) {
                if list.get(*at) == Some(&head) {
                    *at += 1;
                    if let Some(next) = list.get(*at) {
                        self.tails[next.0] -= 1;
                    }
                }
            }
        };
        // Back to all zero for the next class: what is left in the tails.
        for (list, &at) in lists.iter().zip(&cursors) {
            for c in list.iter().skip(at + 1) {
                self.tails[c.0] -= 1;
            }
        }
        if let Some(cut) = merged {
            out.dedup();
            return (out, cut);
        }
        // No C3 order: depth-first, each class once.
        out.truncate(1);
        self.seen[id.0] = true;
        let mut cut = false;
        'lists: for list in lists {
            for &c in *list {
                self.work += 1;
                if !self.seen[c.0] {
                    if out.len() == MAX_MRO_LEN {
                        cut = true;
                        break 'lists;
                    }
                    self.seen[c.0] = true;
                    out.push(c);
                }
            }
        }
        for c in &out {
            self.seen[c.0] = false;
        }
        (out, cut)
    }

    /// Whether `order` holds each class once.
    fn each_once(&mut self, order: &[ClassId]) -> bool {
        let mut once = true;
        for c in order {
            once &= !std::mem::replace(&mut self.seen[c.0], true);
        }
        for c in order {
            self.seen[c.0] = false;
        }
        self.work += order.len() as u64;
        once
    }
}

/// The C3 merge as Python states it (kept as the reference the memoised merge is tested
/// against).
#[cfg(test)]
fn c3_merge(mut lists: Vec<Vec<ClassId>>) -> Option<Vec<ClassId>> {
    let mut out = Vec::new();
    loop {
        lists.retain(|l| !l.is_empty());
        if lists.is_empty() {
            return Some(out);
        }
        let head = lists
            .iter()
            .map(|l| l[0])
            .find(|&h| !lists.iter().any(|l| l[1..].contains(&h)))?;
        out.push(head);
        for l in &mut lists {
            if l[0] == head {
                l.remove(0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::project::{Project, Scope};

    /// The linearisation as it was computed before memoising: recursive, with the reference
    /// merge, a base on a cycle counting as itself.
    fn reference(g: &ClassGraph<'_>, id: ClassId, state: &mut [u8], memo: &mut [Vec<ClassId>]) -> Vec<ClassId> {
        match state[id.0] {
            2 => return memo[id.0].clone(),
            1 => return vec![id],
            _ => {}
        }
        state[id.0] = 1;
        let bases = g.class_bases(id);
        let mut lists: Vec<Vec<ClassId>> = bases.iter().map(|&b| reference(g, b, state, memo)).collect();
        lists.push(bases.clone());
        let mut out = vec![id];
        match c3_merge(lists.clone()) {
            Some(rest) => out.extend(rest),
            None => {
                for list in lists {
                    for c in list {
                        if !out.contains(&c) {
                            out.push(c);
                        }
                    }
                }
            }
        }
        out.dedup();
        state[id.0] = 2;
        memo[id.0] = out.clone();
        out
    }

    fn graph_of(source: String) -> Project {
        Project::from_sources("pkg", vec![("m.py".into(), source)])
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Random hierarchies, cycles and orders C3 refuses among them: the memoised merge gives
        /// every class the order the reference gives it.
        #[test]
        fn memoised_orders_are_the_reference_orders(
            bases in proptest::collection::vec(proptest::collection::vec(0usize..10, 0..4), 1..10)
        ) {
            let mut source = String::new();
            for (i, list) in bases.iter().enumerate() {
                let mut names: Vec<String> = Vec::new();
                for &b in list {
                    let name = format!("C{}", b % bases.len());
                    if !names.contains(&name) && b % bases.len() != i {
                        names.push(name);
                    }
                }
                source.push_str(&format!("class C{i}({}):\n    pass\n", names.join(", ")));
            }
            let project = graph_of(source);
            let g = project.graph(&Scope::Classes);
            let n = g.classes().len();
            let (mut state, mut memo) = (vec![0u8; n], vec![Vec::new(); n]);
            for id in g.ids() {
                let expected = reference(&g, id, &mut state, &mut memo);
                prop_assert_eq!(g.mro(id), &expected[..], "class {}", g.class(id).name);
            }
        }
    }

    /// A chain of 20,000 classes (and one where every class also has a mixin): linearised with
    /// work linear in the number of classes (the orders are cut at `MAX_MRO_LEN`), each class past
    /// the limit reported once. Before memoising, the merge searched and shifted whole lists:
    /// the chain of 4,000 took 15 s, and 20,000 did not finish in a minute.
    #[test]
    fn long_chains_cost_linear_work_and_are_cut_with_a_diagnostic() {
        const N: usize = 20_000;
        let mut chain = String::from("class C0:\n    pass\n");
        let mut mixed = String::from("class C0:\n    pass\n");
        for i in 1..N {
            chain.push_str(&format!("class C{i}(C{}):\n    pass\n", i - 1));
            mixed.push_str(&format!(
                "class M{i}:\n    pass\nclass C{i}(M{i}, C{}):\n    pass\n",
                i - 1
            ));
        }
        for (source, classes) in [(chain, N), (mixed, 2 * N - 1)] {
            let project = graph_of(source);
            let g = project.graph(&Scope::Classes);
            assert_eq!(g.classes().len(), classes);
            // Each class's bases' orders are read once, at most MAX_MRO_LEN cells each (two
            // lists and the merge's head scans for a class with a mixin).
            let bound = (classes * 4 * MAX_MRO_LEN) as u64;
            assert!(g.mro_work <= bound, "{} > {bound}", g.mro_work);
            let last = g.find(&format!("C{}", N - 1))[0];
            assert_eq!(g.mro(last).len(), MAX_MRO_LEN);
            let parent = g.find(&format!("C{}", N - 2))[0];
            assert!(g.mro(last).contains(&parent));
            let short = g.find("C300")[0];
            let expected: Vec<ClassId> = g
                .mro(short)
                .iter()
                .copied()
                .filter(|&c| g.class(c).name.starts_with('C'))
                .collect();
            assert_eq!(expected.len(), 301);
            let cut = g
                .diagnostics()
                .iter()
                .filter(|d| matches!(d, Diagnostic::DeepInheritance { limit: MAX_MRO_LEN, .. }))
                .count();
            assert!(cut > 0 && cut <= classes, "{cut}");
        }
    }
}
