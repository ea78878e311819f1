//! `graph`, `reach` and `forwards`: class-graph queries over a package directory.
//!
//! Exit codes: 0 success, 1 class / method / chain not found (with close candidates),
//! 2 bad usage or an unreadable directory.

use std::path::PathBuf;

use pysplice::project::{ClassGraph, Project, QueryError, Scope};

/// Arguments of `graph`.
#[derive(clap::Args)]
pub struct GraphArgs {
    /// The package directory.
    pub dir: PathBuf,
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
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// How many chains `graph --target` prints at most.
const CHAIN_LIMIT: usize = 20;
/// How deep the `graph` tree goes.
const TREE_DEPTH: usize = 8;

use crate::output::emit;

fn scan(dir: &std::path::Path) -> Result<Project, u8> {
    Project::scan(dir).map_err(|err| {
        errln!("error: {err}");
        2
    })
}

fn query_failed(err: &QueryError) -> u8 {
    errln!("error: {err}");
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
    errln!("warning: {} file(s) could not be parsed:", problems.len());
    for p in problems.iter().take(5) {
        errln!("  {}:{}:{}: {}", p.file, p.line, p.column, p.message);
    }
    if problems.len() > 5 {
        errln!("  ... and {} more", problems.len() - 5);
    }
}

fn print_json(value: &impl serde::Serialize) -> u8 {
    match serde_json::to_string_pretty(value) {
        Ok(text) => {
            emit(&format!("{text}\n"));
            0
        }
        Err(err) => {
            errln!("error: cannot write JSON: {err}");
            2
        }
    }
}

/// Runs `graph`.
pub fn graph(args: &GraphArgs) -> u8 {
    let project = match scan(&args.dir) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let code = match (&args.entry, &args.target) {
        (entry, Some(target)) => match project.chains(entry.as_deref(), target, CHAIN_LIMIT) {
            Ok(chains) if args.json => print_json(&chains),
            Ok(chains) => {
                for chain in &chains {
                    emit(&format!("{chain}\n{}", chain.evidence(3)));
                }
                0
            }
            Err(err) => query_failed(&err),
        },
        (Some(entry), None) => {
            let graph = project.graph(&Scope::Classes);
            let found = graph.find(entry);
            if found.is_empty() {
                return query_failed(&QueryError::UnknownClass {
                    root: args.dir.display().to_string(),
                    name: entry.clone(),
                    candidates: project.closest_classes(entry, 5),
                });
            }
            if args.json {
                print_json(&subgraph(&graph, &found))
            } else {
                for id in found {
                    emit(&graph.tree(id, TREE_DEPTH));
                }
                0
            }
        }
        (None, None) => {
            let graph = project.graph(&Scope::Classes);
            let entries: Vec<usize> = graph.entries().into_iter().map(|(id, _, _)| id).collect();
            if args.json {
                print_json(&serde_json::json!({
                    "package": project.package(),
                    "entries": subgraph(&graph, &entries),
                    "diagnostics": graph.diagnostics(),
                }))
            } else {
                for id in &entries {
                    emit(&graph.tree(*id, TREE_DEPTH));
                }
                let unresolved = graph
                    .diagnostics()
                    .iter()
                    .filter(|d| matches!(d, pysplice::project::Diagnostic::UnresolvedBase { .. }))
                    .count();
                emit(&format!(
                    "{} classes, {} entry classes, {} unresolved bases\n",
                    graph.classes().len(),
                    entries.len(),
                    unresolved
                ));
                0
            }
        }
    };
    warn_problems(&project);
    code
}

/// The classes reachable from `starts` through compositions and bases, as JSON.
fn subgraph(graph: &ClassGraph<'_>, starts: &[usize]) -> serde_json::Value {
    let mut order: Vec<usize> = starts.to_vec();
    let mut i = 0;
    while i < order.len() {
        let id = order[i];
        let mut next: Vec<usize> = graph.mro(id).to_vec();
        next.extend(graph.compositions_of(id).iter().map(|(_, e)| e.target));
        for n in next {
            if !order.contains(&n) {
                order.push(n);
            }
        }
        i += 1;
    }
    let nodes: Vec<serde_json::Value> = order
        .iter()
        .map(|&id| {
            let c = graph.class(id);
            let comps: Vec<serde_json::Value> = graph
                .compositions_of(id)
                .iter()
                .map(|(via, e)| {
                    serde_json::json!({
                        "attr": e.attr,
                        "class": graph.class(e.target).name,
                        "module": graph.class(e.target).module,
                        "file": graph.class(*via).file,
                        "line": e.line,
                        "method": e.method,
                        "conditional": e.conditional,
                        "optional": e.optional,
                    })
                })
                .collect();
            let bases: Vec<serde_json::Value> = c
                .bases
                .iter()
                .map(|b| {
                    let targets: Vec<serde_json::Value> = b
                        .targets
                        .iter()
                        .map(|t| match t {
                            pysplice::project::BaseTarget::Class(id) => {
                                serde_json::json!({"class": graph.class(*id).name, "module": graph.class(*id).module})
                            }
                            pysplice::project::BaseTarget::External(e) => serde_json::json!({"external": e}),
                            pysplice::project::BaseTarget::Unresolved(r) => serde_json::json!({"unresolved": r}),
                        })
                        .collect();
                    serde_json::json!({"text": b.text, "line": b.line, "targets": targets})
                })
                .collect();
            serde_json::json!({
                "class": c.name,
                "module": c.module,
                "file": c.file,
                "line": c.line,
                "entry": graph.is_entry(id),
                "draft": c.draft,
                "bases": bases,
                "compositions": comps,
            })
        })
        .collect();
    serde_json::Value::Array(nodes)
}

/// Runs `reach`.
pub fn reach(args: &ReachArgs) -> u8 {
    let project = match scan(&args.dir) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let code = match project.reach(&args.path) {
        Ok(reach) if args.json => print_json(&reach),
        Ok(reach) => {
            emit(&reach.to_string());
            0
        }
        Err(err) => query_failed(&err),
    };
    warn_problems(&project);
    code
}

/// Runs `forwards`.
pub fn forwards(args: &ForwardsArgs) -> u8 {
    let project = match scan(&args.dir) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let code = match project.forwards(&args.wrapper) {
        Ok(list) if args.json => print_json(&list),
        Ok(list) => {
            if list.is_empty() {
                emit(&format!("{} holds no class of the scanned directory\n", args.wrapper));
            }
            for f in &list {
                emit(&f.to_string());
            }
            0
        }
        Err(err) => query_failed(&err),
    };
    warn_problems(&project);
    code
}
