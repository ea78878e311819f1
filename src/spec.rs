//! Hook specifications (recipes) in TOML: serde mirror types, compiled into validated hooks.
//!
//! This file holds the compiled types ([`Recipe`], [`Hook`], [`Action`], ...), the reading of
//! a whole recipe and the helpers that point messages at a key; `raw.rs` is the TOML shape as
//! read, `selectors.rs` compiles `[select.NAME]` tables and `hook.rs` one `[[hook]]` table.
//!
//! ```toml
//! [recipe]
//! id = "demo"
//! summary = "Count forward calls"
//!
//! [vars]
//! attr = "_calls"
//!
//! [[hook]]
//! id = "imports"
//! summary = "Added imports"
//! ensure-imports = ["os"]
//!
//! [[hook]]
//! id = "count"
//! summary = "Count calls in Model.forward"
//! in = "Model.forward"
//! at = "start"
//! code = "self.{attr} = getattr(self, '{attr}', 0) + 1"
//! ```

mod build;
mod code_files;
mod code_from;
mod conventions;
mod hook;
mod raw;
mod selectors;
mod warnings;

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::ops::Range;

use serde::Deserialize;

use crate::error::{Error, ErrorKind, SpecReason};
use crate::locate::Target;
use crate::location::Location;
use crate::marker;
use crate::pattern::{Depth, Pattern};
use crate::source::SourceFile;
use crate::template::{StringCapture, Template};

pub use build::{HookBuilder, RecipeBuilder};
pub use code_files::{CodeFileError, CodeFiles, CodeFolder};
pub use conventions::Conventions;
use hook::{compile_hook, marker_offset, Ledger};
use raw::RawSpec;
use selectors::{compile_conventions, compile_selectors};
pub use warnings::{SpecWarning, SpecWarningKind};

pub(crate) use crate::limits::MAX_RECIPE_CODE_BYTES;

/// Which of the matching statements an anchor or replacement uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Nth {
    /// The first match in source order.
    #[default]
    First,
    /// The last match.
    Last,
    /// Every match.
    All,
}

/// Statements chosen by a pattern.
#[derive(Clone, Debug)]
pub struct StatementSelector {
    /// The pattern statements must match.
    pub pattern: Pattern,
    /// Which matches to use.
    pub nth: Nth,
    /// How deep to look.
    pub depth: Depth,
}

impl StatementSelector {
    /// The statements matching `pattern`: the first match ([`Nth::First`]), looked for at any
    /// depth of the body ([`Depth::Nested`]), as in a TOML recipe.
    #[must_use]
    pub fn new(pattern: Pattern) -> StatementSelector {
        StatementSelector {
            pattern,
            nth: Nth::default(),
            depth: Depth::default(),
        }
    }
}

/// Where inserted code goes.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Anchor {
    /// Start of the body (after a docstring; for the module also after `from __future__` imports).
    Start,
    /// End of the body.
    End,
    /// After the module's docstring, `from __future__` imports and leading import block.
    AfterImports,
    /// Before the selected statements.
    Before(StatementSelector),
    /// After the selected statements.
    After(StatementSelector),
}

impl Anchor {
    /// Before the statements matching `pattern` ([`StatementSelector::new`]).
    #[must_use]
    pub fn before(pattern: Pattern) -> Anchor {
        Anchor::Before(StatementSelector::new(pattern))
    }

    /// After the statements matching `pattern` ([`StatementSelector::new`]).
    #[must_use]
    pub fn after(pattern: Pattern) -> Anchor {
        Anchor::After(StatementSelector::new(pattern))
    }
}

/// One import a hook makes sure the module has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportLine {
    /// The statement as it will be written (`import os`, `from a import b as c`).
    pub statement: String,
    /// For `from` imports, the module with its leading dots; `None` for plain `import`.
    pub from: Option<String>,
    /// The imported module (plain import) or name (from import).
    pub name: String,
    /// The `as` name, if any.
    pub alias: Option<String>,
}

impl ImportLine {
    /// The name this import binds in the module.
    #[must_use]
    pub fn bound_name(&self) -> &str {
        match (&self.alias, &self.from) {
            (Some(alias), _) => alias,
            (None, Some(_)) => &self.name,
            (None, None) => self.name.split('.').next().unwrap_or(&self.name),
        }
    }
}

