//! Target selection by meaning: which definitions the `in = { class = ..., method = ... }` hooks
//! of a recipe land on, in one file or across a package.
//!
//! A recipe declares class selectors (`[select.NAME]`, see [`ClassSelector`]). A root selector
//! picks classes by what they are: listed in an `EntryClass`, defining or inheriting a method.
//! A derived selector follows what such a class holds: `self.model = Qwen2Model(...)`,
//! `self.language_model = DeepseekV3ForCausalLM(...)`, `self.model = self._init_model(...)`
//! (the class the method returns), `self.model = self.body_cls(...)` (a class attribute),
//! `self.model = language_model_cls(...)` (an `__init__` parameter, bound by its default or by
//! the `super().__init__(...)` call of a subclass), or a local variable bound to a class. A hook
//! names a selector and optionally a method: for each selected class, the method that runs for
//! it, its own or inherited (through bases, across files). Each root class (an architecture,
//! for SGLang) thus gets a list of (file, definition) targets; a root for which some required
//! hook finds nothing is skipped, with the reason.
//!
//! [`select`] works on a [`Project`]; [`in_file`] on one parsed file (selection inside it);
//! [`expand`] turns a selection into one concrete recipe per file (hooks with
//! [`Target::Paths`]), where a file gets the targets of every root that lands in it, so a
//! patched file is the same whichever root asked for it.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use super::facts::{dotted, AttributeKind};
use super::graph::{ClassGraph, ClassId};
use super::{Project, Resolved, Scope};
use crate::error::{Error, ErrorKind, Location};
use crate::locate::Target;
use crate::outline::{DefKind, ParsedFile};
use crate::source::SourceFile;
use crate::spec::{Action, ClassSelector, Recipe};
use crate::syntax::{kind, Node, LIST};

/// One definition a hook lands on for a root class.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Selected {
    /// The id of the hook that lands there.
    pub hook: String,
    /// The file, relative to the project root.
    pub file: String,
    /// The definition's path in the file (`Qwen2MoeModel.forward`, `A.f#2`).
    pub path: String,
    /// 1-based line of the definition.
    pub line: usize,
    /// How the class was reached (`Qwen3MoeForCausalLM -model-> Qwen3MoeModel`).
    pub via: String,
}

/// One class of a root selector and where the recipe's hooks land for it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct RootChoice {
    /// The root selector.
    pub selector: String,
    /// The class name (for SGLang: the architecture, as `EntryClass` and `config.json` name it).
    pub class: String,
    /// The dotted module defining the class.
    pub module: String,
    /// Its file, relative to the project root.
    pub file: String,
    /// 1-based line of the class.
    pub line: usize,
    /// Every target of every selector hook; empty when skipped.
    pub targets: Vec<Selected>,
    /// Why this class gets nothing, when a required hook finds no target for it.
    pub skipped: Option<String>,
}

impl RootChoice {
    /// The files this root needs, in order.
    #[must_use]
    pub fn files(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for t in &self.targets {
            if !out.contains(&t.file.as_str()) {
                out.push(&t.file);
            }
        }
        out
    }
}

/// What a recipe's selectors choose in a project.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Selection {
    /// Every root class, sorted by name, skipped ones included.
    pub roots: Vec<RootChoice>,
}

impl Selection {
    /// The roots named `name` (a simple class name; several modules may define one name).
    #[must_use]
    pub fn named(&self, name: &str) -> Vec<&RootChoice> {
        self.roots.iter().filter(|r| r.class == name).collect()
    }

    /// The names of the roots that are not skipped, sorted, without repeats.
    #[must_use]
    pub fn names(&self) -> Vec<&str> {
        let mut out: Vec<&str> = self
            .roots
            .iter()
            .filter(|r| r.skipped.is_none())
            .map(|r| r.class.as_str())
            .collect();
        out.dedup();
        out
    }
}

/// One file and the concrete recipe for it.
#[derive(Clone, Debug)]
pub struct FileRecipe {
    /// The file, relative to the project root.
    pub file: String,
    /// The recipe with every selector hook turned into [`Target::Paths`] in this file (hooks
    /// without targets here are left out; module hooks are kept).
    pub recipe: Recipe,
}

/// Selects the targets of every root class of `recipe` in `project`.
#[must_use]
pub fn select(project: &Project, recipe: &Recipe) -> Selection {
    let graph = project.graph(&Scope::Classes);
    let mut run = Resolver {
        project,
        graph: &graph,
        trees: HashMap::new(),
    };
    let mut roots = Vec::new();
    for root_selector in recipe.selectors.iter().filter(|s| s.held_by.is_none()) {
        for id in run.root_classes(root_selector) {
            roots.push(run.root_choice(recipe, root_selector, id));
        }
    }
    roots.sort_by(|a, b| (&a.class, &a.module).cmp(&(&b.class, &b.module)));
    Selection { roots }
}

