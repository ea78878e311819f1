//! Hook specifications (recipes) in TOML: serde mirror types, compiled into validated hooks.
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

use std::collections::BTreeMap;
use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;

use crate::error::{Error, HookRef, Location};
use crate::locate::Target;
use crate::marker;
use crate::parse::parse_snippet;
use crate::pattern::{Depth, Pattern};
use crate::source::SourceFile;
use crate::syntax::{is_identifier, kind};
use crate::template::{Bindings, Template};

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
pub struct Selector {
    /// The pattern statements must match.
    pub pattern: Pattern,
    /// Which matches to use.
    pub nth: Nth,
    /// How deep to look.
    pub depth: Depth,
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
    Before(Selector),
    /// After the selected statements.
    After(Selector),
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
        selector: Selector,
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

/// A validated hook.
#[derive(Clone, Debug)]
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
    /// Where the hook is written in the spec.
    pub location: Location,
}

/// A validated recipe: metadata, variables and hooks in order.
#[derive(Clone, Debug)]
pub struct Recipe {
    /// Recipe id, written into every marker.
    pub id: String,
    /// One-line description.
    pub summary: String,
    /// Notes for the user (launch flags, caveats).
    pub notes: Vec<String>,
    /// Template variables.
    pub vars: BTreeMap<String, String>,
    /// The hooks, in the order they are planned.
    pub hooks: Vec<Hook>,
    /// Class selectors (`[select.NAME]`), in the order written; hooks name them in `in`.
    pub selectors: Vec<ClassSelector>,
}

/// Classes chosen by what they are, not by name: a `[select.NAME]` table.
///
/// ```toml
/// [select.capturing]
/// entries = true                              # the classes a module lists in `EntryClass`
/// has-method = "set_eagle3_layers_to_capture" # that define or inherit this method
///
/// [select.backbone]
/// held-by = "capturing"                       # held by such a class (`self.ATTR = ...`)
/// via = ["model", "language_model"]           # through these attributes, at any depth
/// assigns = "layers_to_capture"               # the first held class setting `self.layers_to_capture`
/// ```
///
/// A selector without `held-by` is a root: its classes are what a caller can pick from
/// (`--arch`). Draft models (Eagle, NextN, MTP... in the class or file name) are never selected
/// as roots. Resolution lives in [`crate::project::select`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassSelector {
    /// The name hooks use in `in = { class = NAME }`.
    pub name: String,
    /// Only classes listed in some module's `EntryClass`.
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

// ---- serde mirror types -------------------------------------------------------------------

#[derive(Deserialize)]
#[cfg_attr(feature = "serde", derive(schemars::JsonSchema), schemars(rename = "Spec"))]
#[serde(deny_unknown_fields)]
struct RawSpec {
    recipe: RawRecipe,
    #[serde(default)]
    vars: BTreeMap<String, String>,
    #[serde(default, rename = "hook")]
    #[cfg_attr(feature = "serde", schemars(with = "Vec<RawHook>"))]
    hooks: Vec<Spanned<RawHook>>,
    /// Class selectors (`[select.NAME]`) that hooks name in `in = { class = "NAME", ... }`.
    #[serde(default)]
    #[cfg_attr(feature = "serde", schemars(with = "BTreeMap<String, RawSelect>"))]
    select: BTreeMap<String, Spanned<RawSelect>>,
}

/// A class selector: classes chosen by what they are, not by name.
#[derive(Deserialize)]
#[cfg_attr(feature = "serde", derive(schemars::JsonSchema), schemars(rename = "Select"))]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawSelect {
    /// Only `EntryClass` classes.
    #[serde(default)]
    entries: bool,
    /// Only classes defining or inheriting this method.
    has_method: Option<String>,
    /// Classes left out by name.
    exclude: Option<Vec<String>>,
    /// The holder selector.
    held_by: Option<String>,
    /// Attributes to follow.
    via: Option<Vec<String>>,
    /// Stop at the class assigning `self.<assigns>`.
    assigns: Option<String>,
}