/// What a hook does.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Action {
    /// Add the module-level imports that are missing.
    EnsureImports(Vec<ImportLine>),
    /// Insert a block of code at an anchor.
    Insert {
        /// Where in the target the code goes.
        at: Anchor,
        /// The code (dedented).
        code: Template,
    },
    /// Wrap the value of every return statement of the target in a template around `{value}`.
    WrapReturns {
        /// The expression template.
        template: Template,
        /// Returns inside a statement matching this pattern are left alone.
        unless_inside: Option<Pattern>,
    },
    /// Replace the selected statements by code.
    Replace {
        /// The statements to replace.
        selector: StatementSelector,
        /// The code (dedented).
        code: Template,
    },
    /// Add a method to a wrapper class that forwards to an attribute, unless the class has it.
    AddForwarder {
        /// The name of the method to add (and of the delegate's method it calls).
        method: String,
        /// The attribute holding the delegate (`language_model`).
        via: String,
    },
}

/// A validated hook: read from TOML ([`Recipe::from_toml`]) or built in code
/// ([`Hook::builder`]).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Hook {
    /// Unique id within the recipe.
    pub id: String,
    /// One line shown in reports.
    pub summary: String,
    /// The definition (or module) the hook works in.
    pub target: Target,
    /// What it does.
    pub action: Action,
    /// Skip (with the reason) instead of failing when the target or anchor is absent.
    pub optional: bool,
    /// Apply only where the target contains a match of this pattern.
    pub when: Option<Pattern>,
    /// Definition paths that must exist in the file, or the hook is skipped.
    pub requires: Vec<String>,
    /// What a capture inside a string literal of the code becomes (`capture-in-string`).
    pub capture_in_string: StringCapture,
    /// Where the hook is written in the spec.
    pub location: Location,
}

/// A validated recipe: metadata, variables and hooks in order; read from TOML
/// ([`Recipe::from_toml`]) or built in code ([`Recipe::builder`]).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Recipe {
    /// Recipe id, written into every marker.
    pub id: String,
    /// One-line description.
    pub summary: String,
    /// Notes for the user (launch flags, caveats).
    pub notes: Vec<String>,
    /// The files of a folder run the recipe is for (`[recipe] files`): path globs or dotted
    /// module names; empty for every `.py` file. Files given by name are always patched.
    pub files: Vec<String>,
    /// Template variables.
    pub vars: BTreeMap<String, String>,
    /// The hooks, in the order they are planned.
    pub hooks: Vec<Hook>,
    /// Class selectors (`[select.NAME]`), in the order written; hooks name them in `in`.
    pub selectors: Vec<ClassSelector>,
    /// The code base's conventions the selectors rely on (`[conventions]`: which variable lists
    /// entry classes, which name parts mark draft classes); none by default.
    pub conventions: Conventions,
    /// What the spec says but likely does not mean ([`Recipe::warnings`]).
    warnings: Vec<SpecWarning>,
}

/// Classes chosen by what they are, not by name: a `[select.NAME]` table.
///
/// ```toml
/// [select.capturing]
/// entries = true                              # the classes a module lists in its entry list
/// has-method = "set_eagle3_layers_to_capture" # that define or inherit this method
///
/// [select.backbone]
/// held-by = "capturing"                       # held by such a class (`self.ATTR = ...`)
/// via = ["model", "language_model"]           # through these attributes, at any depth
/// assigns = "layers_to_capture"               # the first held class setting `self.layers_to_capture`
/// ```
///
/// A selector without `held-by` is a root: its classes are what a caller can pick from
/// (`--arch`). Draft classes (a `[conventions] draft-markers` part in the class or file name) are
/// never selected as roots. The entry list is named in `[conventions]`:
///
/// ```toml
/// [conventions]
/// entry-list = "EntryClass"
/// draft-markers = ["eagle", "nextn"]
/// ```
///
/// Resolution lives in [`crate::project::select`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassSelector {
    /// The name hooks use in `in = { class = NAME }`.
    pub name: String,
    /// Only classes listed in some module's entry list (`[conventions] entry-list`).
    pub entries: bool,
    /// Only classes that define or inherit this method.
    pub has_method: Option<String>,
    /// Classes left out by name (roots only), e.g. ones that inherit the method but serve
    /// another purpose.
    pub exclude: Vec<String>,
    /// The selector whose classes hold these (derived selectors).
    pub held_by: Option<String>,
    /// The attributes followed from a holder (any when empty).
    pub via: Vec<String>,
    /// Stop at the first class (the holder itself included) that assigns `self.<assigns>`
    /// (in its own or an inherited method); without it, the classes held directly.
    pub assigns: Option<String>,
    /// Where the table is written.
    pub location: Location,
}

