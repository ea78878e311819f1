//! Recipes built in code ([`Recipe::builder`], [`Hook::builder`]): the same fields as a TOML
//! recipe, with typed placements ([`Anchor`], [`Pattern`], [`Nth`], [`Depth`]), checked by the
//! same rules when [`RecipeBuilder::build`] compiles them, and refused in the builder's terms
//! ([`ErrorKind::Builder`]): the call at fault, never a place in a TOML text.
//!
//! What a TOML recipe can say, the builder says too: `[recipe] files` ([`RecipeBuilder::files`]),
//! `[conventions]` ([`RecipeBuilder::conventions`]), `[select.NAME]` tables
//! ([`RecipeBuilder::selector`] with a [`ClassSelector`]) and hooks in the classes they choose
//! (`in = { class, method }`: [`HookBuilder::select`]).
//!
//! The calls can come in any order: each one sets its own field, a field set twice is an error
//! (so the recipe never depends on which call came last), and `.nth`/`.depth` apply to the
//! hook's pattern whichever call gave it.

use std::collections::BTreeMap;

use toml::Spanned;

use crate::error::{BuilderReason, Error, ErrorKind, SpecReason};
use crate::location::Location;
use crate::pattern::{Depth, Pattern};
use crate::source::SourceFile;

use super::raw::{RawAnchor, RawAt, RawConventions, RawHook, RawIn, RawSelect, RawSelectIn, RawSpec};
use super::{Anchor, ClassSelector, Conventions, Hook, Nth, Recipe};
use crate::template::StringCapture;

/// A recipe being built in code; [`RecipeBuilder::build`] checks it.
#[derive(Debug)]
#[must_use]
pub struct RecipeBuilder {
    id: String,
    summary: String,
    notes: Vec<String>,
    files: Vec<String>,
    vars: BTreeMap<String, String>,
    conventions: Option<Conventions>,
    selectors: Vec<ClassSelector>,
    hooks: Vec<HookBuilder>,
    /// The first call made twice.
    twice: Option<&'static str>,
}

/// Where a built hook works: a path, or the classes of a selector.
#[derive(Debug)]
enum In {
    Path(String),
    Select { class: String, method: Option<String> },
}

/// A hook being built in code, for [`RecipeBuilder::hook`]. Its fields are those of a
/// `[[hook]]` table (`in` is [`HookBuilder::target`]); placements are typed.
#[derive(Debug)]
#[must_use]
pub struct HookBuilder {
    id: String,
    summary: String,
    target: Option<In>,
    /// Every placement given, with the call that gave it (one is right).
    placements: Vec<(&'static str, Placement)>,
    code: Option<String>,
    nth: Option<Nth>,
    depth: Option<Depth>,
    unless_inside: Option<Pattern>,
    when: Option<Pattern>,
    optional: bool,
    requires: Vec<String>,
    capture_in_string: Option<StringCapture>,
    /// The first call made twice.
    twice: Option<&'static str>,
}

/// What a hook does, as the builder's calls give it.
#[derive(Debug)]
enum Placement {
    At(Anchor),
    Replace(Pattern),
    WrapReturns(String),
    EnsureImports(Vec<String>),
    AddForwarder { method: String, via: String },
}

const AT: &str = ".at(...)";
const REPLACE: &str = ".replace(...)";
const WRAP: &str = ".wrap_returns(...)";
const IMPORTS: &str = ".ensure_imports(...)";
const FORWARDER: &str = ".add_forwarder(...)";
const CODE: &str = ".code(...)";
const TARGET: &str = ".target(...) or .select(...)";
const SELECTOR: &str = ".selector(...)";

/// Sets `slot` to `value`, noting `call` in `twice` when it was set already.
fn set<T>(slot: &mut Option<T>, value: T, call: &'static str, twice: &mut Option<&'static str>) {
    if slot.replace(value).is_some() {
        twice.get_or_insert(call);
    }
}

impl Recipe {
    /// A recipe built in code, with the id written into every marker and a one-line summary.
    ///
    /// ```
    /// use pysplice::{apply, Anchor, Hook, Nth, Pattern, Recipe, SourceFile};
    ///
    /// let recipe = Recipe::builder("demo", "Count calls")
    ///     .var("attr", "calls")
    ///     .hook(
    ///         Hook::builder("count", "Counted calls of Model.forward")
    ///             .target("Model.forward")
    ///             .at(Anchor::Start)
    ///             .code("self.{attr} = getattr(self, '{attr}', 0) + 1"),
    ///     )
    ///     .hook(
    ///         Hook::builder("seen", "Noted each return")
    ///             .nth(Nth::All) // any order: it applies to the anchor's pattern
    ///             .code("self.seen = True")
    ///             .at(Anchor::before(Pattern::parse("return $X")?))
    ///             .target("Model.forward"),
    ///     )
    ///     .build()?;
    /// let file = SourceFile::new("m.py", "class Model:\n    def forward(self, x):\n        return x\n");
    /// let patched = apply(&recipe, file)?;
    /// assert!(patched.output().contains("        self.calls = getattr(self, 'calls', 0) + 1\n"));
    ///
    /// // Errors name the hook and the call: a placement needs code.
    /// let err = Recipe::builder("demo", "Log")
    ///     .hook(Hook::builder("log", "Logged").target("Model.forward").at(Anchor::End))
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.to_string(), "hook \"log\": the placement needs code: call .code(...)");
    /// # Ok::<(), pysplice::Error>(())
    /// ```
    pub fn builder(id: &str, summary: &str) -> RecipeBuilder {
        RecipeBuilder {
            id: id.to_string(),
            summary: summary.to_string(),
            notes: Vec::new(),
            files: Vec::new(),
            vars: BTreeMap::new(),
            conventions: None,
            selectors: Vec::new(),
            hooks: Vec::new(),
            twice: None,
        }
    }
}