/// The concrete per-file recipes for the roots `wanted` (class names; `None` for every root):
/// the files those roots need, each with the targets of every root that lands in it.
///
/// # Errors
/// [`ErrorKind::Selection`] naming a wanted class that is no root (with the closest names), or one
/// that is skipped (with the reason).
pub fn expand(
    recipe: &Recipe,
    selection: &Selection,
    wanted: Option<&[String]>,
    root: &str,
) -> Result<Vec<FileRecipe>, Error> {
    let mut files: Vec<String> = Vec::new();
    let mut add_files = |root: &RootChoice| {
        for f in root.files() {
            if !files.iter().any(|x| x == f) {
                files.push(f.to_string());
            }
        }
    };
    match wanted {
        None => selection
            .roots
            .iter()
            .filter(|r| r.skipped.is_none())
            .for_each(&mut add_files),
        Some(names) => {
            for name in names {
                let found = selection.named(name);
                if found.is_empty() {
                    return Err(selection_error(
                        root,
                        format!(
                            "`{name}` is none of the classes this recipe selects{}",
                            crate::suggest::did_you_mean(&crate::suggest::closest(name, selection.names(), 6))
                        ),
                    ));
                }
                if let Some(skipped) = found.iter().find_map(|r| r.skipped.as_ref()) {
                    if found.iter().all(|r| r.skipped.is_some()) {
                        return Err(selection_error(root, format!("`{name}` cannot be patched: {skipped}")));
                    }
                }
                found
                    .into_iter()
                    .filter(|r| r.skipped.is_none())
                    .for_each(&mut add_files);
            }
        }
    }
    files.sort();
    Ok(files
        .into_iter()
        .map(|file| {
            let recipe = concrete(recipe, selection, &file);
            FileRecipe { file, recipe }
        })
        .collect())
}

/// `recipe` for one file: selector hooks become the paths every (not skipped) root selects in it.
fn concrete(recipe: &Recipe, selection: &Selection, file: &str) -> Recipe {
    let mut out = recipe.clone();
    out.hooks = recipe
        .hooks
        .iter()
        .filter_map(|hook| {
            if !matches!(hook.target, Target::Select { .. }) {
                return Some(hook.clone());
            }
            let mut paths: Vec<String> = Vec::new();
            for root in selection.roots.iter().filter(|r| r.skipped.is_none()) {
                for t in root.targets.iter().filter(|t| t.hook == hook.id && t.file == file) {
                    if !paths.contains(&t.path) {
                        paths.push(t.path.clone());
                    }
                }
            }
            if paths.is_empty() {
                return None;
            }
            let mut hook = hook.clone();
            hook.target = Target::Paths(paths);
            Some(hook)
        })
        .collect();
    out
}

/// The paths `selector` (with `method`) selects inside one file, for every root of the file.
///
/// # Errors
/// [`ErrorKind::Placement`] (at the file's first line) when nothing is selected, saying why.
pub fn in_file(recipe: &Recipe, file: &ParsedFile, hook: &str) -> Result<Vec<String>, Error> {
    let name = file.source().name().to_string();
    let rel = std::path::Path::new(&name)
        .file_name()
        .map_or_else(|| "module.py".to_string(), |n| n.to_string_lossy().into_owned());
    let rel = if rel.ends_with(".py") { rel } else { format!("{rel}.py") };
    let project = Project::from_sources("", vec![(rel.clone(), file.source().text().to_string())]);
    let selection = select(&project, recipe);
    let mut paths: Vec<String> = Vec::new();
    for root in selection.roots.iter().filter(|r| r.skipped.is_none()) {
        for t in root.targets.iter().filter(|t| t.hook == hook && t.file == rel) {
            if !paths.contains(&t.path) {
                paths.push(t.path.clone());
            }
        }
    }
    if paths.is_empty() {
        let why: Vec<String> = selection
            .roots
            .iter()
            .filter_map(|r| r.skipped.as_ref().map(|s| format!("{}: {s}", r.class)))
            .collect();
        let message = if selection.roots.is_empty() {
            "no class of this file is chosen by the recipe's root selectors".to_string()
        } else if why.is_empty() {
            "the selected classes have no target for this hook in this file".to_string()
        } else {
            why.join("; ")
        };
        return Err(ErrorKind::Placement {
            reason: format!("the selection finds nothing: {message}"),
        }
        .at(Location::new(name, 1, 1))
        .with_hook(hook));
    }
    Ok(paths)
}