impl ClassSelector {
    /// A root selector named `name` (a Python name; `-` allowed), choosing nothing yet: give it
    /// [`ClassSelector::entries`], [`ClassSelector::has_method`] or both, for
    /// [`RecipeBuilder::selector`].
    #[must_use]
    pub fn root(name: &str) -> ClassSelector {
        ClassSelector {
            name: name.to_string(),
            entries: false,
            has_method: None,
            exclude: Vec::new(),
            held_by: None,
            via: Vec::new(),
            assigns: None,
            location: Location::nowhere(),
        }
    }

    /// A derived selector named `name`: the classes that the classes of selector `holder` hold
    /// (`self.ATTR = ...`); narrowed by [`ClassSelector::via`] and [`ClassSelector::assigns`].
    #[must_use]
    pub fn held_by(name: &str, holder: &str) -> ClassSelector {
        ClassSelector {
            held_by: Some(holder.to_string()),
            ..ClassSelector::root(name)
        }
    }

    /// Only classes that a module lists in its entry list (`entries = true`; the recipe's
    /// [`Conventions::entry_list`] names it).
    #[must_use]
    pub fn entries(mut self) -> ClassSelector {
        self.entries = true;
        self
    }

    /// Only classes that define or inherit `method` (`has-method`).
    #[must_use]
    pub fn has_method(mut self, method: &str) -> ClassSelector {
        self.has_method = Some(method.to_string());
        self
    }

    /// Leaves out these classes by name (`exclude`, roots only), after those left out so far.
    #[must_use]
    pub fn exclude<I: IntoIterator<Item = S>, S: Into<String>>(mut self, classes: I) -> ClassSelector {
        self.exclude.extend(classes.into_iter().map(Into::into));
        self
    }

    /// Follows only these attributes from a holder (`via`, derived selectors only), after those
    /// given so far.
    #[must_use]
    pub fn via<I: IntoIterator<Item = S>, S: Into<String>>(mut self, attributes: I) -> ClassSelector {
        self.via.extend(attributes.into_iter().map(Into::into));
        self
    }

    /// Stops at the first held class that assigns `self.<attribute>` (`assigns`, derived
    /// selectors only).
    #[must_use]
    pub fn assigns(mut self, attribute: &str) -> ClassSelector {
        self.assigns = Some(attribute.to_string());
        self
    }
}

// ---- compilation ---------------------------------------------------------------------------

impl Recipe {
    /// Reads and validates a recipe from TOML text; `name` is used in messages.
    ///
    /// ```
    /// let recipe = pysplice::Recipe::from_toml("demo.toml", r#"
    /// [recipe]
    /// id = "demo"
    /// summary = "Say hello"
    ///
    /// [[hook]]
    /// id = "hello"
    /// summary = "Greets"
    /// in = "greet"
    /// at = "start"
    /// code = "print('hello')"
    /// "#)?;
    /// assert_eq!(recipe.hooks.len(), 1);
    /// # Ok::<(), pysplice::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`ErrorKind::Spec`] at the TOML line and column, naming the hook, for syntax errors, unknown
    /// fields, missing or conflicting fields, duplicate ids, and code or patterns that do not parse;
    /// with an [`ErrorKind::Oversized`] cause for code longer than
    /// [`MAX_RENDERED_BYTES`](crate::limits::MAX_RENDERED_BYTES) (one hook) or [`MAX_RECIPE_CODE_BYTES`](crate::limits::MAX_RECIPE_CODE_BYTES) (all hooks)
    /// once its placeholders are filled in.
    ///
    /// A recipe whose hooks take code from files (`code-from`) needs its folder: read it with
    /// [`Recipe::from_file`] or [`Recipe::from_toml_with`]; here its first `code-from` entry is
    /// a spec error ([`CodeFromProblem::NeedsFolder`](crate::CodeFromProblem::NeedsFolder)).
    pub fn from_toml(name: &str, text: &str) -> Result<Recipe, Error> {
        Recipe::read(name, text, true, None)
    }