impl RecipeBuilder {
    /// Adds a note for the user (`notes` in TOML), after those added so far.
    pub fn note(mut self, note: &str) -> RecipeBuilder {
        self.notes.push(note.to_string());
        self
    }

    /// Adds files of a folder run the recipe is for (`[recipe] files` in TOML), after those added
    /// so far: path globs (`**/modeling_llama.py`) or dotted module names; without any, every
    /// `.py` file.
    pub fn files<I: IntoIterator<Item = S>, S: Into<String>>(mut self, globs: I) -> RecipeBuilder {
        self.files.extend(globs.into_iter().map(Into::into));
        self
    }

    /// Sets the code base's conventions the selectors rely on (`[conventions]` in TOML): which
    /// variable lists entry classes, which name parts mark draft classes.
    pub fn conventions(mut self, conventions: Conventions) -> RecipeBuilder {
        set(&mut self.conventions, conventions, ".conventions(...)", &mut self.twice);
        self
    }

    /// Adds a class selector (`[select.NAME]` in TOML), which hooks name in
    /// [`HookBuilder::select`]; once per name.
    ///
    /// ```
    /// use pysplice::{Anchor, ClassSelector, Conventions, Hook, Recipe};
    ///
    /// let recipe = Recipe::builder("demo", "Mark the models that capture")
    ///     .files(["**/models/*.py"])
    ///     .conventions(Conventions::default().with_entry_list("ENTRY"))
    ///     .selector(ClassSelector::root("capturing").entries().has_method("capture"))
    ///     .selector(ClassSelector::held_by("backbone", "capturing").via(["model"]))
    ///     .hook(
    ///         Hook::builder("mark", "Marked the backbone")
    ///             .select("backbone", Some("__init__"))
    ///             .at(Anchor::End)
    ///             .code("self.marked = True"),
    ///     )
    ///     .build()?;
    /// assert_eq!(recipe.files, ["**/models/*.py"]);
    /// assert_eq!(recipe.selector("backbone").unwrap().held_by.as_deref(), Some("capturing"));
    /// assert!(recipe.selects());
    /// # Ok::<(), pysplice::Error>(())
    /// ```
    pub fn selector(mut self, selector: ClassSelector) -> RecipeBuilder {
        if self.selectors.iter().any(|s| s.name == selector.name) {
            self.twice.get_or_insert(".selector(...) for one name");
        }
        self.selectors.push(selector);
        self
    }

