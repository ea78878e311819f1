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
//! one path. The one-file stages are at the root; what works on disk and what programs print
//! are modules of their own: [`batch`] (a recipe over files and folders, as `pysplice apply DIR`
//! runs it), [`files`] (safe reads and all-or-nothing writes), [`marker`] (the marker comments
//! in a file), [`report`] (the text forms the programs print), [`limits`] (the bounds on input
//! and output), [`recipes`] (recipes by name, for programs that ship recipes) and [`project`]
//! (questions about a whole package). Every other module is private.
//!
//! | stage | names |
//! |---|---|
//! | parse | [`SourceFile`], [`Style`], [`Newline`], [`LineIndex`], [`LineColumn`], [`ParsedFile`], [`Node`] |
//! | find | [`Target`], [`Definition`], [`DefKind`], [`Pattern`], [`Depth`], [`is_identifier`] |
//! | spec | [`Recipe`], [`RecipeBuilder`], [`Hook`], [`HookBuilder`], [`Action`], [`Anchor`], [`StatementSelector`], [`ClassSelector`], [`Nth`], [`ImportLine`], [`Conventions`], [`Template`], [`SpecWarning`], [`SpecWarningKind`] |
//! | plan, apply, revert | [`plan`], [`Plan`], [`Plan::apply`], [`apply`], [`attempt`], [`Attempt`], [`revert`], [`Patched`], [`Patched::diff`], [`Edit`] |
//! | outcomes | [`HookOutcome`], [`Status`], [`OutcomeReason`], [`SkipReason`] |
//! | errors | [`Error`], [`ErrorKind`], [`Location`], [`SpecReason`], [`BuilderReason`], [`SelectorProblem`], [`PlacementReason`], [`VerifyReason`], [`MarkerReason`], [`SelectionReason`] |
//! | editors | [`Document`], [`DocumentPlan`], [`DocumentHook`], [`KeptPlan`], [`MarkerRef`], [`TextEdit`], [`Utf16Position`], [`Utf16Range`] |
//! | files and folders | [`batch`]: [`Batch`](batch::Batch), [`Op`](batch::Op), [`RunOptions`](batch::RunOptions), [`Tree`](batch::Tree); [`files`]: [`DiskFile`](files::DiskFile), [`write_all`](files::write_all) |
//! | markers, reports, limits | [`marker`]: [`scan`](marker::scan), [`carries`](marker::carries); [`report`]: [`printable`](report::printable), [`outcome_line`](report::outcome_line); [`limits`] |
//! | recipes by name | [`recipes`]: a spec path or `builtin:NAME` from the caller's catalogue ([`recipes::BundledRecipe`]), and the recipes a workspace names |
//! | packages | [`project`]: [`Project`](project::Project), its scan options and answers |
#![deny(missing_docs)]
// A type that a public item returns or takes is one users can name.
#![deny(unnameable_types)]
// The library never prints and never ends the process: the caller decides both.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr, clippy::exit))]

pub mod batch;
/// What a hook's patterns captured where its code goes.
mod captures;
mod diff;
mod document;
mod edit;
mod engine;
mod error;
pub mod files;
pub mod limits;
mod locate;
mod location;
pub mod marker;
mod outcome;
mod outline;
/// The parameters of a target function as templates count them.
mod params;
mod parse;
mod pattern;
mod place;
mod printable;
pub mod project;
pub mod recipes;
pub mod report;
mod source;
mod spec;
mod suggest;
mod suite;
mod syntax;
mod template;
mod verify;

pub use document::{Document, DocumentHook, DocumentPlan, KeptPlan, MarkerRef, TextEdit, Utf16Position, Utf16Range};
pub use edit::Edit;
pub use engine::{
    apply, attempt, plan, revert, Attempt, HookOutcome, OutcomeReason, Patched, Plan, SkipReason, Status,
};
pub use error::{
    BuilderReason, CodeFromProblem, Error, ErrorKind, PlacementReason, SelectionReason, SelectorProblem, SpecReason,
};
pub use locate::Target;
pub use location::Location;
pub use marker::reason::MarkerReason;
pub use outline::{DefKind, Definition, ParsedFile};
pub use pattern::{Depth, Pattern};
pub use source::{LineColumn, LineIndex, Newline, SourceFile, Style};
pub use spec::{
    Action, Anchor, ClassSelector, CodeFileError, CodeFiles, CodeFolder, Conventions, Hook, HookBuilder, ImportLine,
    Nth, Recipe, RecipeBuilder, SpecWarning, SpecWarningKind, StatementSelector,
};
pub use syntax::{is_identifier, Node};
pub use template::{StringCapture, Template};
pub use verify::VerifyReason;
