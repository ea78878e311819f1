//! Many files at once: a package directory scanned in parallel, each module's facts (import
//! table, classes, `EntryClass`), class names resolved across modules, and the class graph with
//! its delegation queries (chains, hook reach, missing forwards).
//!
//! Scanning reads every `.py` file but parses none. Files are parsed on demand, at most once,
//! and only the facts are kept (the syntax tree is dropped). Which files a query parses is
//! decided by a cheap text prefilter ([`Scope`]):
//! - [`Scope::Classes`]: files with a `class` statement or an `EntryClass` (the whole graph);
//! - [`Scope::Related`]: the files that can matter to a few named classes, found by a closure
//!   over identifiers. A class can only be a subclass or a holder of class `X` if its file
//!   mentions `X` (or a name `X` is re-bound to, which is added in turn), so the closure parses
//!   the files mentioning the names, adds the classes there that refer to them, and repeats.
//!   Modules needed to resolve a base class are parsed when resolution reaches them.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = std::env::temp_dir().join(format!("pysplice-doc-{}", std::process::id()));
//! std::fs::create_dir_all(dir.join("pkg"))?;
//! std::fs::write(dir.join("pkg/__init__.py"), "")?;
//! std::fs::write(dir.join("pkg/inner.py"), "class Inner:\n    def forward(self): pass\n")?;
//! std::fs::write(
//!     dir.join("pkg/outer.py"),
//!     "from .inner import Inner\nclass Outer:\n    def __init__(self):\n        self.inner = Inner()\nEntryClass = Outer\n",
//! )?;
//! let project = pysplice::project::Project::scan(&dir.join("pkg"))?;
//! let reach = project.reach("Inner.forward")?;
//! assert_eq!(reach.entries[0].chain.to_string(), "Outer -inner-> Inner");
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok(())
//! # }
//! ```

mod facts;
mod graph;
mod query;
pub mod select;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rayon::prelude::*;

use crate::error::{Error, ErrorKind, Location};
use crate::source::SourceFile;
use crate::syntax::is_identifier;

pub use facts::{
    AttributeFacts, AttributeKind, BaseFacts, ClassFacts, CompositionFacts, Import, MethodFacts, MethodKind,
    ModuleFacts, UseFacts, UseKind,
};
pub use graph::{
    looks_like_draft, BaseLink, BaseTarget, ClassGraph, ClassId, ClassNode, CompositionEdge, Diagnostic, RunPath,
};
pub use query::{
    Chain, Evidence, ForwardNeed, Forwarding, Member, Reach, ReachEntry, RunVia, Runner, Step, UseEvidence,
};

use facts::{Binding, ModuleContext, NameBinding};

/// A file that could not be read or parsed: reported, never fatal.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
pub struct FileProblem {
    /// The file, relative to the scanned directory.
    pub file: String,
    /// 1-based line (1 when unknown).
    pub line: usize,
    /// 1-based column (1 when unknown).
    pub column: usize,
    /// What went wrong: the error's message without its place (which the fields above hold).
    pub message: String,
}

impl FileProblem {
    /// The problem `err` found in `file`: its line, column and message, one way for every
    /// error.
    fn new(file: &str, err: &Error) -> FileProblem {
        FileProblem {
            file: file.to_string(),
            line: err.location().line,
            column: err.location().column,
            message: err.message().to_string(),
        }
    }
}

/// One `.py` file of a project.
#[derive(Debug)]
pub struct ProjectFile {
    path: PathBuf,
    rel: String,
    module: String,
    is_package: bool,
    text: Result<String, FileProblem>,
    facts: OnceLock<Result<ModuleFacts, FileProblem>>,
}

impl ProjectFile {
    /// The file's path on disk.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path relative to the scanned directory, `/`-separated (what evidence shows).
    #[must_use]
    pub fn relative_path(&self) -> &str {
        &self.rel
    }

    /// The dotted module name (`sglang.srt.models.kimi_k25`; a package's `__init__.py` is named
    /// after the package).
    #[must_use]
    pub fn module(&self) -> &str {
        &self.module
    }