    /// Sets the template variable `name` (`[vars]` in TOML); once per name.
    pub fn var(mut self, name: &str, value: &str) -> RecipeBuilder {
        if self.vars.insert(name.to_string(), value.to_string()).is_some() {
            self.twice.get_or_insert(".var(name, ...) for one name");
        }
        self
    }

    /// Adds a hook after those added so far (hooks are planned in this order).
    pub fn hook(mut self, hook: HookBuilder) -> RecipeBuilder {
        self.hooks.push(hook);
        self
    }

    /// The recipe, checked as [`Recipe::from_toml`] checks a TOML recipe.
    ///
    /// # Errors
    /// [`ErrorKind::Builder`] naming the hook ([`Error::hook`]; the recipe when no hook is at
    /// fault) and the call to change, at [`Location::nowhere`]: a call made twice, a hook
    /// without a placement or with two, a placement without the code or target it needs, and
    /// what [`Recipe::from_toml`] refuses in a value (an id, code that does not parse, a
    /// placeholder naming no variable, ...), that error's own cause kept as the source.
    pub fn build(self) -> Result<Recipe, Error> {
        let recipe = self.id.clone();
        let fail = |hook: Option<&str>, reason: BuilderReason, cause: Option<Box<Error>>| {
            let err = ErrorKind::Builder {
                recipe: recipe.clone(),
                reason,
                cause,
            }
            .at(Location::nowhere());
            match hook {
                Some(id) => err.with_hook(id),
                None => err,
            }
        };
        if let Some(call) = self.twice {
            return Err(fail(None, BuilderReason::Twice { call }, None));
        }
        for hook in &self.hooks {
            hook.check().map_err(|reason| fail(Some(&hook.id), reason, None))?;
        }
        let mut raw = RawSpec::default();
        raw.recipe.id = self.id.clone();
        raw.recipe.summary = self.summary.clone();
        raw.recipe.notes = self.notes.clone();
        raw.recipe.files = self.files.clone();
        raw.vars = self.vars.clone();
        if let Some(conventions) = &self.conventions {
            raw.conventions = RawConventions {
                entry_list: conventions.entry_list.clone(),
                draft_markers: conventions.draft_markers.clone(),
            };
        }
        raw.select = self
            .selectors
            .iter()
            .map(|s| (s.name.clone(), Spanned::new(0..0, raw_select(s))))
            .collect();
        raw.hooks = self.hooks.iter().map(|h| Spanned::new(0..0, h.raw())).collect();
        // No text: the compiled rules' locations mean nothing here, their reasons are kept.
        let file = SourceFile::new("", "");
        let mut recipe = Recipe::compile(&file, raw, true).map_err(|err| {
            let hook = err.hook().map(str::to_string);
            let builder = hook.as_deref().and_then(|id| self.hooks.iter().find(|h| h.id == id));
            let (reason, cause) = translate(&err, builder);
            fail(hook.as_deref(), reason, cause)
        })?;
        for selector in &mut recipe.selectors {
            selector.location = Location::nowhere();
        }
        Ok(recipe)
    }
}

