//! Queries over the class graph, each answer carrying file:line evidence for every edge:
//! delegation chains, what a hook in a method reaches, and which public methods of a delegate
//! a wrapper does not expose.

use std::collections::{HashMap, VecDeque};
use std::fmt;

use super::facts::{AttributeKind, MethodKind, UseKind};
use super::graph::{looks_like_draft, ClassGraph, ClassId, RunPath};
use super::{Project, QueryError, Scope};
use crate::syntax::is_identifier;

/// A place in a file, with a short note on what is there (never a source excerpt).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
pub struct Evidence {
    /// File relative to the scanned directory.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// What the line does, in a few words.
    pub note: String,
}

impl fmt::Display for Evidence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}  {}", self.file, self.line, self.note)
    }
}

/// A delegation use shown next to a composition edge.
pub type UseEvidence = Evidence;

/// One step of a chain.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(tag = "kind", rename_all = "snake_case"))]
pub enum Step {
    /// The previous class is a subclass of `class` (written `⊂`).
    Inherits {
        /// The base class named in the previous class's `class` line.
        class: String,
        /// The dotted module defining the base class.
        module: String,
        /// The `class Sub(Base)` line.
        evidence: Evidence,
    },
    /// The previous class (or the ancestor the chain stands at) holds a `class` in `attr`
    /// (written `-attr->`).
    Holds {
        /// The attribute assigned, `x` in `self.x = Class(...)`.
        attr: String,
        /// The class constructed.
        class: String,
        /// The dotted module defining the constructed class.
        module: String,
        /// The assignment.
        evidence: Evidence,
        /// The assignment is in a branch, loop, `try` or `with`.
        conditional: bool,
        /// The attribute is also set to `None` in the class.
        optional: bool,
        /// The class is constructed inside the assigned value, not as the value itself.
        nested: bool,
        /// How the holder uses the attribute: `self.attr(...)`, arguments, returns; and
        /// `self.attr.m(...)` calls.
        uses: Vec<UseEvidence>,
    },
}

/// A path from one class to another through compositions and inheritance.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
pub struct Chain {
    /// The class the chain starts from.
    pub start: String,
    /// The dotted module defining the start class.
    pub module: String,
    /// One step per inheritance or composition, from the start class on.
    pub steps: Vec<Step>,
}

impl Chain {
    /// The evidence lines, one per step, each indented by two spaces, with up to `uses`
    /// delegation uses under each composition.
    #[must_use]
    pub fn evidence(&self, uses: usize) -> String {
        let mut out = String::new();
        for step in &self.steps {
            match step {
                Step::Inherits { evidence, .. } => out.push_str(&format!("  {evidence}\n")),
                Step::Holds {
                    evidence,
                    conditional,
                    optional,
                    nested,
                    uses: list,
                    ..
                } => {
                    let mut flags = Vec::new();
                    if *nested {
                        flags.push("constructed inside the value");
                    }
                    if *conditional {
                        flags.push("conditional");
                    }
                    if *optional {
                        flags.push("may be None");
                    }
                    let flags = if flags.is_empty() {
                        String::new()
                    } else {
                        format!(" [{}]", flags.join(", "))
                    };
                    out.push_str(&format!("  {evidence}{flags}\n"));
                    for u in list.iter().take(uses) {
                        out.push_str(&format!("      used: {u}\n"));
                    }
                    if list.len() > uses {
                        out.push_str(&format!("      ... {} more uses\n", list.len() - uses));
                    }
                }
            }
        }
        out
    }
}

impl fmt::Display for Chain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.start)?;
        for step in &self.steps {
            match step {
                Step::Inherits { class, .. } => write!(f, " ⊂ {class}")?,
                Step::Holds { attr, class, .. } => write!(f, " -{attr}-> {class}")?,
            }
        }
        Ok(())
    }
}

