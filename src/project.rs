//! Many files at once: a package directory scanned in parallel, each module's facts (import
//! table, classes, entry list), class names resolved across modules, and the class graph with
//! its delegation queries (chains, hook reach, missing forwards).
//!
//! The files, in data-flow order:
//!
//! | file | job |
//! |---|---|
//! | `scan.rs` | [`Project::scan`]: read a folder's `.py` files (nothing parsed), module names, the package name; [`Project::scan_tree`] (in `batch/package.rs`, beside the walk): the same through the handles of a folder walk |
//! | `scope.rs` | the text prefilter of a [`Scope`]: which files a query parses; `scope/words.rs` searches a file for all the pending names of a round in one pass |
//! | `facts.rs` | the facts kept per module ([`ModuleFacts`], [`ClassFacts`], ...); `facts/module_walk.rs` reads a module's top level (imports, bindings, entry list), `facts/class_walk.rs` a class body (methods, attributes, compositions, uses) |
//! | `resolve.rs` | what a dotted name in a module denotes, across imports and re-bindings |
//! | `graph.rs` | [`ClassGraph`]: classes of a scope, resolved bases, compositions, entries; `graph/mro.rs` the MRO and which class's code a call runs |
//! | `query.rs` | answers with evidence ([`Chain`], [`Reach`], [`Forwarding`]) and the [`Project`] queries by name; `query/chains.rs` chains and reach, `query/forwards.rs` members, forwarders and the composition tree |
//! | `select.rs` | [`select`]: recipe hook targets chosen by meaning; `select/held.rs` derived selectors, `select/eval.rs` which classes an expression stands for |
//!
//! Scanning reads every `.py` file but parses none. Files are parsed on demand, at most once,
//! and only the facts are kept (the syntax tree is dropped). Which files a query parses is
//! decided by a cheap text prefilter ([`Scope`]):
//! - [`Scope::Classes`]: files with a `class` statement or mentioning the entry list (the whole
//!   graph);
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
//! use pysplice::project::{Project, ScanOptions};
//! use pysplice::Conventions;
//! let entries = Conventions::default().with_entry_list("EntryClass");
//! let project = Project::scan_with(&dir.join("pkg"), &ScanOptions::default().with_conventions(entries))?;
//! let reach = project.reach("Inner.forward")?;
//! assert_eq!(reach.entries[0].chain.to_string(), "Outer -inner-> Inner");
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok(())
//! # }
//! ```

mod facts;
mod graph;
mod query;
mod resolve;
pub(crate) mod scan;
mod scope;
pub mod select;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rayon::prelude::*;

use crate::error::Error;
use crate::location::Location;
use crate::source::SourceFile;

use crate::spec::Conventions;
pub use facts::{
    AttributeFacts, AttributeKind, BaseFacts, ClassFacts, CompositionFacts, Import, MethodFacts, MethodKind,
    ModuleFacts, UseFacts, UseKind,
};
pub use graph::{
    BaseLink, BaseTarget, ClassGraph, ClassId, ClassNode, CompositionEdge, Diagnostic, RunPath, MAX_MRO_LEN,
};
pub use query::{Chain, Evidence, ForwardNeed, Forwarding, Member, Reach, ReachEntry, RunVia, Runner, Step};

use facts::ModuleContext;
use scope::class_statement_names;

/// A file that could not be read or parsed: reported, never fatal.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
pub struct FileProblem {
    /// Where: the file, relative to the scanned directory, and the 1-based line and column
    /// (1 when unknown).
    #[cfg_attr(feature = "serde", serde(flatten))]
    pub location: Location,
    /// What went wrong: the error's message without its place (which `location` holds).
    pub message: String,
}

impl FileProblem {
    /// The problem `err` found in `file`: its line, column and message, one way for every
    /// error.
    pub(crate) fn new(file: &str, err: &Error) -> FileProblem {
        FileProblem {
            location: Location::new(file, err.location().line, err.location().column),
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
    /// Why the file could not be read, typed and named by its path.
    read_error: Option<Error>,
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

    /// The dotted module name (`app.models.llama`; a package's `__init__.py` is named
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

    /// Why the file could not be read (cannot be opened, not a regular file, too large, not
    /// UTF-8, a name that is not UTF-8), when it could not: the reader's error, named by the
    /// file's path.
    #[must_use]
    pub fn read_error(&self) -> Option<&Error> {
        self.read_error.as_ref()
    }

    /// The text read, when the file could be read.
    #[must_use]
    pub fn text_read(&self) -> Option<&str> {
        self.text.as_deref().ok()
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
    /// The code base's conventions (entry list, draft markers); none by default.
    pub conventions: Conventions,
}

impl ScanOptions {
    /// Options that name the scanned directory's package explicitly.
    #[must_use]
    pub fn with_package(package: impl Into<String>) -> ScanOptions {
        ScanOptions {
            package: Some(package.into()),
            ..ScanOptions::default()
        }
    }

    /// These options with the code base's `conventions`.
    #[must_use]
    pub fn with_conventions(mut self, conventions: Conventions) -> ScanOptions {
        self.conventions = conventions;
        self
    }
}

/// Which files a graph is built from (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every file.
    All,
    /// Files whose text has a line starting with `class ` (after indentation) or mentions the
    /// entry list variable ([`Conventions::entry_list`]).
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
    conventions: Conventions,
    /// Sub-folders that could not be listed, as errors naming them.
    unlisted: Vec<(FileProblem, Error)>,
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

impl Project {
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

    /// The conventions the project was scanned with.
    #[must_use]
    pub fn conventions(&self) -> &Conventions {
        &self.conventions
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
                let root =
                    crate::parse::parse_module(&source).map_err(|err| FileProblem::new(&file.rel, &err.into()))?;
                let ctx = ModuleContext {
                    module: &file.module,
                    is_package: file.is_package,
                    entry_list: self.conventions.entry_list.as_deref(),
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

    /// Files that could not be read or parsed, among those read or parsed so far, and
    /// sub-folders that could not be listed.
    #[must_use]
    pub fn problems(&self) -> Vec<FileProblem> {
        self.files
            .iter()
            .filter_map(|f| match (&f.text, f.facts.get()) {
                (Err(p), _) | (Ok(_), Some(Err(p))) => Some(p.clone()),
                _ => None,
            })
            .chain(self.unlisted.iter().map(|(p, _)| p.clone()))
            .collect()
    }

    /// Everything under the folder that could not be read: files (as
    /// [`ProjectFile::read_error`] says) and sub-folders that could not be listed. A caller that
    /// must see every file (to find every class, or every file carrying markers) refuses to go
    /// on when this is not empty, since what cannot be read may hold anything.
    #[must_use]
    pub fn unreadable(&self) -> Vec<&Error> {
        self.files
            .iter()
            .filter_map(ProjectFile::read_error)
            .chain(self.unlisted.iter().map(|(_, e)| e))
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
}