/// A rule of [`Recipe::compile`] broken by a built recipe (`hook` the builder at fault, if
/// any), in the builder's terms: the reason and the value's own error.
fn translate(err: &Error, hook: Option<&HookBuilder>) -> (BuilderReason, Option<Box<Error>>) {
    let ErrorKind::Spec { reason, cause } = err.kind() else {
        // Every rule reports a spec error; anything else is kept whole as the cause.
        let reason = SpecReason::Value;
        return (
            BuilderReason::Refused {
                call: ".build()",
                reason,
            },
            Some(Box::new(err.clone())),
        );
    };
    let code_call = hook.map_or(CODE, |h| {
        if h.placements.iter().any(|(call, _)| *call == WRAP) {
            WRAP
        } else {
            CODE
        }
    });
    let call = match reason {
        SpecReason::UnknownVariable { .. } | SpecReason::ValueOutsideWrap => {
            return (BuilderReason::Rule(reason.clone()), None);
        }
        SpecReason::DuplicateHook { .. } => {
            return (BuilderReason::Rule(SpecReason::DuplicateHook { first_line: 0 }), None);
        }
        SpecReason::BadId { .. } if hook.is_some() => "Hook::builder(id, ..)",
        SpecReason::BadId { .. } => "Recipe::builder(id, ..)",
        SpecReason::NotOneLine { what: "note", .. } => ".note(...)",
        SpecReason::NotOneLine { what: "file glob", .. } | SpecReason::EmptyFileGlob => ".files(...)",
        SpecReason::NotOneLine { .. } if hook.is_some() => "Hook::builder(.., summary)",
        SpecReason::NotOneLine { .. } => "Recipe::builder(.., summary)",
        SpecReason::MarkerLikeVariable { .. } => ".var(...)",
        SpecReason::EntryListNotAName { .. } => ".conventions(...)",
        SpecReason::ClassSelector { .. } => SELECTOR,
        SpecReason::UnknownSelector { .. } | SpecReason::MethodNotAName { .. } => ".select(...)",
        SpecReason::WrapNeedsValue => WRAP,
        SpecReason::NotOneImport { .. } | SpecReason::ImportSpansLines { .. } => IMPORTS,
        SpecReason::ForwarderNotAName { .. } => FORWARDER,
        SpecReason::InvalidPattern { .. } => ".when(...)",
        SpecReason::Value => match cause.as_deref().map(Error::kind) {
            Some(ErrorKind::BadPath { path, .. }) if hook.is_some_and(|h| h.requires.contains(path)) => {
                ".requires(...)"
            }
            Some(ErrorKind::BadPath { .. }) => ".target(...)",
            _ => code_call,
        },
        _ => code_call,
    };
    let reason = BuilderReason::Refused {
        call,
        reason: reason.clone(),
    };
    (reason, cause.clone())
}

impl Hook {
    /// A hook built in code, with its id (unique in the recipe) and a one-line summary; give it
    /// exactly one placement ([`HookBuilder::at`], [`HookBuilder::replace`],
    /// [`HookBuilder::wrap_returns`], [`HookBuilder::ensure_imports`],
    /// [`HookBuilder::add_forwarder`]).
    pub fn builder(id: &str, summary: &str) -> HookBuilder {
        HookBuilder {
            id: id.to_string(),
            summary: summary.to_string(),
            target: None,
            placements: Vec::new(),
            code: None,
            nth: None,
            depth: None,
            unless_inside: None,
            when: None,
            optional: false,
            requires: Vec::new(),
            capture_in_string: None,
            twice: None,
        }
    }
}

impl HookBuilder {
    /// The definition the hook works in (`in = "Class.method"`); the module when not given.
    pub fn target(mut self, path: &str) -> HookBuilder {
        set(&mut self.target, In::Path(path.to_string()), TARGET, &mut self.twice);
        self
    }

    /// Works in the classes that the recipe's selector `selector` chooses
    /// ([`RecipeBuilder::selector`]; `in = { class = "NAME" }` in TOML), or with `method`, in
    /// the method that runs for each of them (its own or a base's). In place of
    /// [`HookBuilder::target`].
    pub fn select(mut self, selector: &str, method: Option<&str>) -> HookBuilder {
        let target = In::Select {
            class: selector.to_string(),
            method: method.map(str::to_string),
        };
        set(&mut self.target, target, TARGET, &mut self.twice);
        self
    }

    /// Inserts [`HookBuilder::code`] at `anchor`: [`Anchor::Start`], [`Anchor::End`],
    /// [`Anchor::AfterImports`] (the module), [`Anchor::before`] or [`Anchor::after`] a pattern.
    pub fn at(self, anchor: Anchor) -> HookBuilder {
        self.place(AT, Placement::At(anchor))
    }

    /// Replaces the statements matching `pattern` by [`HookBuilder::code`].
    pub fn replace(self, pattern: Pattern) -> HookBuilder {
        self.place(REPLACE, Placement::Replace(pattern))
    }