    /// [`Recipe::from_toml`] for a recipe whose hooks may take their code from Python files
    /// (`code-from`): `files` gives them by their path relative to the recipe's folder
    /// ([`CodeFolder`] reads that folder on disk).
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use pysplice::Recipe;
    ///
    /// let files = BTreeMap::from([(
    ///     "hooks.py",
    ///     "def greet(self, name):\n    print('hello', name)  # name\n",
    /// )]);
    /// let recipe = Recipe::from_toml_with("demo.toml", r#"
    /// [recipe]
    /// id = "demo"
    /// summary = "Say hello"
    ///
    /// [[hook]]
    /// id = "hello"
    /// summary = "Greets"
    /// in = "Greeter.greet"
    /// at = "start"
    /// code-from = [{ file = "hooks.py", body = "greet" }]
    /// "#, &files)?;
    /// let pysplice::Action::Insert { code, .. } = &recipe.hooks[0].action else { unreachable!() };
    /// assert_eq!(code.text(), "print('hello', {param.1})  # name");
    /// # Ok::<(), pysplice::Error>(())
    /// ```
    ///
    /// # Errors
    /// Those of [`Recipe::from_toml`]; [`ErrorKind::Spec`] with
    /// [`SpecReason::CodeFrom`] at a `code-from` entry whose file cannot be read or used, or
    /// whose `def` or `body` the file does not define.
    pub fn from_toml_with(name: &str, text: &str, files: &dyn CodeFiles) -> Result<Recipe, Error> {
        Recipe::read(name, text, true, Some(files))
    }

    /// Reads the recipe file at `path` and compiles it ([`Recipe::from_toml_with`]), its code
    /// files read from its folder ([`CodeFolder::of_recipe`]); `path` names it in messages.
    ///
    /// # Errors
    /// Those of [`Recipe::from_toml_with`]; the read errors of [`crate::files::read_text`]
    /// ([`ErrorKind::Io`], [`ErrorKind::NotRegular`], ...).
    pub fn from_file(path: &std::path::Path) -> Result<Recipe, Error> {
        let text = crate::files::read_text(path)?;
        Recipe::from_toml_with(&path.display().to_string(), &text, &CodeFolder::of_recipe(path))
    }

    /// [`Recipe::from_toml`] for a spec bundled with a program: its code is not parsed again on
    /// every load, so the program's tests must compile every bundled spec with
    /// [`Recipe::from_toml`] (every other check still runs here).
    ///
    /// # Errors
    /// As [`Recipe::from_toml`], except for code that does not parse.
    pub fn from_bundled_toml(name: &str, text: &str) -> Result<Recipe, Error> {
        Recipe::read(name, text, false, None)
    }

    /// [`Recipe::from_bundled_toml`] for a bundled spec whose hooks take code from files
    /// (`code-from`), given by `files` (the program's own copies of them).
    ///
    /// # Errors
    /// As [`Recipe::from_toml_with`], except for code that does not parse.
    pub fn from_bundled_toml_with(name: &str, text: &str, files: &dyn CodeFiles) -> Result<Recipe, Error> {
        Recipe::read(name, text, false, Some(files))
    }

    /// Reads and compiles a TOML spec; `probe`: whether each hook's code is parsed to prove it
    /// is Python; `files`: where `code-from` entries are read (`None`: nowhere).
    fn read(name: &str, text: &str, probe: bool, files: Option<&dyn CodeFiles>) -> Result<Recipe, Error> {
        let file = SourceFile::new(name, text);
        let mut raw: RawSpec = toml::from_str(text).map_err(|err| {
            let offset = err.span().map_or(0, |span| span.start);
            let hook = enclosing_hook_id(text, offset);
            let reason = SpecReason::Toml {
                message: err.message().trim().to_string(),
            };
            spec_error(&file, offset, reason, hook.as_deref())
        })?;
        code_from::resolve(&file, &mut raw.hooks, files)?;
        Recipe::compile(&file, raw, probe)
    }