    /// Whether this is a package's `__init__.py`.
    #[must_use]
    pub fn is_package(&self) -> bool {
        self.is_package
    }

    /// The facts, if the file has been parsed already.
    #[must_use]
    pub fn parsed(&self) -> Option<&Result<ModuleFacts, FileProblem>> {
        self.facts.get()
    }

    fn text(&self) -> &str {
        self.text.as_deref().unwrap_or("")
    }
}

/// Options of [`Project::scan_with`].
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ScanOptions {
    /// The dotted package name of the scanned directory; `None` infers it (see
    /// [`Project::scan`]). Give `Some(String::new())` to treat the directory as a source root.
    pub package: Option<String>,
}

impl ScanOptions {
    /// Options that name the scanned directory's package explicitly.
    #[must_use]
    pub fn with_package(package: impl Into<String>) -> ScanOptions {
        ScanOptions {
            package: Some(package.into()),
        }
    }
}

/// Which files a graph is built from (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every file.
    All,
    /// Files whose text has a line starting with `class ` (after indentation) or mentions
    /// `EntryClass`.
    Classes,
    /// Files that can matter to these class names: their definitions, subclasses and holders,
    /// transitively.
    Related(Vec<String>),
    /// Files with a `class X` statement for one of these names; compositions are resolved only
    /// for those classes and their bases (what a wrapper's delegates need).
    Defining(Vec<String>),
}

/// Counters of how much work a query did (for benchmarks and `--stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
pub struct LoadStats {
    /// `.py` files in the project.
    pub files: usize,
    /// Files parsed so far (by any query).
    pub parsed: usize,
    /// Files that failed to parse or read.
    pub failed: usize,
}

/// Why a query has no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// No class of that name in the project.
    #[error("no class `{name}` in {root}{}", crate::suggest::did_you_mean(candidates))]
    UnknownClass {
        /// The scanned directory.
        root: String,
        /// The name asked for.
        name: String,
        /// Class names that exist and are closest.
        candidates: Vec<String>,
    },
    /// The class exists but neither it nor its bases define the method.
    #[error(
        "`{class}` has no method `{method}` (in the class or its bases){}",
        crate::suggest::did_you_mean(candidates)
    )]
    UnknownMethod {
        /// The class that was asked about (found, but without the method).
        class: String,
        /// The method asked for.
        method: String,
        /// Methods of the class and its bases that are closest.
        candidates: Vec<String>,
    },
    /// A path such as `Class.method` is malformed.
    #[error("bad path `{path}`: {reason}")]
    BadPath {
        /// The path as given.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// Both classes exist but no chain of composition and inheritance joins them.
    #[error("no chain from `{from}` to `{to}`: {from} neither is nor holds (through its attributes or bases) a {to}")]
    NoChain {
        /// Start class.
        from: String,
        /// Target class.
        to: String,
    },
}

/// A scanned package directory.
#[derive(Debug)]
pub struct Project {
    root: PathBuf,
    package: String,
    files: Vec<ProjectFile>,
    modules: HashMap<String, usize>,
    namespaces: HashSet<String>,
}

/// A class definition: file index and class index within that file's facts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct ClassKey {
    pub file: usize,
    pub class: usize,
}

/// What a dotted name denotes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Resolved {
    Class(ClassKey),
    Module(String),
    External(String),
    Unresolved(String),
}

const BUILTINS: &[&str] = &[
    "object",
    "type",
    "int",
    "float",
    "str",
    "bytes",
    "list",
    "dict",
    "set",
    "tuple",
    "frozenset",
    "bool",
    "Exception",
    "BaseException",
    "ValueError",
    "TypeError",
    "RuntimeError",
    "KeyError",
    "IndexError",
    "AttributeError",
    "NotImplementedError",
    "OSError",
    "ImportError",
    "StopIteration",
    "AssertionError",
    "Warning",
    "UserWarning",
    "DeprecationWarning",
    "property",
    "staticmethod",
    "classmethod",
    "super",
    "range",
    "enumerate",
    "zip",
    "map",
    "filter",
    "len",
    "print",
    "isinstance",
    "getattr",
    "setattr",
    "hasattr",
    "dataclass",
];