    /// Which matches of the hook's pattern (of [`Anchor::before`], [`Anchor::after`] or
    /// [`HookBuilder::replace`]) are used; the first when not given.
    pub fn nth(mut self, nth: Nth) -> HookBuilder {
        set(&mut self.nth, nth, ".nth(...)", &mut self.twice);
        self
    }

    /// How deep the hook's pattern looks (as for [`HookBuilder::nth`]); at any depth of the
    /// body ([`Depth::Nested`]) when not given.
    pub fn depth(mut self, depth: Depth) -> HookBuilder {
        set(&mut self.depth, depth, ".depth(...)", &mut self.twice);
        self
    }

    /// The code an [`HookBuilder::at`] or [`HookBuilder::replace`] hook writes (a template over
    /// the recipe's variables and `{param.N}`).
    pub fn code(mut self, code: &str) -> HookBuilder {
        set(&mut self.code, code.to_string(), CODE, &mut self.twice);
        self
    }

    /// Makes sure the module has these imports (`os`, `numpy as np`, `from a import b`).
    pub fn ensure_imports<I: IntoIterator<Item = S>, S: Into<String>>(self, imports: I) -> HookBuilder {
        let imports = imports.into_iter().map(Into::into).collect();
        self.place(IMPORTS, Placement::EnsureImports(imports))
    }

    /// Wraps the value of every return of the target in `template` (around `{value}`).
    pub fn wrap_returns(self, template: &str) -> HookBuilder {
        self.place(WRAP, Placement::WrapReturns(template.to_string()))
    }

    /// Leaves alone the returns inside statements matching `pattern` (with
    /// [`HookBuilder::wrap_returns`]).
    pub fn unless_inside(mut self, pattern: Pattern) -> HookBuilder {
        set(&mut self.unless_inside, pattern, ".unless_inside(...)", &mut self.twice);
        self
    }

    /// Adds method `method` to the target class, forwarding to `self.<via>.<method>`.
    pub fn add_forwarder(self, method: &str, via: &str) -> HookBuilder {
        let placement = Placement::AddForwarder {
            method: method.to_string(),
            via: via.to_string(),
        };
        self.place(FORWARDER, placement)
    }

    /// What a capture (`{$NAME}`) inside a string literal of the code becomes
    /// (`capture-in-string`): escaped for the literal ([`StringCapture::Escape`], the default)
    /// or refused where it would need escaping ([`StringCapture::Refuse`]).
    pub fn capture_in_string(mut self, choice: StringCapture) -> HookBuilder {
        set(
            &mut self.capture_in_string,
            choice,
            ".capture_in_string(...)",
            &mut self.twice,
        );
        self
    }

    /// Skips the hook (with the reason) instead of failing where it cannot be placed.
    pub fn optional(mut self) -> HookBuilder {
        self.optional = true;
        self
    }

    /// Applies the hook only where the target holds a match of `pattern`.
    pub fn when(mut self, pattern: Pattern) -> HookBuilder {
        set(&mut self.when, pattern, ".when(...)", &mut self.twice);
        self
    }

    /// Skips the hook in files that do not define `path` (each call adds one).
    pub fn requires(mut self, path: &str) -> HookBuilder {
        self.requires.push(path.to_string());
        self
    }

    fn place(mut self, call: &'static str, placement: Placement) -> HookBuilder {
        if self.placements.iter().any(|(c, _)| *c == call) {
            self.twice.get_or_insert(call);
        }
        self.placements.push((call, placement));
        self
    }