    /// Checks and compiles a recipe as read from `file` (or built in code, with an empty file
    /// named after the recipe).
    fn compile(file: &SourceFile, raw: RawSpec, probe: bool) -> Result<Recipe, Error> {
        let text = file.text();
        check_id(file, &raw.recipe.id, 0, None)?;
        let recipe_key = |key: &str| key_offset(file, &(0..text.len()), key);
        check_line(file, &raw.recipe.summary, recipe_key("summary"), "summary", None)?;
        for note in &raw.recipe.notes {
            check_line(file, note, recipe_key("notes"), "note", None)?;
        }
        for glob in &raw.recipe.files {
            check_line(file, glob, recipe_key("files"), "file glob", None)?;
            if glob.trim().is_empty() {
                let reason = SpecReason::EmptyFileGlob;
                return Err(spec_error(file, recipe_key("files"), reason, None));
            }
        }
        for (name, value) in &raw.vars {
            if value.lines().any(marker::looks_like_marker) {
                let key = key_offset(file, &(0..text.len()), name);
                let at = marker_offset(text, key..text.len()).unwrap_or(key);
                let reason = SpecReason::MarkerLikeVariable { name: name.clone() };
                return Err(spec_error(file, at, reason, None));
            }
        }
        let conventions = compile_conventions(file, raw.conventions)?;
        let selectors = compile_selectors(file, raw.select, &conventions)?;
        let mut hooks: Vec<Hook> = Vec::new();
        let ledger = Ledger {
            budget: Cell::new(MAX_RECIPE_CODE_BYTES),
            warnings: RefCell::new(Vec::new()),
        };
        for spanned in raw.hooks {
            let span = spanned.span();
            let hook = compile_hook(file, &raw.vars, &selectors, spanned.into_inner(), span, probe, &ledger)?;
            if let Some(first) = hooks.iter().find(|h| h.id == hook.id) {
                let reason = SpecReason::DuplicateHook {
                    first_line: first.location.line,
                };
                return Err(spec_error(file, hook_offset(file, &hook.id), reason, Some(&hook.id)));
            }
            hooks.push(hook);
        }
        Ok(Recipe {
            id: raw.recipe.id,
            summary: raw.recipe.summary,
            notes: raw.recipe.notes,
            files: raw.recipe.files,
            vars: raw.vars,
            hooks,
            selectors,
            conventions,
            warnings: ledger.warnings.into_inner(),
        })
    }

    /// What the spec says but likely does not mean, each naming its hook and where in the spec
    /// it is written: a `{$NAME}` inside a string literal of the code where it is not escaped (a
    /// raw string, or `capture-in-string = "refuse"`), or inside a comment for a capture that
    /// may span lines (both better written `{$NAME!r}`). The recipe works as
    /// written; a program shows these before it runs it.
    ///
    /// ```
    /// use pysplice::{Recipe, SpecWarningKind};
    ///
    /// let recipe = Recipe::from_toml("w.toml", r#"
    /// [recipe]
    /// id = "w"
    /// summary = "Say what was set"
    ///
    /// [[hook]]
    /// id = "say"
    /// summary = "Printed the value"
    /// in = "f"
    /// at = { after = "x = $V" }
    /// code = "print('x is {$V}')"
    /// capture-in-string = "refuse"
    /// "#)?;
    /// let warning = &recipe.warnings()[0];
    /// assert_eq!(warning.kind, SpecWarningKind::CaptureInString { name: "V".into() });
    /// assert_eq!((warning.hook.as_str(), warning.location.line), ("say", 11));
    /// assert!(warning.to_string().starts_with("w.toml:11:21: warning: `{$V}` is inside a string literal"));
    /// # Ok::<(), pysplice::Error>(())
    /// ```
    #[must_use]
    pub fn warnings(&self) -> &[SpecWarning] {
        &self.warnings
    }

    /// The selector named `name`.
    #[must_use]
    pub fn selector(&self, name: &str) -> Option<&ClassSelector> {
        self.selectors.iter().find(|s| s.name == name)
    }

    /// Whether some hook chooses its targets by meaning (`in = { class = ... }`).
    #[must_use]
    pub fn selects(&self) -> bool {
        self.hooks.iter().any(|h| matches!(h.target, Target::Select { .. }))
    }
}

fn spec_error(file: &SourceFile, offset: usize, reason: SpecReason, hook: Option<&str>) -> Error {
    let err = ErrorKind::Spec { reason, cause: None }.at(file.location(offset));
    match hook {
        Some(hook) => err.with_hook(hook),
        None => err,
    }
}

/// The id of the `[[hook]]` table around `offset`, read from the text (for TOML errors, which
/// come before any hook is known).
fn enclosing_hook_id(text: &str, offset: usize) -> Option<String> {
    let start = text.get(..offset)?.rfind("[[hook]]")?;
    let table = &text[start + 8..];
    let table = &table[..table.find("\n[").unwrap_or(table.len())];
    table.lines().find_map(|line| {
        let value = line.trim().strip_prefix("id")?.trim_start().strip_prefix('=')?.trim();
        Some(value.trim_matches(['"', '\'']).to_string())
    })
}

