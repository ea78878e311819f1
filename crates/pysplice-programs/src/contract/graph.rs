//! The `graph` output: classes reachable from entry classes, or chains to a target class.

use schemars::JsonSchema;
use serde::Serialize;

use pysplice::project::{BaseTarget, Chain, ClassGraph, ClassId, Diagnostic};

/// `graph`: classes from entry classes, or chains to a target class.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Graph {
    /// The package scanned (empty on failure).
    pub package: String,
    /// Without `--target`: the classes reachable from the entry classes (or `--entry`).
    pub classes: Vec<GraphClass>,
    /// With `--target`: the chains found.
    pub chains: Vec<Chain>,
    /// Unresolved bases, duplicate classes, unparsed files.
    pub diagnostics: Vec<Diagnostic>,
}

impl Graph {
    /// The subgraph of `graph` reachable from `starts` (see [`GraphClass::reachable`]), in the
    /// package `package`; without `starts`, from every entry class, with the graph's diagnostics.
    ///
    /// ```
    /// use pysplice_programs::contract::Graph;
    /// use pysplice::project::Scope;
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// std::fs::write(dir.path().join("m.py"), "class A:\n    pass\n\nclass B(A):\n    pass\n\nEntryClass = B\n").unwrap();
    /// let conventions = pysplice::Conventions::default().with_entry_list("EntryClass");
    /// let options = pysplice::project::ScanOptions::default().with_conventions(conventions);
    /// let project = pysplice::project::Project::scan_with(dir.path(), &options)?;
    /// let graph = project.graph(&Scope::Classes);
    /// let whole = Graph::subgraph(project.package(), &graph, None);
    /// let names: Vec<&str> = whole.classes.iter().map(|c| c.class.as_str()).collect();
    /// assert_eq!(names, ["B", "A"]);
    /// let from_a = Graph::subgraph(project.package(), &graph, Some(&graph.find("A")));
    /// assert_eq!(from_a.classes.len(), 1);
    /// # Ok::<(), pysplice::Error>(())
    /// ```
    #[must_use]
    pub fn subgraph(package: &str, graph: &ClassGraph<'_>, starts: Option<&[ClassId]>) -> Graph {
        let (classes, diagnostics) = match starts {
            Some(starts) => (GraphClass::reachable(graph, starts), Vec::new()),
            None => {
                let entries: Vec<ClassId> = graph.entries().into_iter().map(|(id, _, _)| id).collect();
                (GraphClass::reachable(graph, &entries), graph.diagnostics().to_vec())
            }
        };
        Graph {
            package: package.to_string(),
            classes,
            chains: Vec::new(),
            diagnostics,
        }
    }
}

/// A class of `graph` output.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct GraphClass {
    /// Its qualified name in the module.
    pub class: String,
    /// Its module (dotted).
    pub module: String,
    /// Its file, relative to the scanned directory.
    pub file: String,
    /// 1-based line of `class`.
    pub line: usize,
    /// Whether it is an entry class.
    pub entry: bool,
    /// Whether it is a draft class (a draft marker of the conventions in its name or file).
    pub draft: bool,
    /// Its bases, in order.
    pub bases: Vec<GraphBase>,
    /// Classes it constructs into attributes.
    pub compositions: Vec<GraphComposition>,
}

/// A base of a [`GraphClass`].
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct GraphBase {
    /// As written.
    pub text: String,
    /// 1-based line.
    pub line: usize,
    /// What it resolved to.
    pub targets: Vec<GraphBaseTarget>,
}

/// What a base resolved to.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum GraphBaseTarget {
    /// A class of the project.
    Class {
        /// The class name.
        class: String,
        /// The dotted module defining the class.
        module: String,
    },
    /// A name from outside the directory.
    External {
        /// The dotted name.
        name: String,
    },
    /// Not found.
    Unresolved {
        /// Why the base could not be found.
        reason: String,
    },
}

/// `self.attr = Class(...)` of a [`GraphClass`].
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct GraphComposition {
    /// The attribute assigned, `x` in `self.x = Class(...)`.
    pub attr: String,
    /// The class constructed.
    pub class: String,
    /// The dotted module defining the constructed class.
    pub module: String,
    /// The file of the assignment.
    pub file: String,
    /// 1-based line of the assignment.
    pub line: usize,
    /// The method assigning it.
    pub method: String,
    /// In a branch, loop, `try` or `with`.
    pub conditional: bool,
    /// Also set to `None` somewhere.
    pub optional: bool,
}

impl GraphClass {
    /// The classes reachable from `starts` through bases and compositions, breadth first.
    #[must_use]
    pub fn reachable(graph: &ClassGraph<'_>, starts: &[ClassId]) -> Vec<GraphClass> {
        let mut order: Vec<ClassId> = starts.to_vec();
        let mut i = 0;
        while i < order.len() {
            let id = order[i];
            let mut next: Vec<ClassId> = graph.mro(id).to_vec();
            next.extend(graph.compositions_of(id).iter().map(|(_, e)| e.target));
            for n in next {
                if !order.contains(&n) {
                    order.push(n);
                }
            }
            i += 1;
        }
        order.iter().map(|&id| GraphClass::new(graph, id)).collect()
    }

    fn new(graph: &ClassGraph<'_>, id: ClassId) -> GraphClass {
        let c = graph.class(id);
        GraphClass {
            class: c.name.clone(),
            module: c.module.clone(),
            file: c.file.clone(),
            line: c.line,
            entry: graph.is_entry(id),
            draft: c.draft,
            bases: c
                .bases
                .iter()
                .map(|b| GraphBase {
                    text: b.text.clone(),
                    line: b.line,
                    targets: b
                        .targets
                        .iter()
                        .map(|t| match t {
                            BaseTarget::Class(id) => GraphBaseTarget::Class {
                                class: graph.class(*id).name.clone(),
                                module: graph.class(*id).module.clone(),
                            },
                            BaseTarget::External(name) => GraphBaseTarget::External { name: name.clone() },
                            BaseTarget::Unresolved(reason) => GraphBaseTarget::Unresolved { reason: reason.clone() },
                        })
                        .collect(),
                })
                .collect(),
            compositions: graph
                .compositions_of(id)
                .iter()
                .map(|(via, e)| GraphComposition {
                    attr: e.attr.clone(),
                    class: graph.class(e.target).name.clone(),
                    module: graph.class(e.target).module.clone(),
                    file: graph.class(*via).file.clone(),
                    line: e.line,
                    method: e.method.clone(),
                    conditional: e.conditional,
                    optional: e.optional,
                })
                .collect(),
        }
    }
}
