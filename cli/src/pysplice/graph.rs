//! `graph`, `reach` and `forwards`: class-graph queries over a package directory.
//!
//! Exit codes: 0 success, 1 class / method / chain not found (with close candidates),
//! 2 bad usage or an unreadable directory. With `--json`, one object of `pysplice_programs::contract` per
//! query, on one line, also on failure. Which classes are entries and which are draft models is
//! no convention of the program's own: it comes from a recipe's `[conventions]` (`--spec`) or from
//! `--entry-list` / `--draft-marker`; with neither, no class is an entry and none a draft.

use std::path::{Path, PathBuf};

use pysplice::project::{Project, QueryError, ScanOptions, Scope};
use pysplice::report::counted;
use pysplice::Conventions;
use pysplice_programs::contract::{Body, ErrorInfo, Forwards, Graph, Output, ReachBody};

/// Where the class-graph commands take their conventions from: a recipe, then the flags on top.
#[derive(clap::Args, Debug, Default)]
pub struct ConventionArgs {
    /// Take the entry-class list and the draft markers from this recipe's `[conventions]`: a TOML
    /// hook spec, or `builtin:NAME` (`builtin:sglang-hs-dump-models` for SGLang's models folder).
    #[arg(long, value_name = "RECIPE")]
    pub spec: Option<PathBuf>,
    /// The module-level variable that lists a file's entry classes (`EntryClass` in SGLang);
    /// replaces the recipe's.
    #[arg(long, value_name = "NAME")]
    pub entry_list: Option<String>,
    /// A name part that marks a class as a draft model when its name or file contains it
    /// (case-insensitive; repeatable); replaces the recipe's.
    #[arg(long = "draft-marker", value_name = "WORD")]
    pub draft_markers: Vec<String>,
}

impl ConventionArgs {
    /// The conventions asked for; on a recipe that cannot be read, its error printed and code 2.
    fn conventions(&self) -> Result<Conventions, u8> {
        let mut conventions = match &self.spec {
            Some(path) => crate::splice::load_recipe(path)?.conventions,
            None => Conventions::default(),
        };
        if let Some(name) = &self.entry_list {
            let first = name.chars().next();
            let word = |c: char| c == '_' || c.is_alphanumeric();
            if !first.is_some_and(|c| word(c) && !c.is_ascii_digit()) || !name.chars().all(word) {
                errln!(
                    "error: --entry-list `{}` is not a Python name",
                    pysplice::report::printable(name)
                );
                return Err(2);
            }
            conventions = conventions.with_entry_list(name.clone());
        }
        if !self.draft_markers.is_empty() {
            conventions = conventions.with_draft_markers(self.draft_markers.iter().cloned());
        }
        Ok(conventions)
    }
}