/// The offset of `id = "<id>"` in the spec, for messages.
fn hook_offset(file: &SourceFile, id: &str) -> usize {
    let needle = format!("\"{id}\"");
    file.text().find(&needle).unwrap_or(0)
}

fn check_id(file: &SourceFile, id: &str, offset: usize, hook: Option<&str>) -> Result<(), Error> {
    if marker::is_id(id) {
        Ok(())
    } else {
        let reason = SpecReason::BadId { id: id.to_string() };
        Err(spec_error(file, offset, reason, hook))
    }
}

/// Summaries and notes are printed as lines: one line each, without control characters (which
/// could rewrite what a terminal shows).
fn check_line(
    file: &SourceFile,
    text: &str,
    offset: usize,
    what: &'static str,
    hook: Option<&str>,
) -> Result<(), Error> {
    match text.chars().find(|c| c.is_control()) {
        None => Ok(()),
        Some(found) => Err(spec_error(file, offset, SpecReason::NotOneLine { what, found }, hook)),
    }
}

/// The offset of `key` inside the hook's table, falling back to the table start.
fn key_offset(file: &SourceFile, span: &Range<usize>, key: &str) -> usize {
    let table = file.slice(span.clone());
    table
        .match_indices(key)
        .find(|(i, _)| table[..*i].ends_with('\n') || *i == 0 || table[..*i].ends_with(' '))
        .map_or(span.start, |(i, _)| span.start + i)
}

