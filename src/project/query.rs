//! Queries over the class graph, each answer carrying file:line evidence for every edge:
//! delegation chains, what a hook in a method reaches, and which public methods of a delegate
//! a wrapper does not expose.

use std::fmt;

use super::facts::{AttributeKind, MethodKind, UseKind};
use super::graph::{ClassGraph, ClassId, RunPath};
use super::{Project, QueryError, Scope};
use crate::locate::DottedPath;
use crate::printable::counted;
use crate::syntax::is_identifier;

mod chains;
mod forwards;

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
        uses: Vec<Evidence>,
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
    /// The entry class or a class on its chain is a draft class (a draft marker of the conventions in its name or file).
    pub draft: bool,
    /// The entry-list line naming it (e.g. `EntryClass = ...`).
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
        writeln!(f, "runs in {}:", counted(self.runners.len(), "class", "classes"))?;
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
        writeln!(
            f,
            "reached from {}:",
            counted(self.entries.len(), "entry class", "entry classes")
        )?;
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
        writeln!(
            f,
            "  missing {}:",
            counted(self.missing.len(), "public method", "public methods")
        )?;
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
        let bad = |reason: &str| QueryError::BadPath {
            path: path.to_string(),
            reason: reason.into(),
        };
        let text = path.trim();
        let Some((class, method)) = text.rsplit_once('.') else {
            return Err(bad("write `Class.method`, such as `DeepseekV2Model.forward`"));
        };
        // The class may be module-qualified; no ordinal, each part a Python name.
        match DottedPath::parse(text, is_identifier) {
            Ok(dotted) if dotted.ordinal.is_none() => {}
            _ => return Err(bad("each part must be a Python name")),
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