/// `in = "A.f"` or `in = { class = "backbone", method = "forward" }`.
#[derive(Deserialize)]
#[cfg_attr(feature = "serde", derive(schemars::JsonSchema), schemars(rename = "In"))]
#[serde(untagged)]
enum RawIn {
    Path(String),
    Select(RawSelectIn),
}

/// A hook's target chosen by a selector: the selected classes, or a method that runs for them.
#[derive(Deserialize)]
#[cfg_attr(feature = "serde", derive(schemars::JsonSchema), schemars(rename = "SelectIn"))]
#[serde(deny_unknown_fields)]
struct RawSelectIn {
    class: String,
    method: Option<String>,
}

#[derive(Deserialize)]
#[cfg_attr(feature = "serde", derive(schemars::JsonSchema), schemars(rename = "RecipeTable"))]
#[serde(deny_unknown_fields)]
struct RawRecipe {
    /// Recipe id: letters, digits, `-`, `_`, `.`.
    id: String,
    /// One line.
    summary: String,
    #[serde(default)]
    notes: Vec<String>,
}

#[derive(Deserialize)]
#[cfg_attr(feature = "serde", derive(schemars::JsonSchema), schemars(rename = "Hook"))]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawHook {
    /// Unique id within the recipe.
    id: String,
    /// One line for reports.
    summary: String,
    /// Target path, or `module`.
    #[serde(rename = "in")]
    target: Option<RawIn>,
    /// Imports to make sure of.
    ensure_imports: Option<Vec<String>>,
    /// Insertion anchor.
    at: Option<RawAt>,
    /// Code for `at` and `replace`.
    code: Option<String>,
    /// Template around `{value}` for every return.
    wrap_returns: Option<String>,
    /// Leave returns inside statements matching this pattern alone.
    unless_inside: Option<String>,
    /// Pattern of statements to replace by `code`.
    replace: Option<String>,
    /// Which matches `replace` uses.
    nth: Option<Nth>,
    /// How deep `replace` looks.
    depth: Option<Depth>,
    /// Add this method to the target class, forwarding through `via`.
    add_forwarder: Option<String>,
    /// The attribute a forwarder calls through.
    via: Option<String>,
    /// Skip instead of failing when the target or anchor is absent.
    #[serde(default)]
    optional: bool,
    /// Apply only where the target contains a match.
    when: Option<String>,
    /// Paths that must exist, or the hook is skipped.
    #[serde(default)]
    requires: Vec<String>,
}

#[derive(Deserialize)]
#[cfg_attr(feature = "serde", derive(schemars::JsonSchema), schemars(rename = "At"))]
#[serde(untagged)]
enum RawAt {
    Named(String),
    Anchor(RawAnchor),
}

#[derive(Deserialize)]
#[cfg_attr(feature = "serde", derive(schemars::JsonSchema), schemars(rename = "Anchor"))]
#[serde(deny_unknown_fields)]
struct RawAnchor {
    before: Option<String>,
    after: Option<String>,
    #[serde(default)]
    nth: Nth,
    #[serde(default)]
    depth: Depth,
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
    /// [`Error::Spec`] at the TOML line and column, naming the hook, for syntax errors, unknown
    /// fields, missing or conflicting fields, duplicate ids, and code or patterns that do not parse.
    pub fn from_toml(name: &str, text: &str) -> Result<Recipe, Error> {
        Recipe::compile(name, text, true)
    }

    /// [`Recipe::from_toml`] for a spec bundled with the crate: its code is not parsed again
    /// on every load, because a test compiles every bundled spec with [`Recipe::from_toml`].
    pub(crate) fn from_bundled_toml(name: &str, text: &str) -> Result<Recipe, Error> {
        Recipe::compile(name, text, false)
    }

