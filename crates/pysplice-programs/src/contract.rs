//! The JSON output contract of the programs (`--json`): one compact object per line, one per file
//! or query result, in one layout for every command.
//!
//! Every object has `schema_version`, `command`, `path` (the file, source tree or directory it is
//! about), `ok` and `error` (`null`, or an [`ErrorInfo`]); the rest depends on `command`. A failure
//! carries the same fields as a success: a splice that fails still lists every hook of the recipe,
//! with what became of it. Hook statuses are the words of the text output: `check` says `missing`
//! where `apply` says `applied`. [`output_schema`] gives the JSON Schema of [`Output`], checked in
//! under `schemas/`.

mod graph;

use schemars::JsonSchema;
use serde::Serialize;

use pysplice::project::{Forwarding, Reach};
use pysplice::{Definition, Error, HookOutcome, Recipe, Status};

pub use graph::{Graph, GraphBase, GraphBaseTarget, GraphClass, GraphComposition};

/// The version of the layout. It changes only when a field is removed or changes meaning.
pub const SCHEMA_VERSION: u32 = 1;

/// One JSON object of the output.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[schemars(title = "pysplice JSON output")]
pub struct Output {
    /// The version of this layout ([`SCHEMA_VERSION`]).
    #[schemars(range(min = 1, max = 1))]
    pub schema_version: u32,
    /// The file, source tree or directory this object is about. A byte of the name that is not
    /// UTF-8 is written `\xNN` here (see `fs_path`).
    pub path: String,
    /// `path` as Python's `os.fsdecode` gives it, present only when the name is not UTF-8: each
    /// byte that is not UTF-8 is the lone surrogate U+DC80 to U+DCFF (`\udcff` in the JSON), the
    /// rest as in `path`, so that `os.fsencode` gives back the name's bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub fs_path: Option<Box<serde_json::value::RawValue>>,
    /// Whether the command succeeded for `path`.
    pub ok: bool,
    /// Why it did not (`null` on success).
    pub error: Option<ErrorInfo>,
    /// The command and what it found.
    #[serde(flatten)]
    pub body: Body,
}

/// What went wrong.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ErrorInfo {
    /// The message the text output prints.
    pub message: String,
    /// The file the error is in, when known.
    pub file: Option<String>,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column in UTF-8 bytes, when known.
    pub column: Option<usize>,
    /// The hook concerned, when known.
    pub hook: Option<String>,
}

impl ErrorInfo {
    /// An error with a message and nothing else known.
    #[must_use]
    pub fn message(message: impl Into<String>) -> ErrorInfo {
        ErrorInfo {
            message: message.into(),
            file: None,
            line: None,
            column: None,
            hook: None,
        }
    }
}

impl From<&Error> for ErrorInfo {
    fn from(err: &Error) -> ErrorInfo {
        let at = err.location();
        // Line 0: the error is about a path as a whole (a folder), with no line or column.
        let known = |n: usize| (n > 0).then_some(n);
        ErrorInfo {
            message: err.to_string(),
            file: Some(at.file.clone()),
            line: known(at.line),
            column: known(at.column),
            hook: err.hook().map(str::to_string),
        }
    }
}

/// The command, and its fields.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(tag = "command", rename_all = "kebab-case")]
pub enum Body {
    /// `pysplice apply`.
    Apply(Splice),
    /// `pysplice check`.
    Check(Splice),
    /// `pysplice revert`.
    Revert(Splice),
    /// `pysplice matrix`: one object per source tree, the recipe applied in memory.
    Matrix(Splice),
    /// `sglang-hs-dump`.
    SglangHsDump(Dump),
    /// `pysplice locate`.
    Locate(Locate),
    /// `pysplice graph`.
    Graph(Graph),
    /// `pysplice reach`.
    Reach(ReachBody),
    /// `pysplice forwards`.
    Forwards(Forwards),
}