/// How a class comes to run a method body.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(tag = "kind", rename_all = "snake_case"))]
pub enum RunVia {
    /// The class defines the method.
    Defines,
    /// The class inherits it without overriding.
    Inherits,
    /// The class overrides it, and the overrides call up (`super().m(...)`, `Base.m(self)`).
    Super {
        /// The overriding `def`s passed through.
        through: Vec<Evidence>,
    },
}

/// A class whose instances run the method.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
pub struct Runner {
    /// The class name.
    pub class: String,
    /// The dotted module defining the class.
    pub module: String,
    /// Its `class` line.
    pub evidence: Evidence,
    /// How it runs the method.
    pub via: RunVia,
    /// Looks like a draft model (Eagle, NextN, MTP...).
    pub draft: bool,
}

/// An entry class that ends up running the method.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
pub struct ReachEntry {
    /// The entry class.
    pub class: String,
    /// The dotted module defining the entry class.
    pub module: String,
    /// The entry class or a class on its chain looks like a draft model.
    pub draft: bool,
    /// The `EntryClass` line listing it.
    pub listed: Evidence,
    /// A shortest chain from the entry class to a runner and up to the method's class.
    pub chain: Chain,
}

/// What a hook placed in one method reaches.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
pub struct Reach {
    /// `Class.method` as the body's owner names it.
    pub method: String,
    /// The `def` lines (several when the class name is defined several times).
    pub defined_at: Vec<Evidence>,
    /// Classes whose instances run that body.
    pub runners: Vec<Runner>,
    /// Subclasses that override the method without calling up: a hook does not run for them.
    pub overridden_by: Vec<Runner>,
    /// Entry classes that end up running it, each with a chain.
    pub entries: Vec<ReachEntry>,
}

impl fmt::Display for Reach {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.method)?;
        for d in &self.defined_at {
            writeln!(f, "  defined at {d}")?;
        }
        writeln!(f, "runs in {} class(es):", self.runners.len())?;
        for r in &self.runners {
            let how = match &r.via {
                RunVia::Defines => "defines it".to_string(),
                RunVia::Inherits => "inherits it".to_string(),
                RunVia::Super { through } => {
                    let lines: Vec<String> = through.iter().map(|e| format!("{}:{}", e.file, e.line)).collect();
                    format!("overrides it and calls up ({})", lines.join(", "))
                }
            };
            let draft = if r.draft { " [draft]" } else { "" };
            writeln!(
                f,
                "  {} ({}:{}) {how}{draft}",
                r.class, r.evidence.file, r.evidence.line
            )?;
        }
        if !self.overridden_by.is_empty() {
            writeln!(f, "overridden without calling up (not reached) in:")?;
            for r in &self.overridden_by {
                let draft = if r.draft { " [draft]" } else { "" };
                writeln!(f, "  {} ({}:{}){draft}", r.class, r.evidence.file, r.evidence.line)?;
            }
        }
        writeln!(f, "reached from {} entry class(es):", self.entries.len())?;
        for e in &self.entries {
            let draft = if e.draft { "  [draft]" } else { "" };
            writeln!(f, "  {}{draft}", e.chain)?;
            write!(f, "{}", indent(&e.chain.evidence(2), "  "))?;
        }
        Ok(())
    }
}

/// A member of a class (method, property, attribute).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
pub struct Member {
    /// The member's name as written in the class.
    pub name: String,
    /// The class defining it.
    pub class: String,
    /// `method`, `property`, `classmethod`, `staticmethod`, `class attribute` or
    /// `instance attribute`.
    pub kind: String,
    /// The file and line defining the member.
    pub evidence: Evidence,
}