    /// Compiles a spec; `probe`: whether each hook's code is parsed to prove it is Python.
    fn compile(name: &str, text: &str, probe: bool) -> Result<Recipe, Error> {
        let file = SourceFile::new(name, text);
        let raw: RawSpec = toml::from_str(text).map_err(|err| {
            let offset = err.span().map_or(0, |span| span.start);
            let hook = enclosing_hook_id(text, offset);
            spec_error(&file, offset, err.message().trim().to_string(), hook.as_deref())
        })?;
        check_id(&file, &raw.recipe.id, 0, None)?;
        let recipe_key = |key: &str| key_offset(&file, &(0..text.len()), key);
        check_line(&file, &raw.recipe.summary, recipe_key("summary"), "summary", None)?;
        for note in &raw.recipe.notes {
            check_line(&file, note, recipe_key("notes"), "note", None)?;
        }
        for (name, value) in &raw.vars {
            if value.lines().any(marker::looks_like_marker) {
                let key = key_offset(&file, &(0..text.len()), name);
                let at = marker_offset(text, key..text.len()).unwrap_or(key);
                let message =
                    format!("variable `{name}` has a line that looks like a pysplice marker; the next run would take it for one");
                return Err(spec_error(&file, at, message, None));
            }
        }
        let selectors = compile_selectors(&file, raw.select)?;
        let mut hooks: Vec<Hook> = Vec::new();
        for spanned in raw.hooks {
            let span = spanned.span();
            let hook = compile_hook(&file, &raw.vars, &selectors, spanned.into_inner(), span, probe)?;
            if let Some(first) = hooks.iter().find(|h| h.id == hook.id) {
                let message = format!("duplicate hook id (first used at line {})", first.location.line);
                return Err(spec_error(&file, hook_offset(&file, &hook.id), message, Some(&hook.id)));
            }
            hooks.push(hook);
        }
        Ok(Recipe {
            id: raw.recipe.id,
            summary: raw.recipe.summary,
            notes: raw.recipe.notes,
            vars: raw.vars,
            hooks,
            selectors,
        })
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

fn compile_selectors(
    file: &SourceFile,
    raw: BTreeMap<String, Spanned<RawSelect>>,
) -> Result<Vec<ClassSelector>, Error> {
    let names: Vec<String> = raw.keys().cloned().collect();
    let mut out = Vec::new();
    for (name, spanned) in raw {
        let span = spanned.span();
        let table = file.text().find(&format!("[select.{name}]")).unwrap_or(span.start);
        let fail = |message: String| Error::Spec {
            location: file.location(table),
            message: format!("[select.{name}]: {message}"),
            hook: HookRef::default(),
        };
        if !is_identifier(&name.replace('-', "_")) {
            return Err(fail("the name must be letters, digits, `_` or `-`".into()));
        }
        let raw = spanned.into_inner();
        for text in raw
            .has_method
            .iter()
            .chain(&raw.assigns)
            .chain(raw.via.iter().flatten())
        {
            if !is_identifier(text) {
                return Err(fail(format!("`{text}` is not a Python name")));
            }
        }
        match &raw.held_by {
            None if !raw.entries && raw.has_method.is_none() => {
                return Err(fail(
                    "a root selector needs `entries = true` or `has-method`; a derived one `held-by`".into(),
                ))
            }
            None if raw.via.is_some() || raw.assigns.is_some() => {
                return Err(fail("`via` and `assigns` belong to `held-by`".into()))
            }
            Some(_) if raw.exclude.is_some() || raw.entries || raw.has_method.is_some() => {
                return Err(fail(
                    "`entries`, `has-method` and `exclude` belong to root selectors (without `held-by`)".into(),
                ))
            }
            Some(by) if !names.contains(by) => {
                return Err(fail(format!(
                    "`held-by = \"{by}\"` names no selector; the recipe has {}",
                    quoted_list(&names)
                )))
            }
            Some(by) if *by == name => return Err(fail("a selector cannot hold itself".into())),
            _ => {}
        }
        out.push(ClassSelector {
            name: name.clone(),
            entries: raw.entries,
            has_method: raw.has_method,
            exclude: raw.exclude.unwrap_or_default(),
            held_by: raw.held_by,
            via: raw.via.unwrap_or_default(),
            assigns: raw.assigns,
            location: file.location(table),
        });
    }
    // `held-by` chains must end in a root.
    for selector in &out {
        let mut at = selector;
        let mut seen = vec![at.name.as_str()];
        while let Some(by) = &at.held_by {
            if seen.contains(&by.as_str()) {
                return Err(Error::Spec {
                    location: selector.location.clone(),
                    message: format!(
                        "[select.{}]: `held-by` goes round in a circle ({})",
                        selector.name,
                        seen.join(" -> ")
                    ),
                    hook: HookRef::default(),
                });
            }
            seen.push(by);
            at = out.iter().find(|s| s.name == *by).expect("checked above");
        }
    }
    Ok(out)
}

fn quoted_list(names: &[String]) -> String {
    if names.is_empty() {
        return "no `[select.NAME]` table".into();
    }
    names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
}

fn spec_error(file: &SourceFile, offset: usize, message: String, hook: Option<&str>) -> Error {
    Error::Spec {
        location: file.location(offset),
        message,
        hook: HookRef(hook.map(str::to_string)),
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
        let message = format!("id `{id}` must be non-empty ASCII letters, digits, `-`, `_` or `.`");
        Err(spec_error(file, offset, message, hook))
    }
}

/// Summaries and notes are printed as lines: one line each, without control characters (which
/// could rewrite what a terminal shows).
fn check_line(file: &SourceFile, text: &str, offset: usize, what: &str, hook: Option<&str>) -> Result<(), Error> {
    match text.chars().find(|c| c.is_control()) {
        None => Ok(()),
        Some(c) => {
            let message = format!("the {what} must be one line without control characters (found {c:?})");
            Err(spec_error(file, offset, message, hook))
        }
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

fn compile_hook(
    file: &SourceFile,
    vars: &BTreeMap<String, String>,
    selectors: &[ClassSelector],
    raw: RawHook,
    span: Range<usize>,
    probe: bool,
) -> Result<Hook, Error> {
    let id = raw.id.clone();
    let at_key = |key: &str| key_offset(file, &span, key);
    let fail = |key: &str, message: String| spec_error(file, at_key(key), message, Some(&id));
    check_id(file, &raw.id, at_key("id"), Some(&id))?;
    check_line(file, &raw.summary, at_key("summary"), "summary", Some(&id))?;
    let pattern = |key: &str, text: &str| {
        Pattern::parse(text).map_err(|err| fail(key, format!("pattern `{text}` is not valid: {}", err.detail())))
    };
    let code = |key: &str, text: &str, wrap: bool| -> Result<Template, Error> {
        let template = Template::new(if wrap { text.trim().to_string() } else { dedent(text) });
        for (_, name) in template.placeholders() {
            let known = match name {
                "value" => wrap,
                _ => name.starts_with("param.") || vars.contains_key(name),
            };
            if !known {
                let message = if name == "value" {
                    "`{value}` (the returned value) exists only in `wrap-returns`".to_string()
                } else {
                    format!("`{{{name}}}` names no variable: define `{name}` in [vars], or write `{{{{{name}}}}}` for literal braces")
                };
                let at = placeholder_offset(file, &span, at_key(key), name);
                return Err(spec_error(file, at, message, Some(&id)));
            }
        }
        let params: Vec<String> = (0..16).map(|i| format!("__param_{i}__")).collect();
        let bindings = Bindings {
            value: Some("__value__"),
            params: &params,
        };
        let rendered = template.render(vars, &bindings);
        if rendered.lines().any(marker::looks_like_marker) {
            let at = marker_offset(file.text(), at_key(key)..span.end).unwrap_or(at_key(key));
            return Err(spec_error(
                file,
                at,
                "the code has a line that looks like a pysplice marker; the next run would take it for one".into(),
                Some(&id),
            ));
        }
        if probe {
            let probe = if wrap { format!("return {rendered}") } else { rendered };
            parse_snippet("<code>", &probe)
                .map_err(|err| fail(key, format!("code does not parse as Python: {}", err.detail())))?;
        }
        Ok(template)
    };

    let placements = [
        raw.ensure_imports.is_some(),
        raw.at.is_some(),
        raw.wrap_returns.is_some(),
        raw.replace.is_some(),
        raw.add_forwarder.is_some(),
    ];
    if placements.iter().filter(|&&p| p).count() != 1 {
        return Err(fail(
            "id",
            "a hook needs exactly one of `ensure-imports`, `at`, `wrap-returns`, `replace`, `add-forwarder`".into(),
        ));
    }
    let target = match &raw.target {
        None => Target::Module,
        Some(RawIn::Path(text)) => Target::parse(text, file.name()).map_err(|err| fail("in", err.detail()))?,
        Some(RawIn::Select(select)) => {
            if !selectors.iter().any(|s| s.name == select.class) {
                let names: Vec<String> = selectors.iter().map(|s| s.name.clone()).collect();
                return Err(fail(
                    "in",
                    format!(
                        "`class = \"{}\"` names no selector; the recipe has {}",
                        select.class,
                        quoted_list(&names)
                    ),
                ));
            }
            if let Some(method) = select.method.as_deref().filter(|m| !is_identifier(m)) {
                return Err(fail("in", format!("`method = \"{method}\"` is not a Python name")));
            }
            Target::Select {
                selector: select.class.clone(),
                method: select.method.clone(),
            }
        }
    };
    let is_module = target == Target::Module;
    let needs_code = raw.at.is_some() || raw.replace.is_some();
    if needs_code != raw.code.is_some() {
        let message = if needs_code {
            "`at` and `replace` need `code`"
        } else {
            "`code` is only used with `at` or `replace`"
        };
        return Err(fail("code", message.into()));
    }
    if raw.unless_inside.is_some() && raw.wrap_returns.is_none() {
        return Err(fail(
            "unless-inside",
            "`unless-inside` is only used with `wrap-returns`".into(),
        ));
    }
    if raw.via.is_some() != raw.add_forwarder.is_some() {
        return Err(fail("via", "`add-forwarder` and `via` go together".into()));
    }
    if (raw.nth.is_some() || raw.depth.is_some()) && raw.replace.is_none() {
        return Err(fail(
            "nth",
            "`nth` and `depth` belong to `replace` or inside `at = { ... }`".into(),
        ));
    }

    let action = if let Some(imports) = &raw.ensure_imports {
        if !is_module {
            return Err(fail("in", "`ensure-imports` works on the module; drop `in`".into()));
        }
        let lines = imports
            .iter()
            .map(|text| import_line(text).map_err(|message| fail("ensure-imports", message)))
            .collect::<Result<Vec<_>, _>>()?;
        Action::EnsureImports(lines)
    } else if let Some(at) = &raw.at {
        let at = match at {
            RawAt::Named(name) => match name.as_str() {
                "start" => Anchor::Start,
                "end" => Anchor::End,
                "after-imports" if is_module => Anchor::AfterImports,
                "after-imports" => return Err(fail("at", "`after-imports` is for `in = \"module\"`".into())),
                other => {
                    return Err(fail(
                        "at",
                        format!("unknown anchor `{other}`; use start, end, after-imports, {{ before = PATTERN }} or {{ after = PATTERN }}"),
                    ))
                }
            },
            RawAt::Anchor(anchor) => match (&anchor.before, &anchor.after) {
                (Some(text), None) => Anchor::Before(Selector {
                    pattern: pattern("at", text)?,
                    nth: anchor.nth,
                    depth: anchor.depth,
                }),
                (None, Some(text)) => Anchor::After(Selector {
                    pattern: pattern("at", text)?,
                    nth: anchor.nth,
                    depth: anchor.depth,
                }),
                _ => return Err(fail("at", "`at = { ... }` needs exactly one of `before` and `after`".into())),
            },
        };
        Action::Insert {
            at,
            code: code("code", raw.code.as_deref().unwrap_or_default(), false)?,
        }
    } else if let Some(text) = &raw.wrap_returns {
        if is_module {
            return Err(fail("in", "`wrap-returns` needs a function target".into()));
        }
        let template = code("wrap-returns", text, true)?;
        if !template.mentions("value") {
            return Err(fail(
                "wrap-returns",
                "the template must use `{value}` (the returned value)".into(),
            ));
        }
        let unless_inside = match &raw.unless_inside {
            Some(text) => Some(pattern("unless-inside", text)?),
            None => None,
        };
        Action::WrapReturns {
            template,
            unless_inside,
        }
    } else if let Some(text) = &raw.replace {
        Action::Replace {
            selector: Selector {
                pattern: pattern("replace", text)?,
                nth: raw.nth.unwrap_or_default(),
                depth: raw.depth.unwrap_or_default(),
            },
            code: code("code", raw.code.as_deref().unwrap_or_default(), false)?,
        }
    } else {
        let method = raw.add_forwarder.clone().unwrap_or_default();
        let via = raw.via.clone().unwrap_or_default();
        for name in [&method, &via] {
            if !is_identifier(name) {
                return Err(fail("add-forwarder", format!("`{name}` is not a Python name")));
            }
        }
        if is_module {
            return Err(fail("in", "`add-forwarder` needs a class target".into()));
        }
        Action::AddForwarder { method, via }
    };

    // Module code has no function around it, so no parameters to name.
    if let (true, Action::Insert { code, .. } | Action::Replace { code, .. }) = (is_module, &action) {
        if let Some((_, name)) = code.placeholders().into_iter().find(|(_, n)| n.starts_with("param.")) {
            let at = placeholder_offset(file, &span, at_key("code"), name);
            return Err(spec_error(
                file,
                at,
                format!("`{{{name}}}` names a parameter, but the hook's target is the module"),
                Some(&id),
            ));
        }
    }
    let when = match &raw.when {
        Some(text) => Some(pattern("when", text)?),
        None => None,
    };
    for path in &raw.requires {
        Target::parse(path, file.name()).map_err(|err| fail("requires", err.detail()))?;
    }
    Ok(Hook {
        id: raw.id,
        summary: raw.summary,
        target,
        action,
        optional: raw.optional,
        when,
        requires: raw.requires,
        location: file.location(at_key("id")),
    })
}

/// The offset of `{name}` in the spec text of a hook, from `from` (the key that holds it).
fn placeholder_offset(file: &SourceFile, span: &Range<usize>, from: usize, name: &str) -> usize {
    let needle = format!("{{{name}}}");
    let text = file.text();
    let window = text.get(from..span.end).unwrap_or_default();
    window
        .match_indices(&needle)
        .find(|(i, _)| !window[..*i].ends_with('{'))
        .map_or(from, |(i, _)| from + i)
}

/// The offset of the first marker-like text (see [`marker::marker_like_offset`]) in `range` of
/// `text`.
fn marker_offset(text: &str, range: Range<usize>) -> Option<usize> {
    let start = range.start;
    text.get(range)
        .and_then(marker::marker_like_offset)
        .map(|at| start + at)
}

/// Parses one `ensure-imports` entry: `os`, `numpy as np`, `import a.b`, `from a import b as c`.
fn import_line(text: &str) -> Result<ImportLine, String> {
    let text = text.trim();
    if text.contains(['\n', '\r']) {
        return Err(format!(
            "`{text}` spans several lines; write one import per entry, on one line"
        ));
    }
    let statement = if text.starts_with("import ") || text.starts_with("from ") {
        text.to_string()
    } else {
        format!("import {text}")
    };
    let bad = || format!("`{text}` is not one import of one name (`os`, `a as b`, `from a import b`)");
    let stmts = parse_snippet("<import>", &statement).map_err(|_| bad())?;
    let [stmt] = stmts.as_slice() else { return Err(bad()) };
    let names = stmt.field("names").map(|n| n.children()).unwrap_or_default();
    let [alias] = names else { return Err(bad()) };
    let name = alias.label().unwrap_or_default().to_string();
    if name == "*" {
        return Err(bad());
    }
    let asname = alias.asname().map(str::to_string);
    match stmt.kind() {
        kind::IMPORT => Ok(ImportLine {
            statement,
            from: None,
            name,
            alias: asname,
        }),
        kind::IMPORT_FROM => Ok(ImportLine {
            statement,
            from: Some(stmt.label().unwrap_or_default().to_string()),
            name,
            alias: asname,
        }),
        _ => Err(bad()),
    }
}

/// Removes the common leading whitespace of non-blank lines and surrounding blank lines.
pub(crate) fn dedent(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().position(|l| !l.trim().is_empty()).unwrap_or(lines.len());
    let end = lines
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .map_or(start, |i| i + 1);
    let body = &lines[start..end];
    let common = body
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start_matches([' ', '\t']).len())
        .min()
        .unwrap_or(0);
    let out: Vec<&str> = body
        .iter()
        .map(|l| {
            // Blank lines may be shorter, or start with other (non-ASCII) whitespace.
            let ascii_indent = l.len() - l.trim_start_matches([' ', '\t']).len();
            if ascii_indent >= common {
                &l[common..]
            } else {
                l.trim_start()
            }
        })
        .collect();
    out.join("\n")
}

/// The JSON Schema (draft 7) of the TOML hook spec, for editors (taplo, Even Better TOML): checked
/// in as `schemas/hook-spec.schema.json`.
#[cfg(feature = "serde")]
#[must_use]
pub fn spec_schema() -> schemars::schema::RootSchema {
    let mut schema = schemars::schema_for!(RawSpec);
    let metadata = schema.schema.metadata();
    metadata.title = Some("pysplice hook spec".to_string());
    metadata.description = Some("A recipe: `[recipe]`, optional `[vars]`, and `[[hook]]` tables.".to_string());
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        Recipe::from_toml("s.toml", text).unwrap_err().to_string()
    }

    const HEAD: &str = "[recipe]\nid = \"r\"\nsummary = \"s\"\n";

    #[test]
    fn unknown_fields_point_at_the_toml() {
        let e = err(&format!(
            "{HEAD}\n[[hook]]\nid = \"h\"\nsummary = \"x\"\nin = \"A.f\"\nat = \"end\"\ncode = \"x\"\ncolour = 1\n"
        ));
        assert!(
            e.starts_with("s.toml:11:1: bad spec: unknown field `colour`") && e.ends_with("[hook h]"),
            "{e}"
        );
    }

    #[test]
    fn bad_code_and_patterns_name_the_hook() {
        let e = err(&format!(
            "{HEAD}[[hook]]\nid = \"h\"\nsummary = \"x\"\nin = \"A.f\"\nat = \"end\"\ncode = \"x = (\"\n"
        ));
        assert!(
            e.starts_with("s.toml:9:1: bad spec: code does not parse") && e.ends_with("[hook h]"),
            "{e}"
        );
        let e = err(&format!(
            "{HEAD}[[hook]]\nid = \"h\"\nsummary = \"x\"\nin = \"A.f\"\nat = {{ after = \"x = \" }}\ncode = \"y\"\n"
        ));
        assert!(
            e.contains("pattern `x = ` is not valid") && e.contains("[hook h]"),
            "{e}"
        );
    }

    #[test]
    fn placement_must_be_single_and_complete() {
        let e = err(&format!("{HEAD}[[hook]]\nid = \"h\"\nsummary = \"x\"\nin = \"A.f\"\n"));
        assert!(e.contains("exactly one of"), "{e}");
        let e = err(&format!(
            "{HEAD}[[hook]]\nid = \"h\"\nsummary = \"x\"\nin = \"A.f\"\nwrap-returns = \"f(1)\"\n"
        ));
        assert!(e.contains("must use `{value}`"), "{e}");
        let e = err(&format!(
            "{HEAD}[[hook]]\nid = \"h\"\nsummary = \"x\"\nensure-imports = [\"a, b\"]\n"
        ));
        assert!(e.contains("is not one import"), "{e}");
        let twice = "[[hook]]\nid = \"h\"\nsummary = \"x\"\nensure-imports = [\"os\"]\n";
        let e = err(&format!("{HEAD}{twice}{twice}"));
        assert!(e.contains("duplicate hook id"), "{e}");
    }

    #[test]
    fn selectors_are_validated_with_their_table_and_hook() {
        let sel = "[select.top]\nentries = true\nhas-method = \"capture\"\n";
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
        let e = err(&format!("{HEAD}{sel}{}", hook("{ class = \"tops\" }")));
        assert!(
            e.starts_with("s.toml:10:1: bad spec:")
                && e.contains("`class = \"tops\"` names no selector; the recipe has `top`")
                && e.ends_with("[hook h]"),
            "{e}"
        );
        let e = err(&format!("{HEAD}{sel}{}", hook("{ class = \"top\", method = \"a.b\" }")));
        assert!(e.contains("`method = \"a.b\"` is not a Python name"), "{e}");
        let e = err(&format!("{HEAD}[select.top]\nvia = [\"model\"]\n"));
        assert!(
            e.starts_with("s.toml:4:1: bad spec: [select.top]: a root selector needs"),
            "{e}"
        );
        let e = err(&format!("{HEAD}{sel}[select.inner]\nheld-by = \"nowhere\"\n"));
        assert!(
            e.starts_with("s.toml:7:1: bad spec: [select.inner]: `held-by = \"nowhere\"` names no selector"),
            "{e}"
        );
        let e = err(&format!(
            "{HEAD}[select.a]\nheld-by = \"b\"\n[select.b]\nheld-by = \"a\"\n"
        ));
        assert!(e.contains("goes round in a circle (a -> b)"), "{e}");
        let e = err(&format!(
            "{HEAD}{sel}[select.inner]\nheld-by = \"top\"\nexclude = [\"X\"]\n"
        ));
        assert!(e.contains("belong to root selectors"), "{e}");
        let e = err(&format!("{HEAD}[select.top]\nentries = true\ncolour = 1\n"));
        assert!(e.starts_with("s.toml:6:1: bad spec: unknown field `colour`"), "{e}");
    }

    #[test]
    fn imports_parse_in_all_forms() {
        let i = import_line("numpy as np").unwrap();
        assert_eq!((i.statement.as_str(), i.bound_name()), ("import numpy as np", "np"));
        let i = import_line("from ..a import b").unwrap();
        assert_eq!((i.from.as_deref(), i.bound_name()), (Some("..a"), "b"));
        assert_eq!(import_line("os.path").unwrap().bound_name(), "os");
    }

    #[test]
    fn dedent_keeps_relative_indentation() {
        assert_eq!(dedent("\n    if x:\n        y\n\n    z\n"), "if x:\n    y\n\nz");
        assert_eq!(dedent("   x = 1\n\u{a0}\u{a0}\n   y = 2"), "x = 1\n\ny = 2");
    }
}