fn selection_error(root: &str, message: String) -> Error {
    ErrorKind::Selection { message }.at(Location::new(root, 1, 1))
}

/// Parsed files and the graph, for one selection.
struct Resolver<'a, 'p> {
    project: &'p Project,
    graph: &'a ClassGraph<'p>,
    trees: HashMap<usize, Option<ParsedFile>>,
}

/// A class expression and the file it is written in.
type ClassExpr = (Node, usize);

/// The classes a selector reaches, each with how; or why none.
type Reached = Result<Vec<(ClassId, String)>, String>;

impl Resolver<'_, '_> {
    fn root_classes(&self, selector: &ClassSelector) -> Vec<ClassId> {
        let mut ids: Vec<ClassId> = if selector.entries {
            self.graph.entries().into_iter().map(|(id, _, _)| id).collect()
        } else {
            (0..self.graph.classes().len()).collect()
        };
        ids.sort_unstable();
        ids.dedup();
        ids.retain(|&id| {
            let name = &self.graph.class(id).name;
            !self.graph.class(id).draft
                && !selector.exclude.iter().any(|x| x == name)
                && selector
                    .has_method
                    .as_deref()
                    .is_none_or(|m| self.graph.owner_of(id, m).is_some())
        });
        ids
    }

    fn root_choice(&mut self, recipe: &Recipe, root: &ClassSelector, id: ClassId) -> RootChoice {
        let node = self.graph.class(id);
        let mut choice = RootChoice {
            selector: root.name.clone(),
            class: node.name.rsplit('.').next().unwrap_or(&node.name).to_string(),
            module: node.module.clone(),
            file: node.file.clone(),
            line: node.line,
            targets: Vec::new(),
            skipped: None,
        };
        // Classes per selector of this root's tree, with how each was reached.
        let mut classes: BTreeMap<&str, Reached> = BTreeMap::new();
        classes.insert(&root.name, Ok(vec![(id, choice.class.clone())]));
        loop {
            let mut progress = false;
            for s in &recipe.selectors {
                let Some(by) = &s.held_by else { continue };
                if classes.contains_key(s.name.as_str()) {
                    continue;
                }
                let Some(holders) = classes.get(by.as_str()) else {
                    continue;
                };
                let result = match holders {
                    Err(why) => Err(why.clone()),
                    Ok(holders) => {
                        let holders = holders.clone();
                        self.held_all(&holders, s)
                    }
                };
                classes.insert(&s.name, result);
                progress = true;
            }
            if !progress {
                break;
            }
        }
        for hook in &recipe.hooks {
            let Target::Select { selector, method } = &hook.target else {
                continue;
            };
            let Some(found) = classes.get(selector.as_str()) else {
                continue;
            };
            let fail = |why: String| (!hook.optional).then_some(why);
            let found = match found {
                Ok(found) => found,
                Err(why) => {
                    if let Some(why) = fail(why.clone()) {
                        choice.skipped.get_or_insert(why);
                    }
                    continue;
                }
            };
            for (class, via) in found {
                let deepest = matches!(hook.action, Action::WrapReturns { .. });
                match self.target_of(*class, method.as_deref(), deepest) {
                    Ok(targets) => choice
                        .targets
                        .extend(targets.into_iter().map(|(file, path, line)| Selected {
                            hook: hook.id.clone(),
                            file,
                            path,
                            line,
                            via: via.clone(),
                        })),
                    Err(why) => {
                        if let Some(why) = fail(why) {
                            choice.skipped.get_or_insert(why);
                        }
                    }
                }
            }
        }
        if choice.skipped.is_some() {
            choice.targets.clear();
        }
        choice
    }