/// For one composition of a wrapper: which public methods of the delegate it does not expose.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
pub struct Forwarding {
    /// The class that holds the delegate and may forward to it.
    pub wrapper: String,
    /// The attribute holding the delegate.
    pub attr: String,
    /// The class constructed into `attr`.
    pub delegate: String,
    /// The dotted module defining the delegate class.
    pub delegate_module: String,
    /// The `self.attr = Delegate(...)` assignment.
    pub composition: Evidence,
    /// The attribute may be `None`.
    pub optional: bool,
    /// Public methods of the delegate (and its project bases) the wrapper lacks.
    pub missing: Vec<Member>,
    /// Public methods of the delegate the wrapper (or its bases) also has, as the wrapper's
    /// member.
    pub exposed: Vec<Member>,
    /// Bases of the delegate outside the scanned directory, whose methods are not listed.
    pub external_bases: Vec<String>,
    /// The wrapper defines `__getattr__`: anything may be forwarded dynamically.
    pub dynamic: Option<Evidence>,
}

impl fmt::Display for Forwarding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let optional = if self.optional { " [may be None]" } else { "" };
        writeln!(
            f,
            "{} -{}-> {} ({}:{}){optional}",
            self.wrapper, self.attr, self.delegate, self.composition.file, self.composition.line
        )?;
        if let Some(d) = &self.dynamic {
            writeln!(f, "  note: the wrapper defines __getattr__ ({}:{})", d.file, d.line)?;
        }
        writeln!(f, "  missing {} public method(s):", self.missing.len())?;
        for m in &self.missing {
            let kind = if m.kind == "method" {
                String::new()
            } else {
                format!("{}, ", m.kind)
            };
            writeln!(
                f,
                "    {} ({kind}{}, {}:{})",
                m.name, m.class, m.evidence.file, m.evidence.line
            )?;
        }
        let names: Vec<&str> = self.exposed.iter().map(|m| m.name.as_str()).collect();
        writeln!(f, "  exposed {}: {}", names.len(), names.join(", "))?;
        if !self.external_bases.is_empty() {
            writeln!(f, "  not scanned: methods of {}", self.external_bases.join(", "))?;
        }
        Ok(())
    }
}

/// Whether a wrapper needs a forwarding method for `method` of the delegate in `attr`
/// (see [`ClassGraph::forwarding_need`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(tag = "kind", rename_all = "snake_case"))]
pub enum ForwardNeed {
    /// The wrapper (or a base) already has a member of that name: nothing to add.
    Exposed(Member),
    /// The delegate has it and the wrapper does not: a forwarding method is needed.
    Missing {
        /// The delegate's class (one of them when the attribute may hold several).
        delegate: String,
        /// The delegate's member.
        member: Member,
    },
    /// Neither the wrapper nor any class held in `attr` defines it (or `attr` holds no class
    /// of the scanned directory).
    Absent,
}

/// Composition hops of a chain: (concrete class, class defining the composition, edge index).
type Hops = Vec<(ClassId, ClassId, usize)>;

fn indent(text: &str, prefix: &str) -> String {
    text.lines().map(|l| format!("{prefix}{l}\n")).collect()
}

fn method_kind_name(kind: MethodKind) -> &'static str {
    match kind {
        MethodKind::Method => "method",
        MethodKind::Property => "property",
        MethodKind::Classmethod => "classmethod",
        MethodKind::Staticmethod => "staticmethod",
    }
}