    /// The rules the builder's calls must follow together, checked before the values are.
    fn check(&self) -> Result<(), BuilderReason> {
        if let Some(call) = self.twice {
            return Err(BuilderReason::Twice { call });
        }
        let (call, placement) = match self.placements.as_slice() {
            [] => return Err(BuilderReason::NoPlacement),
            [one] => one,
            [(first, _), (second, _), ..] => {
                let (first, second) = (*first, *second);
                return Err(BuilderReason::TwoPlacements { first, second });
            }
        };
        let takes_code = matches!(placement, Placement::At(_) | Placement::Replace(_));
        match (takes_code, self.code.is_some()) {
            (true, false) => return Err(BuilderReason::Rule(SpecReason::CodeMissing)),
            (false, true) => return Err(BuilderReason::Rule(SpecReason::CodeUnused)),
            _ => {}
        }
        if self.unless_inside.is_some() && *call != WRAP {
            let call = ".unless_inside(...)";
            return Err(BuilderReason::Alone { call, with: WRAP });
        }
        let has_pattern = matches!(
            placement,
            Placement::Replace(_) | Placement::At(Anchor::Before(_) | Anchor::After(_))
        );
        if !has_pattern {
            let with = ".at(Anchor::before(...)), .at(Anchor::after(...)) or .replace(...)";
            if self.nth.is_some() {
                return Err(BuilderReason::Alone {
                    call: ".nth(...)",
                    with,
                });
            }
            if self.depth.is_some() {
                return Err(BuilderReason::Alone {
                    call: ".depth(...)",
                    with,
                });
            }
        }
        let targeted = self.target.is_some();
        match placement {
            Placement::EnsureImports(_) if targeted => Err(BuilderReason::ModuleOnly { placement: IMPORTS }),
            Placement::At(Anchor::AfterImports) if targeted => Err(BuilderReason::ModuleOnly {
                placement: "Anchor::AfterImports",
            }),
            Placement::WrapReturns(_) if !targeted => Err(BuilderReason::NeedsTarget {
                placement: WRAP,
                what: "a function",
            }),
            Placement::AddForwarder { .. } if !targeted => Err(BuilderReason::NeedsTarget {
                placement: FORWARDER,
                what: "a class",
            }),
            _ => Ok(()),
        }
    }

    /// The `[[hook]]` table these calls make (checked by [`HookBuilder::check`]).
    fn raw(&self) -> RawHook {
        let mut raw = RawHook {
            id: self.id.clone(),
            summary: self.summary.clone(),
            target: self.target.as_ref().map(|target| match target {
                In::Path(path) => RawIn::Path(path.clone()),
                In::Select { class, method } => RawIn::Select(RawSelectIn {
                    class: class.clone(),
                    method: method.clone(),
                }),
            }),
            code: self.code.clone(),
            unless_inside: self.unless_inside.as_ref().map(|p| p.text().to_string()),
            optional: self.optional,
            when: self.when.as_ref().map(|p| p.text().to_string()),
            requires: self.requires.clone(),
            capture_in_string: self.capture_in_string,
            ..RawHook::default()
        };
        let Some((_, placement)) = self.placements.first() else {
            return raw;
        };
        match placement {
            Placement::At(anchor) => {
                raw.at = Some(match anchor {
                    Anchor::Start => RawAt::Named("start".into()),
                    Anchor::End => RawAt::Named("end".into()),
                    Anchor::AfterImports => RawAt::Named("after-imports".into()),
                    Anchor::Before(selector) | Anchor::After(selector) => {
                        let text = Some(selector.pattern.text().to_string());
                        let before = matches!(anchor, Anchor::Before(_));
                        RawAt::Anchor(RawAnchor {
                            before: if before { text.clone() } else { None },
                            after: if before { None } else { text },
                            nth: self.nth.unwrap_or(selector.nth),
                            depth: self.depth.unwrap_or(selector.depth),
                        })
                    }
                });
            }
            Placement::Replace(pattern) => {
                raw.replace = Some(pattern.text().to_string());
                raw.nth = self.nth;
                raw.depth = self.depth;
            }
            Placement::WrapReturns(template) => raw.wrap_returns = Some(template.clone()),
            Placement::EnsureImports(imports) => raw.ensure_imports = Some(imports.clone()),
            Placement::AddForwarder { method, via } => {
                raw.add_forwarder = Some(method.clone());
                raw.via = Some(via.clone());
            }
        }
        raw
    }
}