/// What a splice did, or would do, to one file.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Splice {
    /// The file as a whole, in the words of the text output.
    pub status: FileStatus,
    /// Whether the output differs from the input.
    pub changed: bool,
    /// Whether the file was written.
    pub written: bool,
    /// Every hook of the recipe, in recipe order.
    pub hooks: Vec<HookResult>,
    /// A unified diff (with `--dry-run`, and for the demo of `sglang-hs-dump`).
    pub diff: Option<String>,
    /// The recipe's notes for the user (`[recipe] notes`), on a file `apply` patched or would
    /// patch; absent otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The verdict on one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FileStatus {
    /// `apply` wrote the hooks ("Successfully patched").
    Patched,
    /// `apply --dry-run` or `matrix`: the hooks would be placed.
    WouldPatch,
    /// Nothing to do ("Already up to date", `check`: "up to date").
    UpToDate,
    /// `check`: some hook is missing or outdated ("needs apply").
    NeedsApply,
    /// `revert` removed the hooks ("Reverted").
    Reverted,
    /// `revert --dry-run`: the hooks would be removed.
    WouldRevert,
    /// `revert`: no hook was there ("Nothing to revert").
    NothingToRevert,
    /// `--arch`: nothing to patch for the architectures named (`skipped` says why).
    Skipped,
    /// A file of a folder run that the recipe does not target (no hook's target is defined
    /// there, it carries none of the recipe's markers, or `[recipe] files` leaves it out):
    /// untouched.
    NotTargeted,
    /// The command failed; `error` says why and nothing was written.
    Failed,
}

/// What became of one hook.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct HookResult {
    /// The hook id.
    pub hook: String,
    /// The hook summary.
    pub summary: String,
    /// The status, in the words of the text output of the command.
    pub status: HookStatus,
    /// Why it was skipped or failed.
    pub reason: Option<String>,
    /// 1-based first and last line the hook's text occupies in the output (markers included).
    pub lines: Option<[usize; 2]>,
}

/// A hook's status. `apply`, `matrix` and `sglang-hs-dump` say `applied`, `already-applied`,
/// `updated`; `apply --dry-run` says what applying would do: `would-apply`, `already-applied`,
/// `would-update`, `would-remove`; `check` says `missing`, `outdated`, `applied`, `to-remove`;
/// `revert` says `reverted` and `not-present` (`revert --dry-run`: `would-revert`); all may say
/// `skipped`, `failed` and `not-run`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum HookStatus {
    /// Placed now (`apply`); in place and up to date (`check`).
    Applied,
    /// Already there, identical (`apply`).
    AlreadyApplied,
    /// There, but its code changed and was replaced (`apply`).
    Updated,
    /// Not there (`check`).
    Missing,
    /// There with old code (`check`).
    Outdated,
    /// In the file but no longer in the recipe, removed by the next apply (`check`).
    ToRemove,
    /// Removed (`revert`; `apply` for a hook no longer in the recipe).
    Reverted,
    /// Would be placed (`apply --dry-run`: nothing was written).
    WouldApply,
    /// There with old code, would be replaced (`apply --dry-run`).
    WouldUpdate,
    /// In the file but no longer in the recipe, would be removed (`apply --dry-run`).
    WouldRemove,
    /// Would be removed (`revert --dry-run`).
    WouldRevert,
    /// Nothing to remove (`revert`).
    NotPresent,
    /// Optional and not applicable here; `reason` says why.
    Skipped,
    /// Cannot be placed; `reason` says why.
    Failed,
    /// Not attempted: the file could not be read, parsed or prepared (see `error`).
    NotRun,
}

/// Which command's words a hook status is given in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Words {
    /// `apply`, `matrix`, `sglang-hs-dump`.
    Apply,
    /// `apply --dry-run`: what applying would do.
    DryRun,
    /// `check`.
    Check,
    /// `revert`.
    Revert,
    /// `revert --dry-run` (`sglang-hs-dump`): what reverting would do.
    RevertDryRun,
}

impl HookResult {
    /// The result of `outcome` in the words of `words`.
    #[must_use]
    pub fn new(outcome: &HookOutcome, words: Words) -> HookResult {
        // `check` and a dry run report an apply made in memory as a plan says it.
        let status = match words {
            Words::Check | Words::DryRun => outcome.status.clone().planned(),
            Words::Apply | Words::Revert | Words::RevertDryRun => outcome.status.clone(),
        };
        let (status, reason) = match (status, words) {
            (Status::WouldApply, Words::DryRun) => (HookStatus::WouldApply, None),
            (Status::WouldUpdate, Words::DryRun) => (HookStatus::WouldUpdate, None),
            (Status::WouldRemove, Words::DryRun) => (HookStatus::WouldRemove, None),
            (Status::Reverted, Words::RevertDryRun) => (HookStatus::WouldRevert, None),
            (Status::Applied, _) => (HookStatus::Applied, None),
            // `check`'s word for a hook in place and up to date.
            (Status::AlreadyApplied, Words::Check) => (HookStatus::Applied, None),
            (Status::AlreadyApplied, _) => (HookStatus::AlreadyApplied, None),
            (Status::Updated, _) => (HookStatus::Updated, None),
            (Status::Reverted, _) => (HookStatus::Reverted, None),
            (Status::NotPresent, _) => (HookStatus::NotPresent, None),
            (Status::WouldApply, _) => (HookStatus::Missing, None),
            (Status::WouldUpdate, _) => (HookStatus::Outdated, None),
            (Status::WouldRemove, _) => (HookStatus::ToRemove, None),
            (Status::Skipped { reason }, _) => (HookStatus::Skipped, Some(reason.to_string())),
            (Status::Failed { reason }, _) => (HookStatus::Failed, Some(reason.to_string())),
            // `Status` is non-exhaustive: a status this contract has no word for yet is reported
            // as a failure naming it, never as success.
            (other, _) => (HookStatus::Failed, Some(format!("{other:?}"))),
        };
        HookResult {
            hook: outcome.hook.clone(),
            summary: outcome.summary.clone(),
            status,
            reason,
            lines: outcome.lines.map(|(a, b)| [a, b]),
        }
    }