    /// The definitions a hook lands on for one class: the class, or the method that runs for it.
    fn target_of(
        &mut self,
        class: ClassId,
        method: Option<&str>,
        deepest: bool,
    ) -> Result<Vec<(String, String, usize)>, String> {
        let node = self.graph.class(class);
        let Some(method) = method else {
            return Ok(vec![(node.file.clone(), node.name.clone(), node.line)]);
        };
        let mut owner = self
            .graph
            .owner_of(class, method)
            .ok_or_else(|| format!("`{}` has no method `{method}` (in the class or its bases)", node.name))?;
        // The returns that produce the value: past overrides that only return
        // `super().<method>(...)`, to the base method they hand over to.
        while deepest && self.passes_to_super(owner, method) {
            let mro = self.graph.mro(class);
            let at = mro.iter().position(|&c| c == owner).unwrap_or(mro.len());
            match mro[at + 1..]
                .iter()
                .copied()
                .find(|&c| self.graph.facts(c).defines(method))
            {
                Some(next) => owner = next,
                None => break,
            }
        }
        let owner_node = self.graph.class(owner);
        let path = format!("{}.{method}", owner_node.name);
        let file = owner_node.key.file;
        let rel = owner_node.file.clone();
        let Some(parsed) = self.tree(file) else {
            return Err(format!("{rel} does not parse"));
        };
        let defs: Vec<usize> = parsed
            .find_all(&path)
            .iter()
            .filter(|d| d.kind() == DefKind::Method)
            .map(|d| d.line())
            .collect();
        Ok(match defs.len() {
            0 => return Err(format!("`{path}` is not a plain method of {rel}")),
            1 => vec![(rel, path, defs[0])],
            _ => defs
                .iter()
                .enumerate()
                .map(|(i, &line)| (rel.clone(), format!("{path}#{}", i + 1), line))
                .collect(),
        })
    }

    /// Whether every `return` of `owner.<method>` returns `super().<method>(...)` as it is.
    fn passes_to_super(&mut self, owner: ClassId, method: &str) -> bool {
        let file = self.graph.class(owner).key.file;
        let path = format!("{}.{method}", self.graph.class(owner).name);
        let Some(parsed) = self.tree(file) else { return false };
        let defs = parsed.find_all(&path);
        let [def] = defs.as_slice() else { return false };
        let values = returned_values(parsed.node(def));
        !values.is_empty()
            && values
                .iter()
                .all(|v| v.as_call().is_some_and(|call| is_super_method(call.func, method)))
    }

    fn tree(&mut self, file: usize) -> Option<&ParsedFile> {
        let project = self.project;
        self.trees
            .entry(file)
            .or_insert_with(|| {
                let f = project.file(file);
                ParsedFile::parse(SourceFile::new(f.relative_path(), f.text())).ok()
            })
            .as_ref()
    }

    /// What the holders hold, per the derived selector `s`.
    fn held_all(&mut self, holders: &[(ClassId, String)], s: &ClassSelector) -> Result<Vec<(ClassId, String)>, String> {
        let mut out: Vec<(ClassId, String)> = Vec::new();
        let mut why = Vec::new();
        for (holder, how) in holders {
            match self.held(*holder, how, s) {
                Ok(found) => {
                    for f in found {
                        if !out.iter().any(|(c, _)| *c == f.0) {
                            out.push(f);
                        }
                    }
                }
                Err(reason) => why.push(reason),
            }
        }
        if out.is_empty() {
            Err(why.join("; "))
        } else {
            Ok(out)
        }
    }

    /// Breadth-first through the `via` attributes from `start` (itself included when `assigns`
    /// is given) to the first classes that assign `self.<assigns>`.
    fn held(&mut self, start: ClassId, how: &str, s: &ClassSelector) -> Result<Vec<(ClassId, String)>, String> {
        let mut out = Vec::new();
        let mut notes: Vec<String> = Vec::new();
        let mut queue = VecDeque::from([(start, how.to_string(), 0usize)]);
        let mut seen = HashSet::from([start]);
        while let Some((c, how, depth)) = queue.pop_front() {
            let done = match &s.assigns {
                Some(attr) => self.assigns(c, attr),
                None => depth > 0,
            };
            if done {
                out.push((c, how));
                continue;
            }
            if depth >= 6 {
                continue;
            }
            for (attr, targets, note) in self.holds(c, &s.via) {
                if let Some(note) = note {
                    if !notes.contains(&note) {
                        notes.push(note);
                    }
                }
                for t in targets {
                    if seen.insert(t) {
                        let name = &self.graph.class(t).name;
                        queue.push_back((t, format!("{how} -{attr}-> {name}"), depth + 1));
                    }
                }
            }
        }
        if out.is_empty() {
            let start_name = &self.graph.class(start).name;
            let what = match &s.assigns {
                Some(attr) => format!("no class that assigns `self.{attr}`"),
                None => "no class".to_string(),
            };
            let through = if s.via.is_empty() {
                "its attributes".to_string()
            } else {
                s.via
                    .iter()
                    .map(|v| format!("`self.{v}`"))
                    .collect::<Vec<_>>()
                    .join(" or ")
            };
            let mut message = format!("`{start_name}` holds {what} through {through}");
            if !notes.is_empty() {
                message.push_str(&format!(" ({})", notes.join("; ")));
            }
            return Err(message);
        }
        Ok(out)
    }

