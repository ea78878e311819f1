//! The class graph: classes as nodes, resolved base classes (inheritance), compositions
//! (`self.attr = Class(...)`), entry classes, method resolution order, and which class's code a
//! method call on an instance runs.

use std::collections::{HashMap, HashSet, VecDeque};

use super::facts::{ClassFacts, CompositionFacts, MethodFacts};
use super::{ClassKey, FileProblem, Project, Resolved};

mod mro;
pub use mro::{RunPath, MAX_MRO_LEN};

/// A class of one [`ClassGraph`]: its position in [`ClassGraph::classes`], meaningful only
/// for the graph that gave it out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(transparent), schemars(transparent))]
pub struct ClassId(usize);

impl ClassId {
    /// The position in [`ClassGraph::classes`].
    #[must_use]
    pub fn index(self) -> usize {
        self.0
    }
}

/// What a base class expression resolved to.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(tag = "kind", content = "to", rename_all = "lowercase"))]
pub enum BaseTarget {
    /// A class of the project.
    Class(ClassId),
    /// A name from outside the scanned directory (`torch.nn.Module`, `builtins.object`).
    External(String),
    /// Nothing that can be found; the reason says why.
    Unresolved(String),
}

/// One base of a class.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
pub struct BaseLink {
    /// The base as written (dotted).
    pub text: String,
    /// 1-based line of the base expression.
    pub line: usize,
    /// What it resolved to (one per definition when a name is defined in several branches).
    pub targets: Vec<BaseTarget>,
}

/// `self.attr = Target(...)` in some method of a class, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
pub struct CompositionEdge {
    /// The attribute assigned, `x` in `self.x = Class(...)`.
    pub attr: String,
    /// The class constructed.
    pub target: ClassId,
    /// The callee as written.
    pub callee: String,
    /// 1-based line of the assignment.
    pub line: usize,
    /// The method assigning it.
    pub method: String,
    /// The call is the value (or a branch of it), not nested inside it.
    pub direct: bool,
    /// The assignment sits in a branch, loop, `try` or `with`.
    pub conditional: bool,
    /// The attribute is also set to `None` somewhere in the class.
    pub optional: bool,
}

/// A class of the graph.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
pub struct ClassNode {
    /// Its module (dotted).
    pub module: String,
    /// Its qualified name in the module.
    pub name: String,
    /// Its file, relative to the scanned directory.
    pub file: String,
    /// 1-based line of the `class` keyword.
    pub line: usize,
    /// Resolved bases, in order.
    pub bases: Vec<BaseLink>,
    /// Resolved compositions (empty when the scope did not ask for this class's).
    pub compositions: Vec<CompositionEdge>,
    /// Direct subclasses within the graph.
    pub subclasses: Vec<ClassId>,
    /// The class or its file contains one of the project's draft markers
    /// ([`Conventions::draft_markers`](super::Conventions)), such as the draft model of
    /// speculative decoding.
    pub draft: bool,
    #[cfg_attr(feature = "serde", serde(skip))]
    pub(crate) key: ClassKey,
    #[cfg_attr(feature = "serde", serde(skip))]
    expanded: bool,
}

/// Something worth knowing about the graph that is not an edge.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(tag = "kind", rename_all = "snake_case"))]
pub enum Diagnostic {
    /// A base class that cannot be found.
    UnresolvedBase {
        /// The class whose base is missing.
        class: String,
        /// The file that defines the class.
        file: String,
        /// 1-based line of the base.
        line: usize,
        /// The base as written.
        base: String,
        /// Why the base could not be found.
        reason: String,
    },
    /// A module defines the same class name more than once.
    DuplicateClass {
        /// The file defining the class twice.
        file: String,
        /// The name defined more than once.
        class: String,
        /// The lines of every definition.
        lines: Vec<usize>,
    },
    /// A file of the scope could not be read or parsed.
    UnparsedFile(FileProblem),
    /// A class's method resolution order would hold more than
    /// [`MAX_MRO_LEN`](mro::MAX_MRO_LEN) classes: it is cut there, so methods and compositions of
    /// classes further up are not seen through it.
    DeepInheritance {
        /// The class.
        class: String,
        /// The file that defines it.
        file: String,
        /// 1-based line of the class.
        line: usize,
        /// The limit.
        limit: usize,
    },
}

/// How compositions are resolved while building.
#[derive(Clone, Debug)]
pub(crate) enum Policy {
    /// Every class's compositions.
    All,
    /// Compositions whose callee may be one of these names.
    Named(HashSet<String>),
    /// Compositions of the seed files' classes and their ancestors only.
    SeedsOnly,
}