impl Project {
    /// Scans `dir` for `.py` files (recursively, skipping hidden folders and `__pycache__`) and
    /// reads them in parallel; nothing is parsed yet.
    ///
    /// Module names are dotted paths relative to the directory's parent, so scanning
    /// `.../sglang` names `sglang/srt/models/kimi_k25.py` `sglang.srt.models.kimi_k25`. The
    /// package name of the directory is its folder name, extended upwards through parents with an
    /// `__init__.py`, and further when the files' own absolute imports show a longer dotted name
    /// ending in it (scanning `.../sglang/srt/models`, whose files say
    /// `from sglang.srt.models.deepseek_v2 import ...`, gives `sglang.srt.models`). A directory
    /// with no `.py` file of its own is a source root: module names start below it.
    ///
    /// # Errors
    /// [`ErrorKind::Io`] when `dir` is not a readable directory. Unreadable files are not errors:
    /// they are listed by [`Project::problems`].
    pub fn scan(dir: &Path) -> Result<Project, Error> {
        Project::scan_with(dir, &ScanOptions::default())
    }

    /// [`Project::scan`] with options.
    ///
    /// # Errors
    /// [`ErrorKind::Io`] when `dir` is not a readable directory.
    pub fn scan_with(dir: &Path, options: &ScanOptions) -> Result<Project, Error> {
        let io = |source: std::io::Error| {
            ErrorKind::Io {
                action: "cannot read the directory".into(),
                source: source.into(),
            }
            .at(Location::new(dir.display().to_string(), 1, 1))
        };
        let meta = std::fs::metadata(dir).map_err(io)?;
        if !meta.is_dir() {
            return Err(io(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not a directory",
            )));
        }
        let mut paths = Vec::new();
        walk(dir, dir, &mut paths).map_err(io)?;
        paths.sort();
        let texts: Vec<Result<String, FileProblem>> =
            paths.par_iter().map(|(path, rel)| read_text(path, rel)).collect();
        let own_py = paths.iter().any(|(_, rel)| !rel.contains('/'));
        let package = match &options.package {
            Some(p) => p.clone(),
            None if own_py => infer_package(dir, &texts),
            None => String::new(),
        };
        let mut files = Vec::with_capacity(paths.len());
        let mut modules = HashMap::new();
        let mut namespaces = HashSet::new();
        for ((path, rel), text) in paths.into_iter().zip(texts) {
            let (module, is_package) = module_name(&package, &rel);
            let mut parent = module.as_str();
            while let Some((up, _)) = parent.rsplit_once('.') {
                namespaces.insert(up.to_string());
                parent = up;
            }
            if !module.is_empty() {
                namespaces.insert(module.split('.').next().unwrap_or_default().to_string());
            }
            // A package's __init__ wins over a same-named module file only by coming later.
            modules.insert(module.clone(), files.len());
            files.push(ProjectFile {
                path,
                rel,
                module,
                is_package,
                text,
                facts: OnceLock::new(),
            });
        }
        Ok(Project {
            root: dir.to_path_buf(),
            package,
            files,
            modules,
            namespaces,
        })
    }

    /// A project of in-memory files: `(relative path, text)` pairs under package `package`
    /// (empty for a source root). What selection on a single file uses.
    #[must_use]
    pub fn from_sources(package: &str, sources: Vec<(String, String)>) -> Project {
        let mut files = Vec::with_capacity(sources.len());
        let mut modules = HashMap::new();
        let mut namespaces = HashSet::new();
        for (rel, text) in sources {
            let (module, is_package) = module_name(package, &rel);
            let mut parent = module.as_str();
            while let Some((up, _)) = parent.rsplit_once('.') {
                namespaces.insert(up.to_string());
                parent = up;
            }
            modules.insert(module.clone(), files.len());
            files.push(ProjectFile {
                path: PathBuf::from(&rel),
                rel,
                module,
                is_package,
                text: Ok(text),
                facts: OnceLock::new(),
            });
        }
        Project {
            root: PathBuf::new(),
            package: package.to_string(),
            files,
            modules,
            namespaces,
        }
    }

    /// The scanned directory.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The dotted package name of the scanned directory (empty for a source root).
    #[must_use]
    pub fn package(&self) -> &str {
        &self.package
    }

    /// Every `.py` file, sorted by path.
    #[must_use]
    pub fn files(&self) -> &[ProjectFile] {
        &self.files
    }

    /// The file of module `name`.
    #[must_use]
    pub fn module(&self, name: &str) -> Option<&ProjectFile> {
        self.modules.get(name).map(|&i| &self.files[i])
    }

    /// The facts of the file at `index` in [`Project::files`], parsing it on first use.
    ///
    /// # Errors
    /// The [`FileProblem`] when the file cannot be read or parsed.
    ///
    /// # Panics
    /// When `index` is not below `files().len()`.
    pub fn facts(&self, index: usize) -> Result<&ModuleFacts, &FileProblem> {
        let file = &self.files[index];
        file.facts
            .get_or_init(|| {
                let text = file.text.as_ref().map_err(Clone::clone)?;
                let source = SourceFile::new(file.rel.clone(), text.as_str());
                let root = crate::parse::parse_module(&source).map_err(|err| FileProblem::new(&file.rel, &err))?;
                let ctx = ModuleContext {
                    module: &file.module,
                    is_package: file.is_package,
                };
                Ok(facts::extract(&source, &root, &ctx))
            })
            .as_ref()
    }

    /// Parses the files at `indices` in parallel (those not parsed yet).
    ///
    /// # Panics
    /// When an index is not below `files().len()`.
    pub fn load(&self, indices: &[usize]) {
        indices.par_iter().for_each(|&i| {
            let _ = self.facts(i);
        });
    }

    /// Files that could not be read or parsed, among those read or parsed so far.
    #[must_use]
    pub fn problems(&self) -> Vec<FileProblem> {
        self.files
            .iter()
            .filter_map(|f| match (&f.text, f.facts.get()) {
                (Err(p), _) | (Ok(_), Some(Err(p))) => Some(p.clone()),
                _ => None,
            })
            .collect()
    }

    /// How many files there are, were parsed and failed.
    #[must_use]
    pub fn stats(&self) -> LoadStats {
        LoadStats {
            files: self.files.len(),
            parsed: self.files.iter().filter(|f| f.facts.get().is_some()).count(),
            failed: self.problems().len(),
        }
    }

    /// The files a [`Scope`] selects, parsed (in parallel). For [`Scope::Related`] this runs the
    /// identifier closure; the returned names are the classes (and re-bound names) it found.
    #[must_use]
    pub fn select(&self, scope: &Scope) -> (Vec<usize>, Option<HashSet<String>>) {
        match scope {
            Scope::All => {
                let all: Vec<usize> = (0..self.files.len()).collect();
                self.load(&all);
                (all, None)
            }
            Scope::Classes => {
                let selected: Vec<usize> = (0..self.files.len())
                    .into_par_iter()
                    .filter(|&i| has_class_statement(self.files[i].text()))
                    .collect();
                self.load(&selected);
                (selected, None)
            }
            Scope::Related(names) => {
                let (files, names) = self.related(names);
                (files, Some(names))
            }
            Scope::Defining(names) => {
                let selected: Vec<usize> = (0..self.files.len())
                    .into_par_iter()
                    .filter(|&i| class_statement_names(self.files[i].text()).any(|c| names.contains(&c)))
                    .collect();
                self.load(&selected);
                (selected, None)
            }
        }
    }

    /// The identifier closure of [`Scope::Related`].
    fn related(&self, seeds: &[String]) -> (Vec<usize>, HashSet<String>) {
        let mut names: HashSet<String> = seeds.iter().cloned().collect();
        let mut pending: Vec<String> = seeds.to_vec();
        let mut parsed: Vec<usize> = Vec::new();
        let mut is_parsed = vec![false; self.files.len()];
        while !pending.is_empty() {
            let found: Vec<usize> = (0..self.files.len())
                .into_par_iter()
                .filter(|&i| !is_parsed[i] && pending.iter().any(|n| contains_word(self.files[i].text(), n)))
                .collect();
            self.load(&found);
            for &i in &found {
                is_parsed[i] = true;
            }
            parsed.extend(found);
            pending.clear();
            // Grow the name set from every parsed file until nothing new turns up there.
            loop {
                let mut added = Vec::new();
                for &i in &parsed {
                    let Ok(facts) = self.facts(i) else { continue };
                    for name in referring_names(facts, &names) {
                        if !names.contains(&name) && !added.contains(&name) {
                            added.push(name);
                        }
                    }
                }
                if added.is_empty() {
                    break;
                }
                names.extend(added.iter().cloned());
                pending.extend(added);
            }
        }
        parsed.sort_unstable();
        (parsed, names)
    }

    /// The class graph of the files a scope selects. Base classes are resolved wherever they
    /// are (parsing their modules on demand); with [`Scope::Related`], compositions are resolved
    /// only when the constructed name is one the closure found.
    #[must_use]
    pub fn graph(&self, scope: &Scope) -> ClassGraph<'_> {
        let (files, names) = self.select(scope);
        let policy = match (scope, names) {
            (Scope::Defining(_), _) => graph::Policy::SeedsOnly,
            (_, Some(names)) => graph::Policy::Named(names),
            (_, None) => graph::Policy::All,
        };
        ClassGraph::build(self, &files, policy)
    }

    /// Every class name defined in the project, by a cheap text scan of `class X` lines (no
    /// parsing): what "did you mean" suggestions draw from.
    #[must_use]
    pub fn class_names(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .files
            .par_iter()
            .flat_map_iter(|f| class_statement_names(f.text()))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Up to `limit` class names closest to `name` (the scorer of `crate::suggest`).
    #[must_use]
    pub fn closest_classes(&self, name: &str, limit: usize) -> Vec<String> {
        let wanted = name.rsplit('.').next().unwrap_or(name);
        crate::suggest::closest(wanted, self.class_names().iter().map(String::as_str), limit)
    }

    pub(crate) fn unknown_class(&self, name: &str) -> QueryError {
        QueryError::UnknownClass {
            root: self.root.display().to_string(),
            name: name.to_string(),
            candidates: self.closest_classes(name, 5),
        }
    }

    pub(crate) fn file(&self, index: usize) -> &ProjectFile {
        &self.files[index]
    }

    /// Resolves a dotted name as seen from file `file`, consulting method-local bindings first.
    pub(crate) fn resolve(&self, file: usize, locals: &[NameBinding], dotted: &str) -> Vec<Resolved> {
        let mut trail = Vec::new();
        let mut parts = dotted.split('.');
        let first = parts.next().unwrap_or_default();
        let module = self.files[file].module.clone();
        let local = facts::latest_bindings(locals, first);
        let mut current: Vec<Resolved> = if local.is_empty() {
            self.lookup(&module, first, &mut trail, true)
        } else {
            local
                .into_iter()
                .flat_map(|b| self.interpret(file, b, &mut trail))
                .collect()
        };
        for part in parts {
            current = current
                .into_iter()
                .flat_map(|r| self.attribute(r, part, &mut trail))
                .collect();
        }
        dedup(current)
    }

    /// What binding `b` of file `file` denotes.
    fn interpret(&self, file: usize, b: &Binding, trail: &mut Vec<(String, String)>) -> Vec<Resolved> {
        match b {
            Binding::Class(i) => vec![Resolved::Class(ClassKey { file, class: *i })],
            Binding::Module(m) => vec![self.module_ref(m)],
            Binding::From { module, name } => {
                if module.is_empty() {
                    return vec![Resolved::Unresolved(format!(
                        "`{name}` is imported relative to a package above the scanned top level"
                    ))];
                }
                self.lookup(module, name, trail, false)
            }
            Binding::Alias(d) => {
                let module = self.files[file].module.clone();
                let mut parts = d.split('.');
                let mut current = self.lookup(&module, parts.next().unwrap_or_default(), trail, true);
                for part in parts {
                    current = current
                        .into_iter()
                        .flat_map(|r| self.attribute(r, part, trail))
                        .collect();
                }
                current
            }
            Binding::Opaque => vec![Resolved::Unresolved("bound to a value that is not a class".into())],
        }
    }

    fn module_ref(&self, module: &str) -> Resolved {
        if self.modules.contains_key(module) || self.namespaces.contains(module) {
            Resolved::Module(module.to_string())
        } else {
            Resolved::External(module.to_string())
        }
    }

    fn attribute(&self, r: Resolved, part: &str, trail: &mut Vec<(String, String)>) -> Vec<Resolved> {
        match r {
            Resolved::Module(m) => self.lookup(&m, part, trail, false),
            Resolved::External(d) => vec![Resolved::External(format!("{d}.{part}"))],
            Resolved::Class(key) => {
                let Ok(facts) = self.facts(key.file) else {
                    return vec![Resolved::Unresolved("the module failed to parse".into())];
                };
                let inner = format!("{}.{part}", facts.classes[key.class].name);
                match facts.classes.iter().rposition(|c| c.name == inner) {
                    Some(i) => vec![Resolved::Class(ClassKey {
                        file: key.file,
                        class: i,
                    })],
                    None => vec![Resolved::Unresolved(format!(
                        "`{inner}` is not a class nested in `{}`",
                        facts.classes[key.class].name
                    ))],
                }
            }
            u @ Resolved::Unresolved(_) => vec![u],
        }
    }

    /// Looks `name` up in module `module`'s namespace (its bindings, then its star imports, then
    /// its submodules). `own` marks a lookup from inside the module (builtins apply).
    fn lookup(&self, module: &str, name: &str, trail: &mut Vec<(String, String)>, own: bool) -> Vec<Resolved> {
        let key = (module.to_string(), name.to_string());
        if trail.contains(&key) || trail.len() > 24 {
            let mut cycle: Vec<String> = trail.iter().map(|(m, n)| format!("{m}.{n}")).collect();
            cycle.push(format!("{module}.{name}"));
            return vec![Resolved::Unresolved(format!("import cycle: {}", cycle.join(" -> ")))];
        }
        let Some(&file) = self.modules.get(module) else {
            if self.namespaces.contains(module) {
                let sub = format!("{module}.{name}");
                return vec![if self.modules.contains_key(&sub) || self.namespaces.contains(&sub) {
                    Resolved::Module(sub)
                } else {
                    Resolved::Unresolved(format!("`{sub}` is not in the scanned directory"))
                }];
            }
            if self.is_inside_package(module) {
                return vec![Resolved::Unresolved(format!(
                    "module `{module}` is not in the scanned directory"
                ))];
            }
            return vec![Resolved::External(format!("{module}.{name}"))];
        };
        let Ok(facts) = self.facts(file) else {
            return vec![Resolved::Unresolved(format!("module `{module}` failed to parse"))];
        };
        trail.push(key);
        let bindings = facts.candidates(name);
        let mut out: Vec<Resolved> = bindings
            .into_iter()
            .flat_map(|b| self.interpret(file, b, trail))
            .collect();
        if out.is_empty() {
            let exported = |star_facts: Option<&ModuleFacts>| match star_facts.and_then(|f| f.all.as_ref()) {
                Some(all) => all.iter().any(|a| a == name),
                None => !name.starts_with('_'),
            };
            for star in facts.stars.iter().rev() {
                let star_file = self.modules.get(star.as_str()).copied();
                let star_facts = star_file.and_then(|f| self.facts(f).ok());
                if star_file.is_some() && !exported(star_facts) {
                    continue;
                }
                let found = self.lookup(star, name, trail, false);
                if found
                    .iter()
                    .any(|r| matches!(r, Resolved::Class(_) | Resolved::Module(_)))
                {
                    out = found;
                    break;
                }
                if star_file.is_none() && !self.is_inside_package(star) {
                    out = vec![Resolved::External(format!("{star}.{name}"))];
                }
            }
        }
        if out.is_empty() {
            let sub = format!("{module}.{name}");
            if self.modules.contains_key(&sub) {
                out.push(Resolved::Module(sub));
            } else if own && BUILTINS.contains(&name) {
                out.push(Resolved::External(format!("builtins.{name}")));
            } else {
                out.push(Resolved::Unresolved(format!(
                    "`{name}` is not defined or imported in `{module}`"
                )));
            }
        }
        trail.pop();
        out
    }

    fn is_inside_package(&self, module: &str) -> bool {
        !self.package.is_empty() && (module == self.package || module.starts_with(&format!("{}.", self.package)))
    }
}