#[cfg(feature = "serde")]
impl Recipe {
    /// The JSON Schema (draft 7) of the TOML hook spec, for editors (taplo, Even Better TOML):
    /// checked in as `schemas/hook-spec.schema.json`. Needs the `serde` feature.
    ///
    /// ```
    /// let schema = serde_json::to_value(pysplice::Recipe::json_schema()).unwrap();
    /// assert_eq!(schema["title"], "pysplice hook spec");
    /// ```
    #[must_use]
    pub fn json_schema() -> schemars::schema::RootSchema {
        let mut schema = schemars::schema_for!(RawSpec);
        let metadata = schema.schema.metadata();
        metadata.title = Some("pysplice hook spec".to_string());
        metadata.description = Some("A recipe: `[recipe]`, optional `[vars]`, and `[[hook]]` tables.".to_string());
        schema
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::SelectorProblem;

    fn err(text: &str) -> String {
        Recipe::from_toml("s.toml", text).unwrap_err().to_string()
    }

    /// The reason of the spec error `text` gives.
    fn reason(text: &str) -> SpecReason {
        match Recipe::from_toml("s.toml", text).unwrap_err().kind() {
            ErrorKind::Spec { reason, .. } => reason.clone(),
            other => panic!("not a spec error: {other:?}"),
        }
    }

    /// The problem of the `[select.NAME]` table of the spec error `text` gives, with the name.
    fn selector_problem(text: &str) -> (String, SelectorProblem) {
        match reason(text) {
            SpecReason::ClassSelector { name, problem } => (name, problem),
            other => panic!("not a selector problem: {other:?}"),
        }
    }

    const HEAD: &str = "[recipe]\nid = \"r\"\nsummary = \"s\"\n";

    /// The warnings of a recipe with one hook after `x = $V` (`self.$A = $B` when `attr`) whose
    /// code is `code` (a TOML literal string's content).
    fn warnings_of(code: &str, attr: bool) -> Vec<SpecWarning> {
        warnings_with(code, attr, "")
    }

    /// [`warnings_of`] with `more` (TOML lines) after the code.
    fn warnings_with(code: &str, attr: bool, more: &str) -> Vec<SpecWarning> {
        let at = if attr { "self.$A = $B" } else { "x = $V" };
        let text = format!(
            "{HEAD}\n[[hook]]\nid = \"h\"\nsummary = \"x\"\nin = \"f\"\nat = {{ after = \"{at}\" }}\ncode = '''{code}'''\n{more}"
        );
        Recipe::from_toml("s.toml", &text).unwrap().warnings().to_vec()
    }

    /// The warnings of a hook that refuses captures inside string literals.
    fn refusing_warnings_of(code: &str) -> Vec<SpecWarning> {
        warnings_with(code, false, "capture-in-string = \"refuse\"\n")
    }

    #[test]
    fn an_escaped_capture_in_a_string_literal_is_no_warning_but_in_a_raw_one() {
        assert_eq!(warnings_of("print('x is {$V}', {$V})", false), []);
        assert_eq!(warnings_of("s = f'{{{$V}}} is {$V}'", false), []);
        let raw = warnings_of("print(r'x is {$V}')", false);
        assert_eq!(raw.len(), 1);
        assert_eq!(raw[0].kind, SpecWarningKind::CaptureInString { name: "V".into() });
    }

    #[test]
    fn a_refused_capture_in_a_string_literal_is_a_warning_at_its_placeholder() {
        let warnings = refusing_warnings_of("print('x is {$V}', {$V})");
        assert_eq!(
            warnings,
            [SpecWarning {
                kind: SpecWarningKind::CaptureInString { name: "V".into() },
                location: Location::new("s.toml", 10, 23),
                hook: "h".into(),
            }]
        );
        let text = warnings[0].to_string();
        assert!(
            text.starts_with("s.toml:10:23: warning: `{$V}` is inside a string literal of the code")
                && text.contains("write `{$V!r}`")
                && text.ends_with("[hook h]"),
            "{text}"
        );
        // At the placeholder in the string, not at an earlier one in code.
        let warnings = refusing_warnings_of("print({$V}, 'x is {$V}')");
        assert_eq!(warnings[0].location, Location::new("s.toml", 10, 29));
        // Twice in strings: one warning. In a triple-quoted string and an f-string's text too.
        assert_eq!(refusing_warnings_of("print('{$V}', '{$V}')").len(), 1);
        assert_eq!(refusing_warnings_of("s = \"\"\"a\n{$V}\"\"\"").len(), 1);
        assert_eq!(refusing_warnings_of("s = f'{{{$V}}} is {$V}'").len(), 1);
    }

    #[test]
    fn a_capture_as_code_or_as_a_literal_is_no_warning() {
        for code in [
            "print({$V})",
            "print({$V!r})",
            "print('x is', {$V!r})",
            "print(f'{{{$V}}}')",
            "print('#', {$V})",
            "print(\"it's\", {$V})",
        ] {
            assert_eq!(warnings_of(code, false), [], "{code}");
        }
    }

    #[test]
    fn a_capture_in_a_comment_is_a_warning_unless_it_is_a_name() {
        let warnings = warnings_of("pass  # was {$V}", false);
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].kind, SpecWarningKind::CaptureInComment { name: "V".into() });
        assert!(
            warnings[0].to_string().contains("is inside a comment of the code"),
            "{}",
            warnings[0]
        );
        // `self.$A`: always one name, one line.
        assert_eq!(warnings_of("pass  # set {$A}", true), []);
        assert_eq!(warnings_of("pass  # set to {$B}", true).len(), 1);
    }

    #[test]
    fn unknown_fields_point_at_the_toml() {
        let text = format!(
            "{HEAD}\n[[hook]]\nid = \"h\"\nsummary = \"x\"\nin = \"A.f\"\nat = \"end\"\ncode = \"x\"\ncolour = 1\n"
        );
        let e = err(&text);
        assert!(
            e.starts_with("s.toml:11:1: bad spec: unknown field `colour`") && e.ends_with("[hook h]"),
            "{e}"
        );
        assert!(matches!(reason(&text), SpecReason::Toml { .. }));
    }

    #[test]
    fn bad_code_and_patterns_name_the_hook() {
        let text =
            format!("{HEAD}[[hook]]\nid = \"h\"\nsummary = \"x\"\nin = \"A.f\"\nat = \"end\"\ncode = \"x = (\"\n");
        let e = err(&text);
        assert!(
            e.starts_with("s.toml:9:1: bad spec: code does not parse") && e.ends_with("[hook h]"),
            "{e}"
        );
        assert_eq!(reason(&text), SpecReason::CodeUnparsable);
        let text = format!(
            "{HEAD}[[hook]]\nid = \"h\"\nsummary = \"x\"\nin = \"A.f\"\nat = {{ after = \"x = \" }}\ncode = \"y\"\n"
        );
        let e = Recipe::from_toml("s.toml", &text).unwrap_err();
        assert_eq!(e.hook(), Some("h"));
        assert_eq!(reason(&text), SpecReason::InvalidPattern { text: "x = ".into() });
    }

    #[test]
    fn placement_must_be_single_and_complete() {
        let r = reason(&format!("{HEAD}[[hook]]\nid = \"h\"\nsummary = \"x\"\nin = \"A.f\"\n"));
        assert_eq!(r, SpecReason::PlacementCount);
        let r = reason(&format!(
            "{HEAD}[[hook]]\nid = \"h\"\nsummary = \"x\"\nin = \"A.f\"\nwrap-returns = \"f(1)\"\n"
        ));
        assert_eq!(r, SpecReason::WrapNeedsValue);
        let r = reason(&format!(
            "{HEAD}[[hook]]\nid = \"h\"\nsummary = \"x\"\nensure-imports = [\"a, b\"]\n"
        ));
        assert_eq!(r, SpecReason::NotOneImport { text: "a, b".into() });
        let twice = "[[hook]]\nid = \"h\"\nsummary = \"x\"\nensure-imports = [\"os\"]\n";
        let r = reason(&format!("{HEAD}{twice}{twice}"));
        assert_eq!(r, SpecReason::DuplicateHook { first_line: 5 });
    }

    #[test]
    fn selectors_are_validated_with_their_table_and_hook() {
        let sel =
            "[conventions]\nentry-list = \"EntryClass\"\n[select.top]\nentries = true\nhas-method = \"capture\"\n";
        let hook = |target: &str| {
            format!("[[hook]]\nid = \"h\"\nsummary = \"x\"\nin = {target}\nat = \"end\"\ncode = \"pass\"\n")
        };
        let ok = Recipe::from_toml(
            "s.toml",
            &format!("{HEAD}{sel}{}", hook("{ class = \"top\", method = \"__init__\" }")),
        )
        .unwrap();
        assert_eq!(ok.selectors[0].has_method.as_deref(), Some("capture"));
        assert!(ok.selects());
        let text = format!("{HEAD}{sel}{}", hook("{ class = \"tops\" }"));
        let e = err(&text);
        assert!(
            e.starts_with("s.toml:12:1: bad spec:")
                && e.contains("`class = \"tops\"` names no selector; the recipe has `top`")
                && e.ends_with("[hook h]"),
            "{e}"
        );
        assert_eq!(
            reason(&text),
            SpecReason::UnknownSelector {
                class: "tops".into(),
                known: vec!["top".into()]
            }
        );
        let r = reason(&format!("{HEAD}{sel}{}", hook("{ class = \"top\", method = \"a.b\" }")));
        assert_eq!(r, SpecReason::MethodNotAName { method: "a.b".into() });
        let text = format!("{HEAD}[select.top]\nvia = [\"model\"]\n");
        let e = err(&text);
        assert!(
            e.starts_with("s.toml:4:1: bad spec: [select.top]: a root selector needs"),
            "{e}"
        );
        assert_eq!(
            selector_problem(&text),
            ("top".into(), SelectorProblem::RootChoosesNothing)
        );
        let text = format!("{HEAD}{sel}[select.inner]\nheld-by = \"nowhere\"\n");
        let e = err(&text);
        assert!(
            e.starts_with("s.toml:9:1: bad spec: [select.inner]: `held-by = \"nowhere\"` names no selector"),
            "{e}"
        );
        assert!(matches!(
            selector_problem(&text),
            (name, SelectorProblem::UnknownHolder { by, .. }) if name == "inner" && by == "nowhere"
        ));
        let text = format!("{HEAD}[select.a]\nheld-by = \"b\"\n[select.b]\nheld-by = \"a\"\n");
        assert!(err(&text).contains("goes round in a circle (a -> b)"));
        assert_eq!(
            selector_problem(&text),
            (
                "a".into(),
                SelectorProblem::Circle {
                    chain: vec!["a".into(), "b".into()]
                }
            )
        );
        let r = selector_problem(&format!(
            "{HEAD}{sel}[select.inner]\nheld-by = \"top\"\nexclude = [\"X\"]\n"
        ));
        assert_eq!(r, ("inner".into(), SelectorProblem::RootKeysInDerived));
        let r = selector_problem(&format!("{HEAD}[select.top]\nentries = true\n"));
        assert_eq!(r, ("top".into(), SelectorProblem::EntriesWithoutList));
        let r = reason(&format!("{HEAD}[conventions]\nentry-list = \"Entry Class\"\n"));
        assert_eq!(
            r,
            SpecReason::EntryListNotAName {
                name: "Entry Class".into()
            }
        );
        let e = err(&format!("{HEAD}[select.top]\nentries = true\ncolour = 1\n"));
        assert!(e.starts_with("s.toml:6:1: bad spec: unknown field `colour`"), "{e}");
    }
}
