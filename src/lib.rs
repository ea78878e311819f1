//! pysplice: find Python classes, methods and statements by meaning, and splice code into them
//! from declarative hook specs: idempotently, reversibly, formatting-preserved, verified.
//!
//! The data flows one way: text is parsed once into a [`ParsedFile`] (outline and syntax tree);
//! a [`Recipe`] (TOML) is compiled into validated hooks; [`plan`] turns both into edits or the
//! reason there are none; [`apply`] applies and verifies them; [`revert`] gives back the original
//! bytes. [`Document`] does the same for editors, [`Project`] answers questions about a whole
//! package (inheritance, composition, which entry classes reach a method).
//!
//! ```
//! use pysplice::{apply, revert, Recipe, SourceFile};
//!
//! let recipe = Recipe::from_toml("r.toml", r#"
//! [recipe]
//! id = "trace"
//! summary = "Trace forward calls"
//! [[hook]]
//! id = "imports"
//! summary = "Added imports"
//! ensure-imports = ["logging"]
//! [[hook]]
//! id = "log"
//! summary = "Logged each call"
//! in = "Model.forward"
//! at = "start"
//! code = "logging.debug('forward %s', {param.1})"
//! "#)?;
//! let original = "class Model:\n    def forward(self, x):\n        return x\n";
//! let patched = apply(&recipe, SourceFile::new("m.py", original))?;
//! assert!(patched.output().contains("        logging.debug('forward %s', x)\n"));
//! let back = revert(&recipe, SourceFile::new("m.py", patched.output()))?;
//! assert_eq!(back.output(), original);
//! # Ok::<(), pysplice::Error>(())
//! ```
//!
//! Lines and columns are counted from 1 everywhere in the library, as CPython and the programs
//! count them: [`Location`], [`LineColumn`], [`LineIndex::line_of`], [`SourceFile::line_range`],
//! [`Definition::line`], [`marker::Frame::line`], [`Document::line_range`]. The one exception
//! is the editor protocol's own type: a [`Utf16Position`] (and so a [`Utf16Range`] or a
//! [`TextEdit`]) holds LSP's 0-based line and 0-based UTF-16 character, and converts only
//! through [`Document`].
//!
//! The modules, in the order the data flows through them (errors are everyone's):
//!
//! | module | job |
//! |---|---|
//! | [`error`] | typed errors with file, line, column and hook |
//! | [`source`] | a file's text, style (indent, newline, BOM), line index, UTF-8/UTF-16 positions |
//! | [`parse`] | the parser adapter, the only user of rustpython-parser |
//! | [`syntax`] | the crate's own small syntax tree, its kinds and typed views |
//! | [`outline`], [`locate`] | every class and def; finding them by path |
//! | `suggest` | "did you mean": the one scorer of names close to one not found |
//! | [`pattern`], [`template`] | statement patterns with metavariables; code templates |
//! | [`spec`], [`recipes`] | TOML hook specs; recipes by name (a caller's catalogue of bundled ones, or a path), and a workspace's recipes |
//! | [`project`] | many files: class graph, delegation chains, hook reach, targets by meaning ([`project::select`]) |
//! | [`edit`], [`marker`] | text edits; the marker comments that frame inserted code |
//! | [`engine`] | plan, apply, verify, revert |
//! | [`batch`] | one recipe over several files: all planned, then all written or none |
//! | [`outcome`] | the one rule for hook statuses and "up to date" |
//! | [`report`], [`files`] | text, diff and JSON reports; safe file reads and writes |
//! | [`document`] | an editor-facing document with LSP positions |
#![deny(missing_docs)]

pub mod batch;
mod diff;
pub mod document;
pub mod edit;
pub mod engine;
pub mod error;
pub mod files;
pub mod locate;
pub mod marker;
pub mod outcome;
pub mod outline;
pub mod parse;
pub mod pattern;
mod place;
pub mod project;
pub mod recipes;
pub mod report;
pub mod source;
pub mod spec;
mod suggest;
mod suite;
pub mod syntax;
pub mod template;
mod verify;

pub use document::{Document, DocumentPlan, KeptPlan, TextEdit, Utf16Position, Utf16Range};
pub use engine::{apply, apply_plan, plan, revert, HookOutcome, Patched, Plan, Prepared, Reason, Status};
pub use error::{Error, ErrorKind, Location};
pub use files::DiskFile;
pub use locate::Target;
pub use outline::{DefKind, Definition, ParsedFile};
pub use pattern::{Depth, Pattern};
pub use project::{ClassGraph, Project};
pub use source::{LineColumn, LineIndex, Newline, SourceFile, Style};
pub use spec::{Action, Anchor, ClassSelector, Hook, ImportLine, Nth, Recipe, Selector};
pub use syntax::Node;
pub use template::Template;

/// Not public API: how the library shows a name from its input in a message (escaped, at most
/// 80 characters), for the programs' messages to show names the same way.
#[doc(hidden)]
pub use suggest::shown;