/// The `[select.NAME]` table of `selector`.
fn raw_select(selector: &ClassSelector) -> RawSelect {
    let some = |list: &Vec<String>| (!list.is_empty()).then(|| list.clone());
    RawSelect {
        entries: selector.entries,
        has_method: selector.has_method.clone(),
        exclude: some(&selector.exclude),
        held_by: selector.held_by.clone(),
        via: some(&selector.via),
        assigns: selector.assigns.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::SpecWarningKind;

    const TOML: &str = r#"
[recipe]
id = "r"
summary = "s"
notes = ["n"]
files = ["**/models/*.py", "pkg.mod"]

[vars]
name = "x"

[conventions]
entry-list = "ENTRY"
draft-markers = ["draft"]

[select.top]
entries = true
has-method = "capture"
exclude = ["Skip"]

[select.inner]
held-by = "top"
via = ["model", "lm"]
assigns = "layers"

[[hook]]
id = "imports"
summary = "i"
ensure-imports = ["os", "numpy as np"]

[[hook]]
id = "log"
summary = "l"
in = "Model.forward"
at = { after = "h = self.norm(h)", nth = "last" }
code = "print({name})"
optional = true
when = "h = self.norm(h)"
requires = ["Model"]

[[hook]]
id = "wrap"
summary = "w"
in = "Model.forward"
wrap-returns = "g({value})"
unless-inside = "if x: pass"

[[hook]]
id = "fwd"
summary = "f"
in = "Wrapper"
add-forwarder = "forward"
via = "inner"

[[hook]]
id = "swap"
summary = "r"
in = "Model.forward"
replace = "y = 1"
nth = "all"
depth = "top"
code = "y = 2"

[[hook]]
id = "mark"
summary = "m"
in = { class = "inner", method = "__init__" }
at = "end"
code = "self.marked = True"

[[hook]]
id = "whole"
summary = "c"
in = { class = "top" }
add-forwarder = "capture"
via = "model"
"#;

    fn pattern(text: &str) -> Pattern {
        Pattern::parse(text).unwrap()
    }

    fn built() -> RecipeBuilder {
        Recipe::builder("r", "s")
            .note("n")
            .files(["**/models/*.py"])
            .selector(
                ClassSelector::held_by("inner", "top")
                    .via(["model", "lm"])
                    .assigns("layers"),
            )
            .conventions(
                Conventions::default()
                    .with_entry_list("ENTRY")
                    .with_draft_markers(["draft"]),
            )
            .selector(
                ClassSelector::root("top")
                    .entries()
                    .has_method("capture")
                    .exclude(["Skip"]),
            )
            .files(["pkg.mod"])
            .var("name", "x")
            .hook(Hook::builder("imports", "i").ensure_imports(["os", "numpy as np"]))
            .hook(
                Hook::builder("log", "l")
                    .target("Model.forward")
                    .at(Anchor::after(pattern("h = self.norm(h)")))
                    .nth(Nth::Last)
                    .code("print({name})")
                    .optional()
                    .when(pattern("h = self.norm(h)"))
                    .requires("Model"),
            )
            .hook(
                Hook::builder("wrap", "w")
                    .target("Model.forward")
                    .wrap_returns("g({value})")
                    .unless_inside(pattern("if x: pass")),
            )
            .hook(
                Hook::builder("fwd", "f")
                    .target("Wrapper")
                    .add_forwarder("forward", "inner"),
            )
            .hook(
                Hook::builder("swap", "r")
                    .target("Model.forward")
                    .replace(pattern("y = 1"))
                    .nth(Nth::All)
                    .depth(Depth::Top)
                    .code("y = 2"),
            )
            .hook(
                Hook::builder("mark", "m")
                    .select("inner", Some("__init__"))
                    .at(Anchor::End)
                    .code("self.marked = True"),
            )
            .hook(
                Hook::builder("whole", "c")
                    .select("top", None)
                    .add_forwarder("capture", "model"),
            )
    }

    /// Compiled hooks hold patterns and templates without equality: compare what they show.
    fn shape(r: &Recipe) -> impl PartialEq + std::fmt::Debug {
        let hooks: Vec<String> = r
            .hooks
            .iter()
            .map(|h| {
                format!(
                    "{} {} {:?} {:?} {} {:?} {:?}",
                    h.id,
                    h.summary,
                    h.target,
                    h.action,
                    h.optional,
                    h.when.as_ref().map(Pattern::text),
                    h.requires
                )
            })
            .collect();
        let selectors: Vec<ClassSelector> = r
            .selectors
            .iter()
            .map(|s| ClassSelector {
                location: Location::nowhere(),
                ..s.clone()
            })
            .collect();
        (
            (r.id.clone(), r.summary.clone(), r.notes.clone(), r.files.clone()),
            (r.vars.clone(), r.conventions.clone(), selectors),
            hooks,
        )
    }

    #[test]
    fn a_built_recipe_is_the_toml_recipe() {
        let from_toml = Recipe::from_toml("r.toml", TOML).unwrap();
        let built = built().build().unwrap();
        assert_eq!(shape(&built), shape(&from_toml));
    }

    #[test]
    fn a_built_recipe_has_the_warnings_of_toml_nowhere() {
        let recipe = Recipe::builder("r", "s")
            .hook(
                Hook::builder("say", "s")
                    .target("f")
                    .at(Anchor::after(pattern("x = $V")))
                    .code("print('x is {$V}')")
                    .capture_in_string(StringCapture::Refuse),
            )
            .build()
            .unwrap();
        let warning = &recipe.warnings()[0];
        assert_eq!(warning.kind, SpecWarningKind::CaptureInString { name: "V".into() });
        assert!(!warning.location.is_somewhere());
        assert!(
            warning
                .to_string()
                .starts_with("hook \"say\": warning: `{$V}` is inside a string literal"),
            "{warning}"
        );
    }

    #[test]
    fn a_built_recipe_is_checked_like_toml_in_builder_terms() {
        let err = built()
            .hook(
                Hook::builder("bad", "b")
                    .target("Model.forward")
                    .at(Anchor::Start)
                    .code("x = ("),
            )
            .build()
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("hook \"bad\": .code(...): code does not parse as Python: invalid Python"),
            "{err}"
        );
        assert_eq!(err.hook(), Some("bad"));
        assert!(!err.location().is_somewhere());
        let err = built()
            .hook(Hook::builder("log", "again").at(Anchor::End).code("pass"))
            .build()
            .unwrap_err();
        assert_eq!(err.to_string(), "hook \"log\": another hook of the recipe has this id");
        // Selectors, conventions, files and selector targets: in builder terms too.
        let refused = |builder: RecipeBuilder| builder.build().unwrap_err().to_string();
        let text = refused(built().selector(ClassSelector::root("idle")));
        assert!(
            text.starts_with("recipe \"r\": .selector(...): [select.idle]: a root selector needs"),
            "{text}"
        );
        let text = refused(built().selector(ClassSelector::root("top").entries()));
        assert_eq!(
            text,
            "recipe \"r\": .selector(...) for one name is called twice; call it once"
        );
        let text = refused(Recipe::builder("r", "s").conventions(Conventions::default().with_entry_list("not a name")));
        assert!(text.starts_with("recipe \"r\": .conventions(...):"), "{text}");
        let text = refused(built().files([" "]));
        assert!(text.starts_with("recipe \"r\": .files(...):"), "{text}");
        let hook = Hook::builder("h", "s")
            .select("nowhere", None)
            .at(Anchor::End)
            .code("pass");
        let text = refused(built().hook(hook));
        assert!(
            text.starts_with("hook \"h\": .select(...): `class = \"nowhere\"` names no selector"),
            "{text}"
        );
        let hook = Hook::builder("h", "s")
            .target("A.f")
            .select("top", None)
            .at(Anchor::End)
            .code("pass");
        assert_eq!(
            refused(built().hook(hook)),
            "hook \"h\": .target(...) or .select(...) is called twice; call it once"
        );
        let err = Recipe::builder("bad id", "s").build().unwrap_err();
        assert_eq!(
            err.to_string(),
            "recipe \"bad id\": Recipe::builder(id, ..): id `bad id` must be non-empty ASCII letters, digits, `-`, `_` or `.`"
        );
    }
}