    /// Every hook of `recipe` as not run.
    #[must_use]
    pub fn not_run(recipe: &Recipe) -> Vec<HookResult> {
        recipe
            .hooks
            .iter()
            .map(|hook| HookResult {
                hook: hook.id.clone(),
                summary: hook.summary.clone(),
                status: HookStatus::NotRun,
                reason: None,
                lines: None,
            })
            .collect()
    }

    /// Whether the hook is pending: `apply` would place or update it.
    #[must_use]
    pub fn is_pending(&self) -> bool {
        matches!(
            self.status,
            HookStatus::Missing
                | HookStatus::Outdated
                | HookStatus::ToRemove
                | HookStatus::WouldApply
                | HookStatus::WouldUpdate
                | HookStatus::WouldRemove
        )
    }
}

impl Splice {
    /// The results of `outcomes` in the words of `words`.
    #[must_use]
    pub fn new(status: FileStatus, outcomes: &[HookOutcome], words: Words) -> Splice {
        Splice {
            status,
            changed: false,
            written: false,
            hooks: outcomes.iter().map(|o| HookResult::new(o, words)).collect(),
            diff: None,
            notes: Vec::new(),
        }
    }
}

/// `sglang-hs-dump`: the splice, and how to start the server.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Dump {
    /// What was done to the file.
    #[serde(flatten)]
    pub splice: Splice,
    /// `apply`, `apply --dry-run`, `check`, `revert` or `revert --dry-run`.
    pub mode: String,
    /// Whether the file is a copy of the bundled demo model.
    pub demo: bool,
    /// The SGLang release the launch flags are for, when known.
    pub release: Option<Release>,
    /// How to start the server so that it dumps hidden states (`null` on failure).
    pub launch: Option<Launch>,
    /// With `--arch` / `--model-path`: the architectures (`EntryClass` names) this file's hooks
    /// serve, sorted; empty for a single-file run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub architectures: Vec<String>,
    /// With `--arch` / `--model-path`: why nothing is patched for `architectures` (status
    /// `skipped`; `path` is the file that defines them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// An SGLang release and where it was read.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Release {
    /// The release, e.g. `0.5.9`.
    pub version: String,
    /// Where it came from (`--sglang-version`, a `version.py`, package metadata).
    pub source: String,
}

/// The environment and flags for the server.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Launch {
    /// Environment variables to set, name to value.
    pub env: std::collections::BTreeMap<String, String>,
    /// The server flags, each value its own item (`--chunked-prefill-size`, `-1`).
    pub flags: Vec<String>,
    /// What to know beyond the flags, one note each.
    pub notes: Vec<String>,
}

/// `locate`: definitions of a file, in source order.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Locate {
    /// The definitions (only the one at PATH when PATH is given; empty on failure).
    pub definitions: Vec<DefinitionInfo>,
}

/// One class or function.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct DefinitionInfo {
    /// Its dotted path (`Class.method`, `f.<locals>.g`).
    pub path: String,
    /// `class`, `function` or `method`.
    pub kind: String,
    /// 1-based line of `def` / `class`.
    pub line: usize,
    /// 1-based last line.
    pub end_line: usize,
    /// 1-based line of the first decorator.
    pub decorator_line: Option<usize>,
    /// `async def`.
    #[serde(rename = "async")]
    pub is_async: bool,
}