/// The classes of a scope and the edges between them. Built by [`Project::graph`].
#[derive(Debug)]
pub struct ClassGraph<'p> {
    pub(crate) project: &'p Project,
    nodes: Vec<ClassNode>,
    index: HashMap<ClassKey, ClassId>,
    entries: Vec<(ClassId, usize, usize)>,
    diagnostics: Vec<Diagnostic>,
    mro: Vec<Vec<ClassId>>,
    /// List cells visited while linearising (see `graph/mro.rs`), for tests that bound it.
    pub(crate) mro_work: u64,
    /// Per class: the compositions its instances get, as (class defining it, index in that
    /// class's compositions).
    edges: Vec<Vec<(ClassId, usize)>>,
}

impl<'p> ClassGraph<'p> {
    pub(crate) fn build(project: &'p Project, files: &[usize], policy: Policy) -> ClassGraph<'p> {
        let mut g = ClassGraph {
            project,
            nodes: Vec::new(),
            index: HashMap::new(),
            entries: Vec::new(),
            diagnostics: Vec::new(),
            mro: Vec::new(),
            mro_work: 0,
            edges: Vec::new(),
        };
        let mut queue = VecDeque::new();
        for &f in files {
            match project.facts(f) {
                Ok(facts) => {
                    for class in 0..facts.classes.len() {
                        g.intern(ClassKey { file: f, class }, true, &mut queue);
                    }
                    for (dotted, line) in &facts.entry_classes {
                        for r in project.resolve(f, &[], dotted) {
                            if let Resolved::Class(key) = r {
                                let id = g.intern(key, matches!(policy, Policy::All), &mut queue);
                                if !g.entries.iter().any(|(e, _, _)| *e == id) {
                                    g.entries.push((id, f, *line));
                                }
                            }
                        }
                    }
                    g.duplicates(f);
                }
                Err(problem) => g.diagnostics.push(Diagnostic::UnparsedFile(problem.clone())),
            }
        }
        while let Some(id) = queue.pop_front() {
            g.resolve_node(id, &policy, &mut queue);
        }
        for id in g.ids() {
            let bases: Vec<ClassId> = g.class_bases(id);
            // `class_bases` names each base once, and each class comes once.
            for b in bases {
                g.nodes[b.0].subclasses.push(id);
            }
        }
        g.mro_work = g.compute_mros();
        // Only classes with some composition in their order have any to inherit: the others
        // (most of a long chain) are not walked.
        let mut composes = vec![false; g.nodes.len()];
        for id in g.ids() {
            composes[id.0] = g.mro[id.0].iter().any(|x| !g.nodes[x.0].compositions.is_empty());
        }
        g.edges = g
            .ids()
            .map(|id| {
                if composes[id.0] {
                    g.effective_compositions(id)
                } else {
                    Vec::new()
                }
            })
            .collect();
        g
    }

    fn intern(&mut self, key: ClassKey, expand: bool, queue: &mut VecDeque<(ClassId, bool)>) -> ClassId {
        if let Some(&id) = self.index.get(&key) {
            if expand && !self.nodes[id.0].expanded {
                self.nodes[id.0].expanded = true;
                queue.push_back((id, true));
            }
            return id;
        }
        let file = self.project.file(key.file);
        let class = self.class_facts_of(key);
        let conventions = self.project.conventions();
        let draft = conventions.is_draft(&class.name) || conventions.is_draft(file.relative_path());
        let id = ClassId(self.nodes.len());
        self.nodes.push(ClassNode {
            module: file.module().to_string(),
            name: class.name.clone(),
            file: file.relative_path().to_string(),
            line: class.line,
            bases: Vec::new(),
            compositions: Vec::new(),
            subclasses: Vec::new(),
            draft,
            key,
            expanded: expand,
        });
        self.index.insert(key, id);
        queue.push_back((id, false));
        if expand {
            queue.push_back((id, true));
        }
        id
    }

    fn class_facts_of(&self, key: ClassKey) -> &'p ClassFacts {
        let project: &'p Project = self.project;
        match project.facts(key.file) {
            Ok(facts) => &facts.classes[key.class],
            Err(_) => unreachable_class(),
        }
    }

