//! pysplice: find Python classes, methods and statements by meaning, and splice code into them
//! from declarative hook specs: idempotently, reversibly, formatting-preserved, verified.
//!
//! The data flows one way: text is parsed once into a [`ParsedFile`] (outline and syntax tree);
//! a [`Recipe`] (TOML, or built in code: [`Recipe::builder`]) is compiled into validated hooks;
//! [`plan`] turns both into a [`Plan`] that holds them: per hook its edits or the reason there
//! are none, and what applying would do ([`Plan::outcomes`]); [`Plan::apply`] applies and
//! verifies them into a [`Patched`] (what happened, the text, [`Patched::diff`]); [`revert`]
//! gives back the original bytes. [`apply`] is plan and apply in one call. [`Document`] does
//! the same for editors, [`Project`](project::Project) answers questions about a whole package
//! (inheritance, composition, which entry classes reach a method).
//!
//! ```
//! use pysplice::{plan, revert, Anchor, Hook, ParsedFile, Recipe, SourceFile, Status};
//!
//! let recipe = Recipe::builder("trace", "Trace forward calls")
//!     .hook(Hook::builder("imports", "Added imports").ensure_imports(["logging"]))
//!     .hook(
//!         Hook::builder("log", "Logged each call")
//!             .target("Model.forward")
//!             .at(Anchor::Start)
//!             .code("logging.debug('forward %s', {param.1})"),
//!     )
//!     .build()?;
//! let original = "class Model:\n    def forward(self, x):\n        return x\n";
//! let parsed = ParsedFile::parse(SourceFile::new("m.py", original))?;
//!
//! // Plan on what was parsed: what would happen, before anything is applied.
//! let planned = plan(&recipe, &parsed)?;
//! assert!(planned.outcomes().iter().all(|o| o.status == Status::WouldApply));
//!
//! // Apply that plan (verified); the result says what happened and shows its diff.
//! let patched = planned.apply()?;
//! assert!(patched.outcomes().iter().all(|o| o.status == Status::Applied));
//! assert!(patched.diff().contains("\n+        logging.debug('forward %s', x)\n"));
//!
//! // Planned again, the patched text is up to date; revert gives back the original bytes.
//! let again = ParsedFile::parse(SourceFile::new("m.py", patched.output()))?;
//! assert!(plan(&recipe, &again)?.outcomes().iter().all(|o| o.status == Status::AlreadyApplied));
//! let back = revert(&recipe, SourceFile::new("m.py", patched.output()))?;
//! assert_eq!(back.output(), original);
//! # Ok::<(), pysplice::Error>(())
//! ```
//!
//! Lines and columns are counted from 1 everywhere in the library, as CPython and the programs
//! count them: [`Location`], [`LineColumn`], [`LineIndex::line_of`], [`SourceFile::line_range`],
//! [`Definition::line`], [`Document::line_range`]. The one exception is the editor protocol's
//! own type: a [`Utf16Position`] (and so a [`Utf16Range`] or a [`TextEdit`]) holds LSP's 0-based
//! line and 0-based UTF-16 character, and converts only through [`Document`].
//!
//! The names below are the library's API, in the order the data flows through them; each has
//! one path, at the root; [`recipes`] and [`project`] are modules of their own, the first for
//! programs that ship recipes, the second with the vocabulary of questions about a whole package.
//! The modules marked "not public API" are the programs' own and may change at any time.
//!
//! | stage | names |
//! |---|---|
//! | parse | [`SourceFile`], [`Style`], [`Newline`], [`LineIndex`], [`LineColumn`], [`ParsedFile`], [`Node`] |
//! | find | [`Target`], [`Definition`], [`DefKind`], [`Pattern`], [`Depth`] |
//! | spec | [`Recipe`], [`RecipeBuilder`], [`Hook`], [`HookBuilder`], [`Action`], [`Anchor`], [`StatementSelector`], [`ClassSelector`], [`Nth`], [`ImportLine`], [`Conventions`], [`Template`], [`SpecWarning`], [`SpecWarningKind`] |
//! | plan, apply, revert | [`plan`], [`Plan`], [`Plan::apply`], [`apply`], [`revert`], [`Patched`], [`Patched::diff`], [`Edit`] |
//! | outcomes | [`HookOutcome`], [`Status`], [`OutcomeReason`], [`SkipReason`] |
//! | errors | [`Error`], [`ErrorKind`], [`Location`], [`SpecReason`], [`BuilderReason`], [`SelectorProblem`], [`PlacementReason`], [`VerifyReason`], [`MarkerReason`], [`SelectionReason`] |
//! | files | [`DiskFile`] |
//! | editors | [`Document`], [`DocumentPlan`], [`DocumentHook`], [`MarkerRef`], [`TextEdit`], [`Utf16Position`], [`Utf16Range`] |
//! | recipes by name | [`recipes`]: a spec path or `builtin:NAME` from the caller's catalogue ([`recipes::BundledRecipe`]), and the recipes a workspace names |
//! | packages | [`project`]: [`Project`](project::Project), its scan options and answers |
#![deny(missing_docs)]
// The library never prints and never ends the process: the caller decides both.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr, clippy::exit))]

