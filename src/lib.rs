//! pysplice: find Python classes, methods and statements by meaning, and splice code into them.
#![deny(missing_docs)]

pub mod document;
pub mod edit;
pub mod engine;
pub mod error;
pub mod files;
pub mod parse;
pub mod source;
pub mod syntax;

pub use document::{Document, DocumentPlan, TextEdit, Utf16Position, Utf16Range};
pub use error::{Error, Location};
pub use source::{LineColumn, LineIndex, Newline, SourceFile, Style};
pub use syntax::Node;
pub mod locate;
pub mod marker;
pub mod outline;
pub mod pattern;
mod place;
pub mod recipes;
pub mod report;
pub mod spec;
pub mod template;

pub use engine::{apply, apply_plan, plan, revert, HookOutcome, Patched, Plan, Prepared, Status};
pub use files::DiskFile;
pub use locate::Target;
pub use outline::{DefKind, Definition, ParsedFile};
pub use pattern::{Depth, Pattern};
pub use spec::{Action, Anchor, Hook, ImportLine, Nth, Recipe, Selector};
pub use template::Template;
pub mod project;

pub use project::{ClassGraph, Project};