fn dedup(items: Vec<Resolved>) -> Vec<Resolved> {
    let mut out: Vec<Resolved> = Vec::with_capacity(items.len());
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// Names the closure must follow from one parsed module: classes referring (by a base or a
/// composition) to a known name, and names re-bound to a known name (`from m import X as Y`,
/// `Y = X`).
fn referring_names(facts: &ModuleFacts, names: &HashSet<String>) -> Vec<String> {
    let last = |d: &str| d.rsplit('.').next().unwrap_or(d).to_string();
    let mut out = Vec::new();
    for class in &facts.classes {
        let refers = class.bases.iter().any(|b| names.contains(&last(&b.text)))
            || class
                .compositions
                .iter()
                .any(|c| c.names.iter().any(|n| names.contains(n)));
        if refers {
            out.push(class.simple_name().to_string());
        }
    }
    for b in &facts.bindings {
        let target = match &b.binding {
            Binding::From { name, .. } => Some(name.clone()),
            Binding::Alias(d) => Some(last(d)),
            _ => None,
        };
        // `EntryClass = X` lists entry points; nothing subclasses or constructs it.
        if b.name != "EntryClass" && target.is_some_and(|t| names.contains(&t)) {
            out.push(b.name.clone());
        }
    }
    out
}

/// Whether `name` occurs in `text` as a whole identifier.
pub(crate) fn contains_word(text: &str, name: &str) -> bool {
    if name.is_empty() || !text.contains(name) {
        return false;
    }
    let bytes = text.as_bytes();
    let is_ident = |b: u8| b == b'_' || b.is_ascii_alphanumeric() || b >= 0x80;
    text.match_indices(name).any(|(i, _)| {
        let before = i.checked_sub(1).map(|j| bytes[j]);
        let after = bytes.get(i + name.len()).copied();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// Whether some line starts (after indentation) with `class `, or the text mentions `EntryClass`.
fn has_class_statement(text: &str) -> bool {
    text.contains("EntryClass") || class_statement_names(text).next().is_some()
}

/// The names of `class X` lines (indentation allowed), by text alone.
fn class_statement_names(text: &str) -> impl Iterator<Item = String> + '_ {
    text.match_indices("class ").filter_map(move |(i, _)| {
        let line_start = text[..i].rfind(['\n', '\r']).map_or(0, |j| j + 1);
        if !text[line_start..i].bytes().all(|b| b == b' ' || b == b'\t') {
            return None;
        }
        let rest = &text[i + 6..];
        let rest = rest.trim_start_matches([' ', '\t']);
        let end = rest
            .find(|c: char| !(c == '_' || c.is_alphanumeric()))
            .unwrap_or(rest.len());
        (end > 0).then(|| rest[..end].to_string())
    })
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<(PathBuf, String)>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let Ok(entry) = entry else { continue };
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Ok(kind) = entry.file_type() else { continue };
        let path = entry.path();
        if kind.is_dir() {
            if name.starts_with('.') || name == "__pycache__" {
                continue;
            }
            // Unreadable sub-folders are skipped rather than failing the scan.
            let _ = walk(root, &path, out);
        } else if name.ends_with(".py") && (kind.is_file() || kind.is_symlink()) {
            let rel = path
                .strip_prefix(root)
                .map(|p| {
                    p.components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned())
                        .collect::<Vec<_>>()
                        .join("/")
                })
                .unwrap_or_else(|_| name.to_string());
            out.push((path, rel));
        }
    }
    Ok(())
}

fn read_text(path: &Path, rel: &str) -> Result<String, FileProblem> {
    // Regular files only, within the size limit: a FIFO or device named `x.py` is reported, not read.
    let bytes = crate::files::read_bytes(path).map_err(|e| FileProblem::new(rel, &e))?;
    SourceFile::from_bytes(rel, bytes)
        .map(|s| s.text().to_string())
        .map_err(|e| FileProblem::new(rel, &e))
}

/// `(module, is_package)` of a file at `rel` (relative, `/`-separated) under package `package`.
fn module_name(package: &str, rel: &str) -> (String, bool) {
    let stem = rel.strip_suffix(".py").unwrap_or(rel);
    let mut parts: Vec<&str> = if package.is_empty() { Vec::new() } else { vec![package] };
    parts.extend(stem.split('/'));
    let is_package = parts.last() == Some(&"__init__");
    if is_package {
        parts.pop();
    }
    (parts.join("."), is_package)
}

/// The package name of `dir` (see [`Project::scan`]).
fn infer_package(dir: &Path, texts: &[Result<String, FileProblem>]) -> String {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let name_of = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
    let Some(own) = name_of(&dir).filter(|n| is_identifier(n)) else {
        return String::new();
    };
    let mut parts = vec![own];
    let mut up = dir.parent();
    while let Some(p) = up {
        match name_of(p) {
            Some(n) if is_identifier(&n) && p.join("__init__.py").is_file() => parts.insert(0, n),
            _ => break,
        }
        up = p.parent();
    }
    let mut best = parts.join(".");
    // Longer names suggested by the files' own absolute imports.
    let mut candidate = parts.clone();
    for _ in 0..6 {
        let Some(p) = up else { break };
        let Some(n) = name_of(p).filter(|n| is_identifier(n)) else {
            break;
        };
        candidate.insert(0, n);
        let dotted = candidate.join(".");
        let needles = [
            format!("from {dotted}."),
            format!("import {dotted}."),
            format!("from {dotted} import"),
        ];
        if texts
            .iter()
            .flatten()
            .any(|t| needles.iter().any(|needle| t.contains(needle.as_str())))
        {
            best = dotted;
        }
        up = p.parent();
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_match_whole_identifiers_only() {
        assert!(contains_word("x = Foo()", "Foo"));
        assert!(!contains_word("x = FooBar()", "Foo"));
        assert!(!contains_word("x = _Foo()", "Foo"));
        assert!(contains_word("FooBar, Foo", "Foo"));
    }

    #[test]
    fn class_lines_are_found_by_text() {
        let names: Vec<String> = class_statement_names("class A:\n  class B(x):\n# class C\ns = 'class D'\n").collect();
        assert_eq!(names, ["A", "B"]);
        assert!(has_class_statement("EntryClass = X\n"));
        assert!(!has_class_statement("def classify(): pass\n"));
    }

    #[test]
    fn module_names_follow_the_package() {
        assert_eq!(module_name("pkg", "a/b.py"), ("pkg.a.b".into(), false));
        assert_eq!(module_name("pkg", "a/__init__.py"), ("pkg.a".into(), true));
        assert_eq!(module_name("pkg", "__init__.py"), ("pkg".into(), true));
        assert_eq!(module_name("", "x/y.py"), ("x.y".into(), false));
    }
}