    /// Resolves bases (`compositions == false`) or compositions of a node.
    fn resolve_node(
        &mut self,
        (id, compositions): (ClassId, bool),
        policy: &Policy,
        queue: &mut VecDeque<(ClassId, bool)>,
    ) {
        let key = self.nodes[id.0].key;
        let class = self.class_facts_of(key);
        let project = self.project;
        if !compositions {
            let expand = self.nodes[id.0].expanded;
            let mut links = Vec::new();
            for base in &class.bases {
                let resolved = if base.is_name {
                    project.resolve(key.file, &[], &base.text)
                } else {
                    vec![Resolved::Unresolved("not a class name (an expression)".into())]
                };
                let mut targets = Vec::new();
                for r in &resolved {
                    match r {
                        Resolved::Class(k) => {
                            let b = self.intern(*k, expand, queue);
                            targets.push(BaseTarget::Class(b));
                        }
                        Resolved::External(d) => targets.push(BaseTarget::External(d.clone())),
                        Resolved::Module(m) => {
                            targets.push(BaseTarget::Unresolved(format!("`{m}` is a module, not a class")));
                        }
                        Resolved::Unresolved(_) => {}
                    }
                }
                if targets.is_empty() {
                    let reason = resolved
                        .iter()
                        .find_map(|r| match r {
                            Resolved::Unresolved(why) => Some(why.clone()),
                            _ => None,
                        })
                        .unwrap_or_else(|| "cannot be resolved".into());
                    targets.push(BaseTarget::Unresolved(reason));
                }
                for t in &targets {
                    if let BaseTarget::Unresolved(reason) = t {
                        self.diagnostics.push(Diagnostic::UnresolvedBase {
                            class: class.name.clone(),
                            file: self.nodes[id.0].file.clone(),
                            line: base.line,
                            base: base.text.clone(),
                            reason: reason.clone(),
                        });
                    }
                }
                links.push(BaseLink {
                    text: base.text.clone(),
                    line: base.line,
                    targets,
                });
            }
            self.nodes[id.0].bases = links;
            return;
        }
        let mut edges = Vec::new();
        for comp in &class.compositions {
            let expand_target = match policy {
                Policy::All => true,
                Policy::Named(names) => {
                    if !comp.names.iter().any(|n| names.contains(n)) {
                        continue;
                    }
                    true
                }
                Policy::SeedsOnly => false,
            };
            let locals = class
                .methods_named(&comp.method)
                .next()
                .map_or(&[][..], |m: &MethodFacts| &m.locals[..]);
            for r in project.resolve(key.file, locals, &comp.callee) {
                if let Resolved::Class(k) = r {
                    let target = self.intern(k, expand_target, queue);
                    let edge = self.edge(class, comp, target);
                    let same = |e: &CompositionEdge| {
                        e.attr == edge.attr && e.target == edge.target && e.line == edge.line && e.method == edge.method
                    };
                    if !edges.iter().any(same) {
                        edges.push(edge);
                    }
                }
            }
        }
        self.nodes[id.0].compositions = edges;
    }

    fn edge(&self, class: &ClassFacts, comp: &CompositionFacts, target: ClassId) -> CompositionEdge {
        CompositionEdge {
            attr: comp.attr.clone(),
            target,
            callee: comp.callee.clone(),
            line: comp.line,
            method: comp.method.clone(),
            direct: comp.direct,
            conditional: comp.conditional,
            optional: class.attributes.iter().any(|a| a.name == comp.attr && a.is_none),
        }
    }

    fn duplicates(&mut self, file: usize) {
        let Ok(facts) = self.project.facts(file) else { return };
        let mut seen: Vec<(&str, Vec<usize>)> = Vec::new();
        let mut at: HashMap<&str, usize> = HashMap::new();
        for class in facts.classes.iter().filter(|c| !c.name.contains('.')) {
            match at.get(class.name.as_str()) {
                Some(&i) => seen[i].1.push(class.line),
                None => {
                    at.insert(&class.name, seen.len());
                    seen.push((&class.name, vec![class.line]));
                }
            }
        }
        for (name, lines) in seen {
            if lines.len() > 1 {
                self.diagnostics.push(Diagnostic::DuplicateClass {
                    file: self.project.file(file).relative_path().to_string(),
                    class: name.to_string(),
                    lines,
                });
            }
        }
    }

    fn effective_compositions(&self, k: ClassId) -> Vec<(ClassId, usize)> {
        let mut out = Vec::new();
        for &x in &self.mro[k.0] {
            for (i, edge) in self.nodes[x.0].compositions.iter().enumerate() {
                if self.runs(k, x, &edge.method).is_some() {
                    out.push((x, i));
                }
            }
        }
        out
    }

    /// Every class id, in order.
    pub(crate) fn ids(&self) -> impl Iterator<Item = ClassId> {
        (0..self.nodes.len()).map(ClassId)
    }

    /// The id of a class definition, when it is in the graph.
    pub(crate) fn id_of(&self, key: ClassKey) -> Option<ClassId> {
        self.index.get(&key).copied()
    }

    /// Every class, by id.
    #[must_use]
    pub fn classes(&self) -> &[ClassNode] {
        &self.nodes
    }