impl From<&Definition> for DefinitionInfo {
    fn from(d: &Definition) -> DefinitionInfo {
        DefinitionInfo {
            path: d.path().to_string(),
            kind: d.kind().as_str().to_string(),
            line: d.line(),
            end_line: d.end_line(),
            decorator_line: d.decorator_line(),
            is_async: d.is_async(),
        }
    }
}

/// `reach`: which entry classes run a method.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ReachBody {
    /// The answer (`null` on failure).
    pub reach: Option<Reach>,
}

/// `forwards`: public methods of delegates that a wrapper does not expose.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Forwards {
    /// The class asked about, as given.
    pub wrapper: String,
    /// One entry per delegate (empty on failure).
    pub forwards: Vec<Forwarding>,
}

impl Output {
    /// A success about `path`.
    #[must_use]
    pub fn new(path: impl Into<String>, body: Body) -> Output {
        Output {
            schema_version: SCHEMA_VERSION,
            path: path.into(),
            fs_path: None,
            ok: true,
            error: None,
            body,
        }
    }

    /// A failure about `path`.
    #[must_use]
    pub fn failed(path: impl Into<String>, body: Body, error: ErrorInfo) -> Output {
        Output {
            schema_version: SCHEMA_VERSION,
            path: path.into(),
            fs_path: None,
            ok: false,
            error: Some(error),
            body,
        }
    }

    /// The same object, with `fs_path` set when `path`, the name this object is about, is not
    /// UTF-8.
    #[must_use]
    pub fn named(mut self, path: &std::path::Path) -> Output {
        self.fs_path = fs_path(path);
        self
    }

    /// The object as one line of compact JSON (without the newline).
    #[must_use]
    pub fn to_line(&self) -> String {
        // Only strings, numbers, booleans, arrays, string-keyed maps and `fs_path`'s JSON string:
        // serializing cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// `path` as a JSON string of its `os.fsdecode` form, when it is not UTF-8: each byte that is not
/// UTF-8 written as the escape of its lone surrogate (`\udc80` to `\udcff`, Python's
/// `surrogateescape`), which no Rust string can hold.
#[must_use]
pub fn fs_path(path: &std::path::Path) -> Option<Box<serde_json::value::RawValue>> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let bytes = path.as_os_str().as_bytes();
        if std::str::from_utf8(bytes).is_ok() {
            return None;
        }
        let mut json = String::from("\"");
        for chunk in bytes.utf8_chunks() {
            // A valid run as serde_json writes a string, without its quotes.
            let valid = serde_json::to_string(chunk.valid()).unwrap_or_default();
            json.push_str(valid.get(1..valid.len().saturating_sub(1)).unwrap_or_default());
            for byte in chunk.invalid() {
                json.push_str(&format!("\\udc{byte:02x}"));
            }
        }
        json.push('"');
        serde_json::value::RawValue::from_string(json).ok()
    }
    #[cfg(not(unix))]
    {
        // Elsewhere a path that `path` cannot show is not bytes: none is written.
        let _ = path;
        None
    }
}

/// The JSON Schema of [`Output`] (draft 7), as checked in under `schemas/`.
#[must_use]
pub fn output_schema() -> schemars::schema::RootSchema {
    schemars::schema_for!(Output)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(status: Status, words: Words) -> HookStatus {
        let outcome = HookOutcome {
            hook: "h".into(),
            summary: "s".into(),
            status,
            lines: None,
        };
        HookResult::new(&outcome, words).status
    }

    /// A dry run says what applying (or reverting) would do; the runs that write say what they did.
    #[test]
    fn a_dry_run_words_its_hooks_as_a_plan() {
        assert_eq!(word(Status::Applied, Words::DryRun), HookStatus::WouldApply);
        assert_eq!(word(Status::Updated, Words::DryRun), HookStatus::WouldUpdate);
        assert_eq!(word(Status::Reverted, Words::DryRun), HookStatus::WouldRemove);
        assert_eq!(word(Status::AlreadyApplied, Words::DryRun), HookStatus::AlreadyApplied);
        assert_eq!(word(Status::Reverted, Words::RevertDryRun), HookStatus::WouldRevert);
        assert_eq!(word(Status::NotPresent, Words::RevertDryRun), HookStatus::NotPresent);
        assert_eq!(word(Status::Applied, Words::Apply), HookStatus::Applied);
        assert_eq!(word(Status::Reverted, Words::Revert), HookStatus::Reverted);
        assert_eq!(word(Status::Applied, Words::Check), HookStatus::Missing);
    }
}