// Not public API: the programs' multi-file runs.
#[doc(hidden)]
pub mod batch;
mod diff;
// Not public API: the editor-facing document's module (its names are at the root).
#[doc(hidden)]
pub mod document;
// Not public API: text edits (the edit type is at the root).
#[doc(hidden)]
pub mod edit;
// Not public API: plan, apply, verify, revert (their entry points are at the root).
#[doc(hidden)]
pub mod engine;
// Not public API: errors (their types are at the root).
#[doc(hidden)]
pub mod error;
// Not public API: safe file reads and writes.
#[doc(hidden)]
pub mod files;
// Not public API: target paths (the target type is at the root).
#[doc(hidden)]
pub mod locate;
// Not public API: marker comments.
#[doc(hidden)]
pub mod marker;
// Not public API: hook outcomes (their types are at the root).
#[doc(hidden)]
pub mod outcome;
// Not public API: the outline of a parsed file (its types are at the root).
#[doc(hidden)]
pub mod outline;
// Not public API: the parser adapter.
#[doc(hidden)]
pub mod parse;
// Not public API: statement patterns (their types are at the root).
/// What a hook's patterns captured where its code goes.
mod captures;
/// The parameters of a target function as templates count them.
mod params;
#[doc(hidden)]
pub mod pattern;
mod place;
pub mod project;
pub mod recipes;
// Not public API: the programs' text reports.
#[doc(hidden)]
pub mod report;
// Not public API: source text and positions (their types are at the root).
#[doc(hidden)]
pub mod source;
// Not public API: hook specs (their types are at the root).
mod printable;
#[doc(hidden)]
pub mod spec;
mod suggest;
mod suite;
// Not public API: the crate's syntax tree, its node kinds and views ([`Node`] is at the root).
#[doc(hidden)]
pub mod syntax;
// Not public API: code templates (the template type is at the root).
#[doc(hidden)]
pub mod template;
mod verify;

pub use document::{Document, DocumentHook, DocumentPlan, MarkerRef, TextEdit, Utf16Position, Utf16Range};
pub use edit::Edit;
pub use engine::{apply, plan, revert, HookOutcome, OutcomeReason, Patched, Plan, SkipReason, Status};
pub use error::{
    BuilderReason, Error, ErrorKind, Location, MarkerReason, PlacementReason, SelectionReason, SelectorProblem,
    SpecReason, VerifyReason,
};
pub use files::DiskFile;
pub use locate::Target;
pub use outline::{DefKind, Definition, ParsedFile};
pub use pattern::{Depth, Pattern};
pub use source::{LineColumn, LineIndex, Newline, SourceFile, Style};
pub use spec::{
    Action, Anchor, ClassSelector, Conventions, Hook, HookBuilder, ImportLine, Nth, Recipe, RecipeBuilder, SpecWarning,
    SpecWarningKind, StatementSelector,
};
pub use syntax::Node;
pub use template::Template;

/// Not public API: how the library shows a name from its input in a message (escaped, at most
/// 80 characters), for the programs' messages to show names the same way.
#[doc(hidden)]
pub use printable::shown;