impl ClassGraph<'_> {
    fn evidence(&self, id: ClassId, line: usize, note: String) -> Evidence {
        Evidence {
            file: self.class(id).file.clone(),
            line,
            note,
        }
    }

    fn class_line(&self, id: ClassId) -> Evidence {
        let c = self.class(id);
        let bases: Vec<&str> = c.bases.iter().map(|b| b.text.as_str()).collect();
        self.evidence(id, c.line, format!("class {}({})", c.name, bases.join(", ")))
    }

    /// `Sub ⊂ Base` steps from `from` up to `to`.
    fn inherits_steps(&self, from: ClassId, to: ClassId, steps: &mut Vec<Step>) {
        let Some(path) = self.inheritance_path(from, to) else {
            return;
        };
        for pair in path.windows(2) {
            let (sub, base) = (pair[0], pair[1]);
            let line = self
                .class(sub)
                .bases
                .iter()
                .find(|b| b.targets.contains(&super::BaseTarget::Class(base)))
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
    fn uses_of(&self, k: ClassId, attr: &str) -> Vec<Evidence> {
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

    fn holds_step(&self, k: ClassId, via: ClassId, edge: usize) -> Step {
        let e = &self.class(via).compositions[edge];
        let target = self.class(e.target);
        let what = format!(
            "{}.{}: self.{} = {}(...)",
            self.class(via).name,
            e.method,
            e.attr,
            e.callee
        );
        Step::Holds {
            attr: e.attr.clone(),
            class: target.name.clone(),
            module: target.module.clone(),
            evidence: self.evidence(via, e.line, what),
            conditional: e.conditional,
            optional: e.optional,
            nested: !e.direct,
            uses: self.uses_of(k, &e.attr),
        }
    }

    /// Builds the chain for a list of hops from `start`, ending with `⊂` steps up to `end`.
    fn chain(&self, start: ClassId, hops: &[(ClassId, ClassId, usize)], end: Option<ClassId>) -> Chain {
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
    fn dfs(
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
            if !reach[target] || on_path.contains(&target) {
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
    fn shortest(&self, from: ClassId, goal: &dyn Fn(ClassId) -> bool) -> Option<(ClassId, Hops)> {
        let mut parent: HashMap<ClassId, (ClassId, ClassId, usize)> = HashMap::new();
        let mut queue = VecDeque::from([from]);
        let mut seen = vec![false; self.classes().len()];
        seen[from] = true;
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
                if !seen[target] {
                    seen[target] = true;
                    parent.insert(target, (k, via, edge));
                    queue.push_back(target);
                }
            }
        }
        None
    }

    fn runner(&self, k: ClassId, via: RunVia) -> Runner {
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
        let mut runner_ids = Vec::new();
        let mut overridden_by = Vec::new();
        let mut defined_at = Vec::new();
        for &owner in &owners {
            let def_line = self.facts(owner).methods_named(method).next().map_or(0, |m| m.line);
            defined_at.push(self.evidence(owner, def_line, format!("def {}.{method}", self.class(owner).name)));
            for k in std::iter::once(owner).chain(self.descendants(owner)) {
                if runner_ids.contains(&k) {
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
                        runner_ids.push(k);
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
        let goal = |k: ClassId| runner_ids.contains(&k);
        let mut entries = Vec::new();
        for (e, file, line) in self.entries() {
            let Some((runner, hops)) = self.shortest(e, &goal) else {
                continue;
            };
            let end = owners.iter().copied().find(|&o| self.mro(runner).contains(&o));
            let chain = self.chain(e, &hops, end);
            let draft = self.class(e).draft
                || looks_like_draft(&file)
                || hops.iter().any(|&(k, _, _)| self.class(k).draft)
                || self.class(runner).draft;
            entries.push(ReachEntry {
                class: self.class(e).name.clone(),
                module: self.class(e).module.clone(),
                draft,
                listed: Evidence {
                    file,
                    line,
                    note: "EntryClass".into(),
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

    /// The member `name` of class `id` or its bases (first in MRO order): a method, property,
    /// class attribute or instance attribute assigned in a method.
    ///
    /// # Panics
    ///
    /// When `id` is not a class of this graph (not an index into [`ClassGraph::classes`]).
    #[must_use]
    pub fn member(&self, id: ClassId, name: &str) -> Option<Member> {
        for &x in self.mro(id) {
            let facts = self.facts(x);
            if let Some(m) = facts.methods_named(name).next() {
                return Some(Member {
                    name: name.to_string(),
                    class: facts.name.clone(),
                    kind: method_kind_name(m.kind).to_string(),
                    evidence: self.evidence(x, m.line, format!("def {}.{name}", facts.name)),
                });
            }
            if let Some(a) = facts.attributes.iter().find(|a| a.name == name) {
                let kind = match a.kind {
                    AttributeKind::Class => "class attribute",
                    AttributeKind::Instance => "instance attribute",
                };
                return Some(Member {
                    name: name.to_string(),
                    class: facts.name.clone(),
                    kind: kind.to_string(),
                    evidence: self.evidence(x, a.line, format!("{kind} {}.{name}", facts.name)),
                });
            }
        }
        None
    }

    /// Whether instances of `wrapper` expose `name` (a method, property or attribute of the
    /// class or its project bases). What a hook that adds a forwarding method checks first.
    ///
    /// # Panics
    ///
    /// When `wrapper` is not a class of this graph (not an index into [`ClassGraph::classes`]).
    #[must_use]
    pub fn exposes(&self, wrapper: ClassId, name: &str) -> Option<Member> {
        self.member(wrapper, name)
    }

    /// The delegates of `wrapper`: (attribute, delegate class, the composition's evidence),
    /// including compositions inherited from bases.
    ///
    /// # Panics
    ///
    /// When `wrapper` is not a class of this graph (not an index into [`ClassGraph::classes`]).
    #[must_use]
    pub fn delegates(&self, wrapper: ClassId) -> Vec<(String, ClassId, Evidence)> {
        let mut out: Vec<(String, ClassId, Evidence)> = Vec::new();
        for (via, e) in self.compositions_of(wrapper) {
            if out.iter().any(|(a, t, _)| *a == e.attr && *t == e.target) {
                continue;
            }
            let what = format!(
                "{}.{}: self.{} = {}(...)",
                self.class(via).name,
                e.method,
                e.attr,
                e.callee
            );
            out.push((e.attr.clone(), e.target, self.evidence(via, e.line, what)));
        }
        out
    }

    /// Public methods (no leading underscore) of `delegate` and its project bases, first
    /// definition in MRO order, sorted by name.
    ///
    /// # Panics
    ///
    /// When `delegate` is not a class of this graph (not an index into [`ClassGraph::classes`]).
    #[must_use]
    pub fn public_methods(&self, delegate: ClassId) -> Vec<Member> {
        let mut out: Vec<Member> = Vec::new();
        for &x in self.mro(delegate) {
            let facts = self.facts(x);
            for m in &facts.methods {
                if m.name.starts_with('_') || out.iter().any(|o| o.name == m.name) {
                    continue;
                }
                out.push(Member {
                    name: m.name.clone(),
                    class: facts.name.clone(),
                    kind: method_kind_name(m.kind).to_string(),
                    evidence: self.evidence(x, m.line, format!("def {}.{}", facts.name, m.name)),
                });
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// Whether `wrapper` needs a forwarding method for `method` of what it holds in `attr`: the
    /// question a hook that adds forwarders asks before placing one.
    ///
    /// # Panics
    ///
    /// When `wrapper` is not a class of this graph (not an index into [`ClassGraph::classes`]).
    #[must_use]
    pub fn forwarding_need(&self, wrapper: ClassId, attr: &str, method: &str) -> ForwardNeed {
        if let Some(own) = self.exposes(wrapper, method) {
            return ForwardNeed::Exposed(own);
        }
        for (a, delegate, _) in self.delegates(wrapper) {
            if a != attr {
                continue;
            }
            if let Some(member) = self.member(delegate, method) {
                return ForwardNeed::Missing {
                    delegate: self.class(delegate).name.clone(),
                    member,
                };
            }
        }
        ForwardNeed::Absent
    }

    /// For each delegate of `wrapper` (see [`ClassGraph::delegates`]), the public methods it
    /// does not expose.
    ///
    /// # Panics
    ///
    /// When `wrapper` is not a class of this graph (not an index into [`ClassGraph::classes`]).
    #[must_use]
    pub fn forwards(&self, wrapper: ClassId) -> Vec<Forwarding> {
        let dynamic = self.member(wrapper, "__getattr__").map(|m| m.evidence);
        let mut out = Vec::new();
        for (attr, delegate, composition) in self.delegates(wrapper) {
            if delegate == wrapper {
                continue;
            }
            let (mut missing, mut exposed) = (Vec::new(), Vec::new());
            for m in self.public_methods(delegate) {
                match self.exposes(wrapper, &m.name) {
                    Some(own) => exposed.push(own),
                    None => missing.push(m),
                }
            }
            let mut external_bases = Vec::new();
            for &x in self.mro(delegate) {
                for b in &self.class(x).bases {
                    for t in &b.targets {
                        if let super::BaseTarget::External(name) = t {
                            if !external_bases.contains(name) {
                                external_bases.push(name.clone());
                            }
                        }
                    }
                }
            }
            let optional = self
                .compositions_of(wrapper)
                .iter()
                .any(|(_, e)| e.attr == attr && e.optional);
            out.push(Forwarding {
                wrapper: self.class(wrapper).name.clone(),
                attr,
                delegate: self.class(delegate).name.clone(),
                delegate_module: self.class(delegate).module.clone(),
                composition,
                optional,
                missing,
                exposed,
                external_bases,
                dynamic: dynamic.clone(),
            });
        }
        out
    }

    /// A text tree of the class `id`: the class with its bases, then one line per composition
    /// (`-attr-> Class ⊂ Bases  class-file:line  (set at file:line)`), recursively to `depth`
    /// levels; classes already shown are marked `(see above)`.
    ///
    /// # Panics
    ///
    /// When `id` is not a class of this graph (not an index into [`ClassGraph::classes`]).
    #[must_use]
    pub fn tree(&self, id: ClassId, depth: usize) -> String {
        let mut out = format!("{}\n", self.tree_label(id));
        let mut shown = vec![id];
        self.tree_into(id, depth, 1, &mut shown, &mut out);
        out
    }

    /// `Class ⊂ Base, Base  file:line [draft]`.
    fn tree_label(&self, id: ClassId) -> String {
        let c = self.class(id);
        let mut bases: Vec<String> = Vec::new();
        for b in &c.bases {
            for t in &b.targets {
                bases.push(match t {
                    super::BaseTarget::Class(b) => self.class(*b).name.clone(),
                    super::BaseTarget::External(e) => e.clone(),
                    super::BaseTarget::Unresolved(_) => format!("{}?", b.text),
                });
            }
        }
        let bases = if bases.is_empty() {
            String::new()
        } else {
            format!(" ⊂ {}", bases.join(", "))
        };
        let draft = if c.draft { " [draft]" } else { "" };
        format!("{}{bases}  {}:{}{draft}", c.name, c.file, c.line)
    }

    fn tree_into(&self, id: ClassId, depth: usize, level: usize, shown: &mut Vec<ClassId>, out: &mut String) {
        if level > depth {
            return;
        }
        let pad = "  ".repeat(level);
        for (via, e) in self.compositions_of(id) {
            let inherited = if via == id {
                String::new()
            } else {
                format!(" in {}", self.class(via).name)
            };
            let nested = if e.direct { "" } else { ", inside the value" };
            let set_at = format!("(set at {}:{}{inherited}{nested})", self.class(via).file, e.line);
            if shown.contains(&e.target) {
                let name = &self.class(e.target).name;
                out.push_str(&format!("{pad}-{}-> {name} (see above)  {set_at}\n", e.attr));
                continue;
            }
            shown.push(e.target);
            out.push_str(&format!("{pad}-{}-> {}  {set_at}\n", e.attr, self.tree_label(e.target)));
            self.tree_into(e.target, depth, level + 1, shown, out);
        }
    }
}

impl Project {
    fn find_in(&self, graph: &ClassGraph<'_>, name: &str) -> Result<Vec<ClassId>, QueryError> {
        let found = graph.find(name);
        if found.is_empty() {
            return Err(self.unknown_class(name));
        }
        Ok(found)
    }

    /// What a hook in `path` (`Class.method`, the class optionally module-qualified) reaches.
    /// Parses only the files related to the class (see [`Scope::Related`]).
    ///
    /// # Errors
    /// [`QueryError::BadPath`] for a path without a method, [`QueryError::UnknownClass`] /
    /// [`QueryError::UnknownMethod`] with close candidates.
    pub fn reach(&self, path: &str) -> Result<Reach, QueryError> {
        let Some((class, method)) = path.trim().rsplit_once('.') else {
            return Err(QueryError::BadPath {
                path: path.to_string(),
                reason: "write `Class.method`, such as `DeepseekV2Model.forward`".into(),
            });
        };
        if !is_identifier(method) || class.split('.').any(|s| !is_identifier(s)) {
            return Err(QueryError::BadPath {
                path: path.to_string(),
                reason: "each part must be a Python name".into(),
            });
        }
        let simple = class.rsplit('.').next().unwrap_or(class);
        let graph = self.graph(&Scope::Related(vec![simple.to_string()]));
        let targets = self.find_in(&graph, class)?;
        graph.reach(&targets, method)
    }

    /// The chains from `entry` (or from every entry class) to `target`, shortest first, at
    /// most `limit`. Parses only the files related to `target`.
    ///
    /// # Errors
    /// [`QueryError::UnknownClass`] when a class does not exist, [`QueryError::NoChain`] when no
    /// chain joins them.
    pub fn chains(&self, entry: Option<&str>, target: &str, limit: usize) -> Result<Vec<Chain>, QueryError> {
        let simple = target.rsplit('.').next().unwrap_or(target);
        let graph = self.graph(&Scope::Related(vec![simple.to_string()]));
        let targets = self.find_in(&graph, target)?;
        let starts: Vec<ClassId> = match entry {
            Some(e) => {
                let found = graph.find(e);
                if found.is_empty() {
                    // The entry may exist but be unrelated to the target.
                    if self
                        .class_names()
                        .iter()
                        .any(|c| c == e.rsplit('.').next().unwrap_or(e))
                    {
                        return Err(QueryError::NoChain {
                            from: e.to_string(),
                            to: target.to_string(),
                        });
                    }
                    return Err(self.unknown_class(e));
                }
                found
            }
            None => graph.entries().into_iter().map(|(id, _, _)| id).collect(),
        };
        let mut out = Vec::new();
        for &s in &starts {
            for &t in &targets {
                out.extend(graph.chains(s, t, limit));
            }
        }
        out.truncate(limit.max(starts.len()));
        if out.is_empty() {
            return Err(QueryError::NoChain {
                from: entry.unwrap_or("any entry class").to_string(),
                to: target.to_string(),
            });
        }
        Ok(out)
    }

    /// [`ClassGraph::forwarding_need`] for a wrapper named `wrapper` (its first definition in
    /// module order). Parses the wrapper's files and, on demand, its bases and delegates.
    ///
    /// # Errors
    /// [`QueryError::UnknownClass`] with close candidates.
    pub fn forwarding_need(&self, wrapper: &str, attr: &str, method: &str) -> Result<ForwardNeed, QueryError> {
        let simple = wrapper.rsplit('.').next().unwrap_or(wrapper).to_string();
        let graph = self.graph(&Scope::Defining(vec![simple]));
        let found = self.find_in(&graph, wrapper)?;
        Ok(graph.forwarding_need(found[0], attr, method))
    }

    /// For each delegate of `wrapper` (compositions, also inherited), the public methods of the
    /// delegate the wrapper does not expose. Parses the wrapper's files and, on demand, the
    /// modules of its bases and delegates.
    ///
    /// # Errors
    /// [`QueryError::UnknownClass`] with close candidates.
    pub fn forwards(&self, wrapper: &str) -> Result<Vec<Forwarding>, QueryError> {
        let graph = self.graph(&Scope::Defining(vec![wrapper
            .rsplit('.')
            .next()
            .unwrap_or(wrapper)
            .to_string()]));
        let wrappers = self.find_in(&graph, wrapper)?;
        Ok(wrappers.into_iter().flat_map(|w| graph.forwards(w)).collect())
    }
}
