//! Method resolution: the C3 order of a class's project bases, which class defines a method
//! for an instance, and whether a call on an instance runs a given class's body.

use std::collections::{HashMap, HashSet, VecDeque};

use super::{BaseTarget, ClassGraph, ClassId};
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

    /// C3 linearization over the project bases; depth-first order when C3 fails or bases cycle.
    pub(super) fn compute_mro(&mut self, id: ClassId, state: &mut [u8]) -> Vec<ClassId> {
        match state[id.0] {
            2 => return self.mro[id.0].clone(),
            1 => return vec![id],
            _ => {}
        }
        state[id.0] = 1;
        let bases = self.class_bases(id);
        let mut lists: Vec<Vec<ClassId>> = bases.iter().map(|&b| self.compute_mro(b, state)).collect();
        lists.push(bases.clone());
        let mut out = vec![id];
        let merged = c3_merge(lists.clone());
        match merged {
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
        self.mro[id.0] = out.clone();
        out
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