/// Arguments of `graph`.
#[derive(clap::Args)]
pub struct GraphArgs {
    /// The package directory.
    pub dir: PathBuf,
    #[command(flatten)]
    pub conventions: ConventionArgs,
    /// Start from this entry class.
    #[arg(long)]
    pub entry: Option<String>,
    /// Show chains that end at this class.
    #[arg(long)]
    pub target: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `reach`.
#[derive(clap::Args)]
pub struct ReachArgs {
    /// The package directory.
    pub dir: PathBuf,
    /// A method path such as `DeepseekV2Model.forward`.
    pub path: String,
    #[command(flatten)]
    pub conventions: ConventionArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `forwards`.
#[derive(clap::Args)]
pub struct ForwardsArgs {
    /// The package directory.
    pub dir: PathBuf,
    /// The wrapper class.
    pub wrapper: String,
    #[command(flatten)]
    pub conventions: ConventionArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// How many chains `graph --target` prints at most.
const CHAIN_LIMIT: usize = 20;
/// How deep the `graph` tree goes.
const TREE_DEPTH: usize = 8;

use pysplice_programs::output::emit;

/// Prints human-readable text: file names and code quoted from the scanned files with their
/// control characters escaped (JSON output escapes its own).
fn text(text: &str) {
    emit(&pysplice::report::printable_lines(text));
}

/// Scans `dir` with `conventions`; on failure reports the error (as JSON with `--json`) and gives
/// exit code 2.
fn scan(dir: &Path, conventions: &ConventionArgs, json: bool, empty: fn() -> Body) -> Result<Project, u8> {
    let options = ScanOptions::default().with_conventions(conventions.conventions()?);
    Project::scan_with(dir, &options).map_err(|err| {
        if json {
            let output = Output::failed(dir.display().to_string(), empty(), ErrorInfo::from(&err));
            emit(&format!("{}\n", output.to_line()));
        } else {
            errln!("error: {err}");
        }
        2
    })
}

/// Reports a query error (as JSON with `--json`) and gives its exit code.
fn query_failed(dir: &std::path::Path, err: &QueryError, json: bool, body: Body) -> u8 {
    if json {
        let output = Output::failed(dir.display().to_string(), body, ErrorInfo::message(err.to_string()));
        emit(&format!("{}\n", output.to_line()));
    } else {
        errln!("error: {err}");
    }
    match err {
        QueryError::BadPath { .. } => 2,
        _ => 1,
    }
}

fn warn_problems(project: &Project) {
    let problems = project.problems();
    if problems.is_empty() {
        return;
    }
    errln!(
        "warning: {} could not be parsed:",
        counted(problems.len(), "file", "files")
    );
    for p in problems.iter().take(5) {
        errln!(
            "  {}:{}:{}: {}",
            p.location.file,
            p.location.line,
            p.location.column,
            p.message
        );
    }
    if problems.len() > 5 {
        errln!("  ... and {} more", problems.len() - 5);
    }
}

/// Prints one successful object about `dir`.
fn print_json(dir: &std::path::Path, body: Body) -> u8 {
    emit(&format!("{}\n", Output::new(dir.display().to_string(), body).to_line()));
    0
}

fn empty_graph() -> Body {
    Body::Graph(Graph {
        package: String::new(),
        classes: Vec::new(),
        chains: Vec::new(),
        diagnostics: Vec::new(),
    })
}

/// Runs `graph`.
pub fn graph(args: &GraphArgs) -> u8 {
    let project = match scan(&args.dir, &args.conventions, args.json, empty_graph) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let package = project.package().to_string();
    let body = |classes, chains, diagnostics| {
        Body::Graph(Graph {
            package: package.clone(),
            classes,
            chains,
            diagnostics,
        })
    };
    let code = match (&args.entry, &args.target) {
        (entry, Some(target)) => match project.chains(entry.as_deref(), target, CHAIN_LIMIT) {
            Ok(chains) if args.json => print_json(&args.dir, body(Vec::new(), chains, Vec::new())),
            Ok(chains) => {
                for chain in &chains {
                    text(&format!("{chain}\n{}", chain.evidence(3)));
                }
                0
            }
            Err(err) => query_failed(&args.dir, &err, args.json, body(Vec::new(), Vec::new(), Vec::new())),
        },
        (Some(entry), None) => {
            let graph = project.graph(&Scope::Classes);
            let found = graph.find(entry);
            if found.is_empty() {
                let err = QueryError::UnknownClass {
                    root: args.dir.display().to_string(),
                    name: entry.clone(),
                    candidates: project.closest_classes(entry, 5),
                };
                return query_failed(&args.dir, &err, args.json, body(Vec::new(), Vec::new(), Vec::new()));
            }
            if args.json {
                print_json(&args.dir, Body::Graph(Graph::subgraph(&package, &graph, Some(&found))))
            } else {
                for id in found {
                    text(&graph.tree(id, TREE_DEPTH));
                }
                0
            }
        }
        (None, None) => {
            let graph = project.graph(&Scope::Classes);
            let entries: Vec<_> = graph.entries().into_iter().map(|(id, _, _)| id).collect();
            if args.json {
                print_json(&args.dir, Body::Graph(Graph::subgraph(&package, &graph, None)))
            } else {
                for id in &entries {
                    text(&graph.tree(*id, TREE_DEPTH));
                }
                let unresolved = graph
                    .diagnostics()
                    .iter()
                    .filter(|d| matches!(d, pysplice::project::Diagnostic::UnresolvedBase { .. }))
                    .count();
                emit(&format!(
                    "{}, {}, {}\n",
                    counted(graph.classes().len(), "class", "classes"),
                    counted(entries.len(), "entry class", "entry classes"),
                    counted(unresolved, "unresolved base", "unresolved bases")
                ));
                0
            }
        }
    };
    warn_problems(&project);
    code
}

/// Runs `reach`.
pub fn reach(args: &ReachArgs) -> u8 {
    let empty = || Body::Reach(ReachBody { reach: None });
    let project = match scan(&args.dir, &args.conventions, args.json, empty) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let code = match project.reach(&args.path) {
        Ok(reach) if args.json => print_json(&args.dir, Body::Reach(ReachBody { reach: Some(reach) })),
        Ok(reach) => {
            text(&reach.to_string());
            0
        }
        Err(err) => query_failed(&args.dir, &err, args.json, empty()),
    };
    warn_problems(&project);
    code
}

/// Runs `forwards`.
pub fn forwards(args: &ForwardsArgs) -> u8 {
    let wrapper = args.wrapper.clone();
    let body = move |forwards| {
        Body::Forwards(Forwards {
            wrapper: wrapper.clone(),
            forwards,
        })
    };
    let options = match args.conventions.conventions() {
        Ok(conventions) => ScanOptions::default().with_conventions(conventions),
        Err(code) => return code,
    };
    let project = match Project::scan_with(&args.dir, &options) {
        Ok(p) => p,
        Err(err) => {
            if args.json {
                let output = Output::failed(args.dir.display().to_string(), body(Vec::new()), ErrorInfo::from(&err));
                emit(&format!("{}\n", output.to_line()));
            } else {
                errln!("error: {err}");
            }
            return 2;
        }
    };
    let code = match project.forwards(&args.wrapper) {
        Ok(list) if args.json => print_json(&args.dir, body(list)),
        Ok(list) => {
            if list.is_empty() {
                text(&format!("{} holds no class of the scanned directory\n", args.wrapper));
            }
            for f in &list {
                text(&f.to_string());
            }
            0
        }
        Err(err) => query_failed(&args.dir, &err, args.json, body(Vec::new())),
    };
    warn_problems(&project);
    code
}
