//! Delegation chains and hook reach: paths from entry classes through compositions and bases
//! to a class, with evidence for every step.

use std::collections::{HashMap, VecDeque};

use super::*;
use crate::project::{BaseTarget, CompositionEdge};

impl ClassGraph<'_> {
    pub(super) fn evidence(&self, id: ClassId, line: usize, note: String) -> Evidence {
        Evidence {
            file: self.class(id).file.clone(),
            line,
            note,
        }
    }

    /// The evidence of a composition edge of `via`: `Holder.method: self.attr = Callee(...)`.
    pub(super) fn composition_evidence(&self, via: ClassId, e: &CompositionEdge) -> Evidence {
        let what = format!(
            "{}.{}: self.{} = {}(...)",
            self.class(via).name,
            e.method,
            e.attr,
            e.callee
        );
        self.evidence(via, e.line, what)
    }

    pub(super) fn class_line(&self, id: ClassId) -> Evidence {
        let c = self.class(id);
        let bases: Vec<&str> = c.bases.iter().map(|b| b.text.as_str()).collect();
        self.evidence(id, c.line, format!("class {}({})", c.name, bases.join(", ")))
    }

    /// `Sub ⊂ Base` steps from `from` up to `to`.
    pub(super) fn inherits_steps(&self, from: ClassId, to: ClassId, steps: &mut Vec<Step>) {
        let Some(path) = self.inheritance_path(from, to) else {
            return;
        };
        for pair in path.windows(2) {
            let (sub, base) = (pair[0], pair[1]);
            let line = self
                .class(sub)
                .bases
                .iter()
                .find(|b| b.targets.contains(&BaseTarget::Class(base)))
                .map_or(self.class(sub).line, |b| b.line);
            let mut evidence = self.class_line(sub);
            evidence.line = line;
            steps.push(Step::Inherits {
                class: self.class(base).name.clone(),
                module: self.class(base).module.clone(),
                evidence,
            });
        }
    }

    /// Delegation uses of `attr` by the classes of `k`'s MRO.
    pub(super) fn uses_of(&self, k: ClassId, attr: &str) -> Vec<Evidence> {
        let mut out = Vec::new();
        let mut calls = Vec::new();
        for &x in self.mro(k) {
            for u in self.facts(x).uses.iter().filter(|u| u.attr == attr) {
                let what = match &u.kind {
                    UseKind::Call => format!("self.{attr}(...) in {}", u.method),
                    UseKind::Argument { callee, keyword } => match keyword {
                        Some(k) => format!("passed to {callee}({k}=self.{attr}) in {}", u.method),
                        None => format!("passed to {callee}(self.{attr}) in {}", u.method),
                    },
                    UseKind::Returned => format!("returned by {}", u.method),
                    UseKind::MethodCall { method } => {
                        calls.push(self.evidence(x, u.line, format!("self.{attr}.{method}(...) in {}", u.method)));
                        continue;
                    }
                };
                out.push(self.evidence(x, u.line, what));
            }
        }
        out.extend(calls);
        out
    }

    pub(super) fn holds_step(&self, k: ClassId, via: ClassId, edge: usize) -> Step {
        let e = &self.class(via).compositions[edge];
        let target = self.class(e.target);
        Step::Holds {
            attr: e.attr.clone(),
            class: target.name.clone(),
            module: target.module.clone(),
            evidence: self.composition_evidence(via, e),
            conditional: e.conditional,
            optional: e.optional,
            nested: !e.direct,
            uses: self.uses_of(k, &e.attr),
        }
    }

    /// Builds the chain for a list of hops from `start`, ending with `⊂` steps up to `end`.
    pub(super) fn chain(&self, start: ClassId, hops: &[(ClassId, ClassId, usize)], end: Option<ClassId>) -> Chain {
        let mut steps = Vec::new();
        let mut at = start;
        for &(k, via, edge) in hops {
            if via != k {
                self.inherits_steps(k, via, &mut steps);
            }
            steps.push(self.holds_step(k, via, edge));
            at = self.class(via).compositions[edge].target;
        }
        if let Some(end) = end {
            if end != at {
                self.inherits_steps(at, end, &mut steps);
            }
        }
        Chain {
            start: self.class(start).name.clone(),
            module: self.class(start).module.clone(),
            steps,
        }
    }

    /// Every simple chain (up to `limit`, shortest first) from `from` to a class that is a `to`
    /// (is `to` or a subclass of it), through compositions and inheritance.
    ///
    /// # Panics
    ///
    /// When `from` is not a class of this graph (not an index into [`ClassGraph::classes`]).
    #[must_use]
    pub fn chains(&self, from: ClassId, to: ClassId, limit: usize) -> Vec<Chain> {
        let goal = |k: ClassId| self.mro(k).contains(&to);
        let reach = self.can_reach(&goal);
        let mut found: Vec<Hops> = Vec::new();
        let mut path = Vec::new();
        let mut on_path = vec![from];
        self.dfs(
            from,
            &goal,
            &reach,
            &mut path,
            &mut on_path,
            &mut found,
            limit.saturating_mul(4),
        );
        let mut chains: Vec<(usize, Chain)> = found
            .iter()
            .map(|hops| (hops.len(), self.chain(from, hops, Some(to))))
            .collect();
        chains.sort_by_cached_key(|(len, chain)| (*len, chain.to_string()));
        chains.dedup_by(|a, b| a.1 == b.1);
        chains.into_iter().take(limit).map(|(_, c)| c).collect()
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn dfs(
        &self,
        k: ClassId,
        goal: &dyn Fn(ClassId) -> bool,
        reach: &[bool],
        path: &mut Hops,
        on_path: &mut Vec<ClassId>,
        found: &mut Vec<Hops>,
        limit: usize,
    ) {
        if found.len() >= limit || path.len() > 12 {
            return;
        }
        if goal(k) {
            found.push(path.clone());
            return;
        }
        for &(via, edge) in self.hops(k) {
            let target = self.class(via).compositions[edge].target;
            if !reach[target.index()] || on_path.contains(&target) {
                continue;
            }
            path.push((k, via, edge));
            on_path.push(target);
            self.dfs(target, goal, reach, path, on_path, found, limit);
            on_path.pop();
            path.pop();
        }
    }

    /// A shortest chain of compositions from `from` to a class satisfying `goal`.
    pub(super) fn shortest(&self, from: ClassId, goal: &dyn Fn(ClassId) -> bool) -> Option<(ClassId, Hops)> {
        let mut parent: HashMap<ClassId, (ClassId, ClassId, usize)> = HashMap::new();
        let mut queue = VecDeque::from([from]);
        let mut seen = vec![false; self.classes().len()];
        seen[from.index()] = true;
        while let Some(k) = queue.pop_front() {
            if goal(k) {
                let mut hops = Vec::new();
                let mut at = k;
                while let Some(&hop) = parent.get(&at) {
                    hops.push(hop);
                    at = hop.0;
                }
                hops.reverse();
                return Some((k, hops));
            }
            for &(via, edge) in self.hops(k) {
                let target = self.class(via).compositions[edge].target;
                if !seen[target.index()] {
                    seen[target.index()] = true;
                    parent.insert(target, (k, via, edge));
                    queue.push_back(target);
                }
            }
        }
        None
    }

    pub(super) fn runner(&self, k: ClassId, via: RunVia) -> Runner {
        let c = self.class(k);
        Runner {
            class: c.name.clone(),
            module: c.module.clone(),
            evidence: self.class_line(k),
            via,
            draft: c.draft,
        }
    }

    /// What a hook in method `method` of the classes `targets` reaches: the classes running that
    /// body (the owner of the method in each target's MRO, and subclasses that inherit it or
    /// call up to it), the subclasses that override it, and the entry classes whose instances
    /// end up running it, each with a shortest chain.
    ///
    /// # Errors
    /// [`QueryError::UnknownMethod`] when no target defines or inherits the method.
    ///
    /// # Panics
    ///
    /// When an id of `targets` is not a class of this graph (not an index into [`ClassGraph::classes`]).
    pub fn reach(&self, targets: &[ClassId], method: &str) -> Result<Reach, QueryError> {
        let mut owners: Vec<ClassId> = targets.iter().filter_map(|&t| self.owner_of(t, method)).collect();
        owners.sort_unstable();
        owners.dedup();
        if owners.is_empty() {
            let class = targets.first().map_or(String::new(), |&t| self.class(t).name.clone());
            let mut names: Vec<String> = targets
                .iter()
                .flat_map(|&t| {
                    self.mro(t)
                        .iter()
                        .flat_map(|&c| self.facts(c).methods.iter().map(|m| m.name.clone()))
                })
                .collect();
            names.sort();
            names.dedup();
            return Err(QueryError::UnknownMethod {
                class,
                method: method.to_string(),
                candidates: crate::suggest::closest(method, names.iter().map(String::as_str), 5),
            });
        }
        let mut runners = Vec::new();
        let mut is_runner = vec![false; self.classes().len()];
        let mut overridden_by = Vec::new();
        let mut defined_at = Vec::new();
        for &owner in &owners {
            let def_line = self.facts(owner).methods_named(method).next().map_or(0, |m| m.line);
            defined_at.push(self.evidence(owner, def_line, format!("def {}.{method}", self.class(owner).name)));
            for k in std::iter::once(owner).chain(self.descendants(owner)) {
                if is_runner[k.index()] {
                    continue;
                }
                match self.runs(k, owner, method) {
                    Some(RunPath { direct, through }) => {
                        let via = if direct {
                            RunVia::Defines
                        } else if through.is_empty() {
                            RunVia::Inherits
                        } else {
                            RunVia::Super {
                                through: through
                                    .iter()
                                    .map(|&(c, line)| {
                                        self.evidence(c, line, format!("def {}.{method}", self.class(c).name))
                                    })
                                    .collect(),
                            }
                        };
                        is_runner[k.index()] = true;
                        runners.push(self.runner(k, via));
                    }
                    None => {
                        if self.facts(k).defines(method) {
                            overridden_by.push(self.runner(k, RunVia::Defines));
                        }
                    }
                }
            }
        }
        let goal = |k: ClassId| is_runner[k.index()];
        let mut entries = Vec::new();
        for (e, file, line) in self.entries() {
            let Some((runner, hops)) = self.shortest(e, &goal) else {
                continue;
            };
            let end = owners.iter().copied().find(|&o| self.mro(runner).contains(&o));
            let chain = self.chain(e, &hops, end);
            let draft = self.class(e).draft
                || self.project.conventions().is_draft(&file)
                || hops.iter().any(|&(k, _, _)| self.class(k).draft)
                || self.class(runner).draft;
            entries.push(ReachEntry {
                class: self.class(e).name.clone(),
                module: self.class(e).module.clone(),
                draft,
                listed: Evidence {
                    file,
                    line,
                    note: self.project.conventions().entry_list.clone().unwrap_or_default(),
                },
                chain,
            });
        }
        entries.sort_by(|a, b| (&a.module, &a.class).cmp(&(&b.module, &b.class)));
        let owner = owners[0];
        Ok(Reach {
            method: format!("{}.{method}", self.class(owner).name),
            defined_at,
            runners,
            overridden_by,
            entries,
        })
    }
}
