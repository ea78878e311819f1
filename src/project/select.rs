//! Target selection by meaning: which definitions the `in = { class = ..., method = ... }` hooks
//! of a recipe land on, in one file or across a package.
//!
//! A recipe declares class selectors (`[select.NAME]`, see [`ClassSelector`]). A root selector
//! picks classes by what they are: listed in an entry list (the recipe's `[conventions]
//! entry-list`, [`Conventions::entry_list`](super::Conventions::entry_list): e.g. a module-level
//! `EntryClass`), defining or inheriting a method; draft classes are never roots.
//! A derived selector follows what such a class holds: `self.model = Qwen2Model(...)`,
//! `self.language_model = DeepseekV3ForCausalLM(...)`, `self.model = self._init_model(...)`
//! (the class the method returns), `self.model = self.body_cls(...)` (a class attribute),
//! `self.model = language_model_cls(...)` (an `__init__` parameter, bound by its default or by
//! the `super().__init__(...)` call of a subclass), or a local variable bound to a class. A hook
//! names a selector and optionally a method: for each selected class, the method that runs for
//! it, its own or inherited (through bases, across files). Each root class (e.g. a model
//! architecture) thus gets a list of (file, definition) targets; a root for which some required
//! hook finds nothing is skipped, with the reason.
//!
//! [`choose_roots`] works on a [`Project`]; [`in_file`] on one parsed file (selection inside it);
//! [`expand`] turns a selection into one concrete recipe per file (hooks with
//! [`Target::Paths`]), where a file gets the targets of every root that lands in it, so a
//! patched file is the same whichever root asked for it.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use super::facts::{dotted, AttributeKind};
use super::graph::{ClassGraph, ClassId};
use super::{Project, Resolved, Scope};
use crate::error::{Error, ErrorKind, PlacementReason, SelectionReason};
use crate::locate::Target;
use crate::location::Location;
use crate::outline::{DefKind, ParsedFile};
use crate::source::SourceFile;
use crate::spec::{Action, ClassSelector, Recipe};
use crate::syntax::{kind, Node, LIST};

mod eval;
mod held;

use eval::{is_super_method, returned_values, self_assignments};

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
    /// The class name (as the entry list names it).
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

/// What a recipe's class selectors choose in a project: every root class ([`RootChoice`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct RootChoices {
    /// Every root class, sorted by name, skipped ones included.
    pub roots: Vec<RootChoice>,
}

impl RootChoices {
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
pub fn choose_roots(project: &Project, recipe: &Recipe) -> RootChoices {
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
    RootChoices { roots }
}

/// The concrete per-file recipes for the roots `wanted` (class names; `None` for every root):
/// the files those roots need, each with the targets of every root that lands in it.
///
/// # Errors
/// [`ErrorKind::Selection`] naming a wanted class that is no root (with the closest names), or one
/// that is skipped (with the reason).
pub fn expand(
    recipe: &Recipe,
    selection: &RootChoices,
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
                    let closest = crate::suggest::closest(name, selection.names(), 6);
                    let reason = SelectionReason::NotSelected {
                        name: name.clone(),
                        closest,
                    };
                    return Err(selection_error(root, reason));
                }
                if let Some(skipped) = found.iter().find_map(|r| r.skipped.as_ref()) {
                    if found.iter().all(|r| r.skipped.is_some()) {
                        let reason = SelectionReason::CannotPatch {
                            name: name.clone(),
                            why: skipped.clone(),
                        };
                        return Err(selection_error(root, reason));
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
fn concrete(recipe: &Recipe, selection: &RootChoices, file: &str) -> Recipe {
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
/// Entry classes and drafts follow the recipe's `[conventions]`.
///
/// # Errors
/// [`ErrorKind::Placement`] (at the file's first line) when nothing is selected, saying why.
pub fn in_file(recipe: &Recipe, file: &ParsedFile, hook: &str) -> Result<Vec<String>, Error> {
    let conventions = recipe.conventions.clone();
    let name = file.source().name().to_string();
    let rel = std::path::Path::new(&name)
        .file_name()
        .map_or_else(|| "module.py".to_string(), |n| n.to_string_lossy().into_owned());
    let rel = if rel.ends_with(".py") { rel } else { format!("{rel}.py") };
    let project = Project::from_sources_with("", vec![(rel.clone(), file.source().text().to_string())], conventions);
    let selection = choose_roots(&project, recipe);
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
            reason: PlacementReason::SelectsNothing { why: message },
        }
        .at(Location::new(name, 1, 1))
        .with_hook(hook));
    }
    Ok(paths)
}

fn selection_error(root: &str, reason: SelectionReason) -> Error {
    // The folder as a whole: no line or column.
    ErrorKind::Selection { reason }.at(Location::whole(root))
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
            self.graph.ids().collect()
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
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECIPE: &str = r#"
[recipe]
id = "r"
summary = "s"
[conventions]
entry-list = "EntryClass"
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
        let project = Project::from_sources_with(
            "pkg",
            sources
                .iter()
                .map(|(a, b)| ((*a).to_string(), (*b).to_string()))
                .collect(),
            recipe.conventions.clone(),
        );
        let selection = choose_roots(&project, &recipe);
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