    /// One class.
    ///
    /// # Panics
    ///
    /// When `id` is not a class of this graph (not an index into [`ClassGraph::classes`]).
    #[must_use]
    pub fn class(&self, id: ClassId) -> &ClassNode {
        &self.nodes[id.0]
    }

    /// The facts read off a class's source (methods, attributes, uses).
    ///
    /// # Panics
    ///
    /// When `id` is not a class of this graph (not an index into [`ClassGraph::classes`]).
    #[must_use]
    pub fn facts(&self, id: ClassId) -> &'p ClassFacts {
        self.class_facts_of(self.nodes[id.0].key)
    }

    /// The entry classes (the entry lists, [`Conventions::entry_list`](super::Conventions), of the modules in scope), with the file and line listing
    /// them.
    #[must_use]
    pub fn entries(&self) -> Vec<(ClassId, String, usize)> {
        self.entries
            .iter()
            .map(|&(id, f, line)| (id, self.project.file(f).relative_path().to_string(), line))
            .collect()
    }

    /// Whether the class is listed in some module's entry list.
    #[must_use]
    pub fn is_entry(&self, id: ClassId) -> bool {
        self.entries.iter().any(|(e, _, _)| *e == id)
    }

    /// Unresolvable bases, duplicate class names and files that failed to parse.
    #[must_use]
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// The method resolution order of a class (itself first), over project classes.
    ///
    /// # Panics
    ///
    /// When `id` is not a class of this graph (not an index into [`ClassGraph::classes`]).
    #[must_use]
    pub fn mro(&self, id: ClassId) -> &[ClassId] {
        &self.mro[id.0]
    }

    /// The compositions instances of `id` get: their own and those of ancestors whose assigning
    /// method `id` runs, as (ancestor, edge).
    ///
    /// # Panics
    ///
    /// When `id` is not a class of this graph (not an index into [`ClassGraph::classes`]).
    #[must_use]
    pub fn compositions_of(&self, id: ClassId) -> Vec<(ClassId, &CompositionEdge)> {
        self.edges[id.0]
            .iter()
            .map(|&(x, i)| (x, &self.nodes[x.0].compositions[i]))
            .collect()
    }

    /// Classes named `name`: a simple or qualified class name (`DeepseekV2Model`), optionally
    /// prefixed by its module or a tail of it (`deepseek_v2.DeepseekV2Model`). Sorted by module.
    #[must_use]
    pub fn find(&self, name: &str) -> Vec<ClassId> {
        let mut out: Vec<ClassId> = self
            .ids()
            .filter(|&id| {
                let n = &self.nodes[id.0];
                if n.name == name {
                    return true;
                }
                let full = format!("{}.{}", n.module, n.name);
                full == name || full.ends_with(&format!(".{name}"))
            })
            .collect();
        out.sort_by(|&a, &b| (&self.nodes[a.0].module, a).cmp(&(&self.nodes[b.0].module, b)));
        out
    }

    /// All subclasses of `id`, transitively, in breadth-first order (not `id` itself).
    ///
    /// # Panics
    ///
    /// When `id` is not a class of this graph (not an index into [`ClassGraph::classes`]).
    #[must_use]
    pub fn descendants(&self, id: ClassId) -> Vec<ClassId> {
        let mut out = Vec::new();
        let mut seen = vec![false; self.nodes.len()];
        seen[id.0] = true;
        let mut queue = VecDeque::from([id]);
        while let Some(c) = queue.pop_front() {
            for &s in &self.nodes[c.0].subclasses {
                if !std::mem::replace(&mut seen[s.0], true) {
                    out.push(s);
                    queue.push_back(s);
                }
            }
        }
        out
    }

    /// The classes from which some goal class is reachable through compositions (goal classes
    /// included).
    pub(crate) fn can_reach(&self, goal: &dyn Fn(ClassId) -> bool) -> Vec<bool> {
        let mut reach: Vec<bool> = self.ids().map(goal).collect();
        loop {
            let mut changed = false;
            for k in 0..self.nodes.len() {
                if !reach[k]
                    && self.edges[k]
                        .iter()
                        .any(|&(x, i)| reach[self.nodes[x.0].compositions[i].target.0])
                {
                    reach[k] = true;
                    changed = true;
                }
            }
            if !changed {
                return reach;
            }
        }
    }

    /// Composition hops `(via, edge index)` out of `k`, in a stable order.
    pub(crate) fn hops(&self, k: ClassId) -> &[(ClassId, usize)] {
        &self.edges[k.0]
    }
}

/// Never reached: nodes are only made for classes of parsed files.
fn unreachable_class() -> &'static ClassFacts {
    static EMPTY: std::sync::OnceLock<ClassFacts> = std::sync::OnceLock::new();
    EMPTY.get_or_init(|| ClassFacts::empty(String::new()))
}