    /// Whether `c` or a base assigns `self.<attr>` in some method.
    fn assigns(&self, c: ClassId, attr: &str) -> bool {
        self.graph.mro(c).iter().any(|&k| {
            self.graph
                .facts(k)
                .attributes
                .iter()
                .any(|a| a.name == attr && a.kind == AttributeKind::Instance)
        })
    }

    /// `(attribute, classes, note)` for each `self.<attr> = <value>` in the methods of `c` and
    /// its bases; the note says why a value resolved to no class.
    fn holds(&mut self, c: ClassId, via: &[String]) -> Vec<(String, Vec<ClassId>, Option<String>)> {
        let mut out = Vec::new();
        let mro: Vec<ClassId> = self.graph.mro(c).to_vec();
        for k in mro {
            let file = self.graph.class(k).key.file;
            let class_path = self.graph.class(k).name.clone();
            let Some(parsed) = self.tree(file) else { continue };
            let mut found: Vec<(String, Node, Node)> = Vec::new();
            for def in parsed.definitions() {
                let is_method = def.kind() == DefKind::Method
                    && def
                        .path()
                        .strip_prefix(class_path.as_str())
                        .and_then(|r| r.strip_prefix('.'))
                        == Some(def.name());
                if !is_method {
                    continue;
                }
                let fn_node = parsed.node(def);
                let Some(body) = fn_node.field("body") else { continue };
                for (attr, value) in self_assignments(body) {
                    if via.is_empty() || via.contains(&attr) {
                        found.push((attr, value.clone(), fn_node.clone()));
                    }
                }
            }
            for (attr, value, method) in found {
                let mut notes = Vec::new();
                let classes = self.eval(c, k, &method, &value, &mut notes, 0);
                let note = (classes.is_empty() && !notes.is_empty()).then(|| notes.join("; "));
                out.push((attr, classes, note));
            }
        }
        out
    }

    /// The classes an assigned value constructs. `c` is the instance's class (for `self.m`
    /// lookups), `k` the class whose method `method` holds the value.
    fn eval(
        &mut self,
        c: ClassId,
        k: ClassId,
        method: &Node,
        value: &Node,
        notes: &mut Vec<String>,
        depth: usize,
    ) -> Vec<ClassId> {
        if depth > 8 {
            return Vec::new();
        }
        match value.kind() {
            kind::CALL => match value.as_call() {
                Some(call) => self.callee(c, k, method, call.func, notes, depth),
                None => Vec::new(),
            },
            kind::IF_EXP => {
                let mut out = Vec::new();
                for branch in value.if_exp_branches().unwrap_or_default() {
                    out.extend(self.eval(c, k, method, branch, notes, depth + 1));
                }
                out
            }
            kind::BOOL_OP => value
                .bool_op_values()
                .unwrap_or_default()
                .iter()
                .flat_map(|v| self.eval(c, k, method, v, notes, depth + 1))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The classes a called expression denotes.
    fn callee(
        &mut self,
        c: ClassId,
        k: ClassId,
        method: &Node,
        func: &Node,
        notes: &mut Vec<String>,
        depth: usize,
    ) -> Vec<ClassId> {
        let file = self.graph.class(k).key.file;
        let text = dotted(func).unwrap_or_default();
        // self.m(...): a method returning an instance, or a class attribute holding a class.
        if let Some(m) = text.strip_prefix("self.").filter(|m| !m.contains('.')) {
            if let Some(owner) = self.graph.owner_of(c, m) {
                let owner_file = self.graph.class(owner).key.file;
                let path = format!("{}.{m}", self.graph.class(owner).name);
                let returns: Vec<(Node, Node)> = self
                    .tree(owner_file)
                    .map(|p| {
                        p.find_all(&path)
                            .iter()
                            .flat_map(|d| {
                                let fn_node = p.node(d).clone();
                                returned_values(&fn_node).into_iter().map(move |v| (v, fn_node.clone()))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                return returns
                    .iter()
                    .flat_map(|(v, fn_node)| self.eval(c, owner, fn_node, v, notes, depth + 1))
                    .collect();
            }
            for &base in self.graph.mro(c).to_vec().iter() {
                let bfile = self.graph.class(base).key.file;
                let class_path = self.graph.class(base).name.clone();
                let Some(expr) = self.tree(bfile).and_then(|p| class_attribute(p, &class_path, m)) else {
                    continue;
                };
                return self.class_expr(&[(expr, bfile)], method, notes);
            }
            notes.push(format!("`{text}` is neither a method nor a class attribute"));
            return Vec::new();
        }
        if let Some(name) = func.as_name() {
            if let Some(local) = local_value(method, name) {
                let found = self.class_expr(&[(local.clone(), file)], method, notes);
                if found.is_empty() {
                    let text = self.project.file(file).text().get(local.range()).unwrap_or("?");
                    notes.push(format!(
                        "`{name}` is computed when the model is built (`{name} = {text}`)"
                    ));
                }
                return found;
            }
            if param_names(method).iter().any(|p| p == name) {
                let exprs = self.parameter_values(c, k, method, name);
                if exprs.is_empty() {
                    notes.push(format!("parameter `{name}` has no default and no subclass passes it"));
                }
                return self.class_expr(&exprs, method, notes);
            }
        }
        if text.is_empty() || text.starts_with("self.") {
            return Vec::new();
        }
        self.resolve(file, method, &text, notes)
    }

    /// Classes denoted by class expressions (`A`, `mod.A`, `A if c else B`).
    fn class_expr(&mut self, exprs: &[ClassExpr], method: &Node, notes: &mut Vec<String>) -> Vec<ClassId> {
        let mut out = Vec::new();
        for (expr, file) in exprs {
            match expr.kind() {
                kind::IF_EXP => {
                    let branches: Vec<ClassExpr> = expr
                        .if_exp_branches()
                        .unwrap_or_default()
                        .into_iter()
                        .map(|branch| (branch.clone(), *file))
                        .collect();
                    out.extend(self.class_expr(&branches, method, notes));
                }
                kind::NAME | kind::ATTRIBUTE => {
                    if let Some(text) = dotted(expr) {
                        out.extend(self.resolve(*file, method, &text, notes));
                    }
                }
                _ => {}
            }
        }
        out
    }

    fn resolve(&mut self, file: usize, method: &Node, text: &str, notes: &mut Vec<String>) -> Vec<ClassId> {
        // Method-local imports (`from .x import A` inside `__init__`) shadow module names.
        let locals = self
            .project
            .facts(file)
            .ok()
            .and_then(|facts| {
                let name = method.label()?;
                let line = self
                    .project
                    .file(file)
                    .text()
                    .get(..method.range().start)?
                    .matches('\n')
                    .count()
                    + 1;
                facts
                    .classes
                    .iter()
                    .flat_map(|c| &c.methods)
                    .filter(|m| m.name == name && m.line <= line)
                    .max_by_key(|m| m.line)
                    .map(|m| m.locals.clone())
            })
            .unwrap_or_default();
        let mut out = Vec::new();
        for r in self.project.resolve(file, &locals, text) {
            match r {
                Resolved::Class(key) => {
                    if let Some(id) = self.graph.id_of(key) {
                        out.push(id);
                    }
                }
                Resolved::External(e) => notes.push(format!("`{text}` is `{e}`, outside the package")),
                Resolved::Module(m) => notes.push(format!("`{text}` is module `{m}`")),
                Resolved::Unresolved(why) => notes.push(format!("`{text}`: {why}")),
            }
        }
        out
    }

    /// The expressions a parameter of `k`'s method takes when an instance of `c` is built: the
    /// value a subclass's `super().<method>(...)` passes for it, or its default.
    fn parameter_values(&mut self, c: ClassId, k: ClassId, method: &Node, param: &str) -> Vec<ClassExpr> {
        let name = method.label().unwrap_or_default().to_string();
        let k_file = self.graph.class(k).key.file;
        let own_default = || {
            param_default(method, param)
                .map(|d| vec![(d, k_file)])
                .unwrap_or_default()
        };
        // The definers of the method between c and k, most derived first.
        let mro: Vec<ClassId> = self.graph.mro(c).to_vec();
        let Some(end) = mro.iter().position(|&x| x == k) else {
            return own_default();
        };
        let definers: Vec<ClassId> = mro[..=end]
            .iter()
            .copied()
            .filter(|&x| self.graph.facts(x).defines(&name))
            .collect();
        if definers.len() < 2 {
            return own_default();
        }
        // env: parameter -> expression, evaluated from the most derived definer down to k.
        let mut env: HashMap<String, ClassExpr> = HashMap::new();
        let mut previous: Option<(Node, usize)> = None;
        for &d in &definers {
            let d_file = self.graph.class(d).key.file;
            let path = format!("{}.{name}", self.graph.class(d).name);
            let Some(fn_node) = self
                .tree(d_file)
                .and_then(|p| p.find_all(&path).first().map(|def| p.node(def).clone()))
            else {
                return own_default();
            };
            let params = param_names(&fn_node);
            let mut next: HashMap<String, ClassExpr> = HashMap::new();
            for p in &params {
                if let Some(default) = param_default(&fn_node, p) {
                    next.insert(p.clone(), (default, d_file));
                }
            }
            if let Some((prev_fn, prev_file)) = &previous {
                if let Some(call) = super_call(prev_fn, &name).as_ref().and_then(Node::as_call) {
                    for (i, arg) in call.args.iter().enumerate() {
                        if let Some(p) = params.get(i + 1) {
                            next.insert(p.clone(), bind(arg, &env, *prev_file));
                        }
                    }
                    for kw in call.keywords.iter().filter_map(Node::as_keyword) {
                        if let Some(label) = kw.arg {
                            next.insert(label.to_string(), bind(kw.value, &env, *prev_file));
                        }
                    }
                }
            }
            env = next;
            previous = Some((fn_node, d_file));
        }
        env.get(param).cloned().map(|e| vec![e]).unwrap_or_default()
    }
}

/// An argument expression in the caller's environment: a caller parameter stands for its value.
fn bind(arg: &Node, env: &HashMap<String, ClassExpr>, file: usize) -> ClassExpr {
    if let Some(value) = arg.as_name().and_then(|n| env.get(n)) {
        return value.clone();
    }
    (arg.clone(), file)
}

/// The `super().<name>(...)` call in a method body (not in nested definitions).
fn super_call(fn_node: &Node, name: &str) -> Option<Node> {
    let mut found = None;
    fn_node.field("body")?.walk(&mut |n| {
        if found.is_some() || n.is_definition() {
            return false;
        }
        if n.as_call().is_some_and(|call| is_super_method(call.func, name)) {
            found = Some(n.clone());
            return false;
        }
        true
    });
    found
}

/// Whether `func` is `super().<name>`.
fn is_super_method(func: &Node, name: &str) -> bool {
    func.as_attribute().is_some_and(|attr| {
        attr.attr == name
            && attr
                .value
                .as_call()
                .is_some_and(|inner| dotted(inner.func).as_deref() == Some("super"))
    })
}

/// `self.<attr> = value` statements of a method body (branches included, nested defs not).
fn self_assignments(body: &Node) -> Vec<(String, &Node)> {
    let mut out = Vec::new();
    body.walk(&mut |n| {
        if n.is_definition() {
            return false;
        }
        let (targets, value): (Vec<&Node>, Option<&Node>) = if let Some(assign) = n.as_assign() {
            (assign.targets.iter().collect(), Some(assign.value))
        } else if let Some(ann) = n.as_ann_assign() {
            (vec![ann.target], ann.value)
        } else {
            return true;
        };
        if let Some(value) = value {
            for attr in targets.iter().filter_map(|t| t.as_attribute()) {
                if attr.value.as_name() == Some("self") {
                    out.push((attr.attr.to_string(), value));
                }
            }
        }
        false
    });
    out
}

/// The values of a function's `return` statements (nested definitions excluded).
fn returned_values(fn_node: &Node) -> Vec<Node> {
    let mut out = Vec::new();
    if let Some(body) = fn_node.field("body") {
        body.walk(&mut |n| {
            if n.is_definition() {
                return false;
            }
            if let Some(Some(value)) = n.as_return() {
                out.push(value.clone());
            }
            true
        });
    }
    out
}

/// The value of the last `name = value` in a method body (nested definitions excluded).
fn local_value(fn_node: &Node, name: &str) -> Option<Node> {
    let mut found = None;
    fn_node.field("body")?.walk(&mut |n| {
        if n.is_definition() {
            return false;
        }
        if let Some(assign) = n.as_assign() {
            if assign.targets.iter().any(|t| t.as_name() == Some(name)) {
                found = Some(assign.value.clone());
            }
            return false;
        }
        true
    });
    found
}

/// `name = value` in the body of class `class_path` of a parsed file.
fn class_attribute(parsed: &ParsedFile, class_path: &str, name: &str) -> Option<Node> {
    let def = parsed
        .find_all(class_path)
        .into_iter()
        .find(|d| d.kind() == DefKind::Class)?;
    let body = parsed.node(def).field("body")?;
    body.children().iter().rev().find_map(|stmt| {
        let assign = stmt.as_assign()?;
        assign
            .targets
            .iter()
            .any(|t| t.as_name() == Some(name))
            .then(|| assign.value.clone())
    })
}

fn arguments(fn_node: &Node) -> Option<&Node> {
    fn_node.children().iter().find(|c| c.is(kind::ARGUMENTS))
}

/// Positional and keyword parameter names of a function, `self` included.
fn param_names(fn_node: &Node) -> Vec<String> {
    let mut out = Vec::new();
    let Some(args) = arguments(fn_node) else { return out };
    for list in args.children().iter().filter(|c| c.kind() == LIST) {
        for item in list.children() {
            let arg = item.as_arg_with_default().map_or(item, |(arg, _)| arg);
            if let Some(name) = arg.label() {
                out.push(name.to_string());
            }
        }
    }
    out
}

fn param_default(fn_node: &Node, param: &str) -> Option<Node> {
    let args = arguments(fn_node)?;
    args.children()
        .iter()
        .filter(|c| c.kind() == LIST)
        .flat_map(Node::children)
        .filter_map(Node::as_arg_with_default)
        .find(|(arg, _)| arg.label() == Some(param))
        .and_then(|(_, default)| default.cloned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECIPE: &str = r#"
[recipe]
id = "r"
summary = "s"
[select.top]
entries = true
has-method = "capture"
[select.inner]
held-by = "top"
via = ["model", "language_model"]
assigns = "layers"
[[hook]]
id = "f"
summary = "f"
in = { class = "inner", method = "forward" }
wrap-returns = "g({value})"
[[hook]]
id = "i"
summary = "i"
in = { class = "top", method = "__init__" }
at = "end"
code = "pass"
"#;

    fn targets(sources: &[(&str, &str)]) -> Vec<String> {
        let recipe = Recipe::from_toml("r.toml", RECIPE).unwrap();
        let project = Project::from_sources(
            "pkg",
            sources
                .iter()
                .map(|(a, b)| ((*a).to_string(), (*b).to_string()))
                .collect(),
        );
        let selection = select(&project, &recipe);
        selection
            .roots
            .iter()
            .flat_map(|r| {
                let skipped = r.skipped.iter().map(move |s| format!("{}: skipped: {s}", r.class));
                r.targets
                    .iter()
                    .map(move |t| format!("{}: {} {}:{} ({})", r.class, t.hook, t.file, t.path, t.via))
                    .chain(skipped)
            })
            .collect()
    }

    #[test]
    fn follows_constructors_methods_class_attributes_and_parameters() {
        let base = "class Base:\n    def __init__(self, config):\n        self.layers = []\n    def forward(self, x):\n        return x\n";
        let a = "from .base import Base\n\
class Inner(Base):\n    pass\n\
class Direct:\n    def __init__(self, config):\n        self.model = Inner(config)\n    def capture(self): pass\n\
class ViaMethod:\n    def __init__(self, config):\n        self.model = self._init_model(config)\n    def _init_model(self, config):\n        return Inner(config)\n    def capture(self): pass\n\
class ViaAttr:\n    body_cls = Inner\n    def __init__(self, config):\n        self.model = self.body_cls(config)\n    def capture(self): pass\n\
class ViaParam:\n    def __init__(self, config, cls=Inner):\n        self.model = cls(config)\n    def capture(self): pass\n\
class Sub(ViaParam):\n    def __init__(self, config, cls=Base):\n        super().__init__(config, cls)\n\
class Wrapper:\n    def __init__(self, config):\n        self.language_model = Direct(config)\n    def capture(self): pass\n\
class Opaque:\n    def __init__(self, config):\n        arch = pick(config)\n        self.model = arch(config)\n    def capture(self): pass\n\
EntryClass = [Direct, ViaMethod, ViaAttr, ViaParam, Sub, Wrapper, Opaque]\n";
        let got = targets(&[("base.py", base), ("a.py", a)]);
        let expected = [
            "Direct: f base.py:Base.forward (Direct -model-> Inner)",
            "Direct: i a.py:Direct.__init__ (Direct)",
            "Opaque: skipped: `Opaque` holds no class that assigns `self.layers` through `self.model` or `self.language_model` \
             (`arch` is computed when the model is built (`arch = pick(config)`))",
            "Sub: f base.py:Base.forward (Sub -model-> Base)",
            "Sub: i a.py:Sub.__init__ (Sub)",
            "ViaAttr: f base.py:Base.forward (ViaAttr -model-> Inner)",
            "ViaAttr: i a.py:ViaAttr.__init__ (ViaAttr)",
            "ViaMethod: f base.py:Base.forward (ViaMethod -model-> Inner)",
            "ViaMethod: i a.py:ViaMethod.__init__ (ViaMethod)",
            "ViaParam: f base.py:Base.forward (ViaParam -model-> Inner)",
            "ViaParam: i a.py:ViaParam.__init__ (ViaParam)",
            "Wrapper: f base.py:Base.forward (Wrapper -language_model-> Direct -model-> Inner)",
            "Wrapper: i a.py:Wrapper.__init__ (Wrapper)",
        ];
        assert_eq!(got, expected, "{got:#?}");
    }
}
