//! The TOML shape of a recipe, as serde reads it (and the JSON schema describes it), before
//! any validation.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use crate::pattern::Depth;
use crate::template::StringCapture;

use super::Nth;

#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "serde", derive(schemars::JsonSchema), schemars(rename = "Spec"))]
#[serde(deny_unknown_fields)]
pub(super) struct RawSpec {
    pub(super) recipe: RawRecipe,
    #[serde(default)]
    pub(super) vars: BTreeMap<String, String>,
    #[serde(default, rename = "hook")]
    #[cfg_attr(feature = "serde", schemars(with = "Vec<RawHook>"))]
    pub(super) hooks: Vec<Spanned<RawHook>>,
    /// Class selectors (`[select.NAME]`) that hooks name in `in = { class = "NAME", ... }`.
    #[serde(default)]
    #[cfg_attr(feature = "serde", schemars(with = "BTreeMap<String, RawSelect>"))]
    pub(super) select: BTreeMap<String, Spanned<RawSelect>>,
    /// The code base's conventions that selectors rely on (`[conventions]`).
    #[serde(default)]
    pub(super) conventions: RawConventions,
}

/// What a code base's own conventions say about its classes (see
/// [`crate::spec::Conventions`]).
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "serde", derive(schemars::JsonSchema), schemars(rename = "Conventions"))]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawConventions {
    /// The module-level variable whose value lists a module's entry classes (with
    /// `entry-list = "ENTRY"`, `ENTRY = [A, B]`); needed by `entries = true`.
    pub(super) entry_list: Option<String>,
    /// Name parts (compared lower-case) that mark draft classes: a class whose name or file
    /// contains one is never a root selector's class.
    #[serde(default)]
    pub(super) draft_markers: Vec<String>,
}

/// A class selector: classes chosen by what they are, not by name.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "serde", derive(schemars::JsonSchema), schemars(rename = "Select"))]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawSelect {
    /// Only classes that a module lists in its entry list (the variable `[conventions]
    /// entry-list` names).
    #[serde(default)]
    pub(super) entries: bool,
    /// Only classes defining or inheriting this method.
    pub(super) has_method: Option<String>,
    /// Classes left out by name.
    pub(super) exclude: Option<Vec<String>>,
    /// The holder selector.
    pub(super) held_by: Option<String>,
    /// Attributes to follow.
    pub(super) via: Option<Vec<String>>,
    /// Stop at the class assigning `self.<assigns>`.
    pub(super) assigns: Option<String>,
}

/// `in = "A.f"` or `in = { class = "backbone", method = "forward" }`.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "serde", derive(schemars::JsonSchema), schemars(rename = "In"))]
#[serde(untagged)]
pub(super) enum RawIn {
    Path(String),
    Select(RawSelectIn),
}

/// A hook's target chosen by a selector: the selected classes, or a method that runs for them.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "serde", derive(schemars::JsonSchema), schemars(rename = "SelectIn"))]
#[serde(deny_unknown_fields)]
pub(super) struct RawSelectIn {
    pub(super) class: String,
    pub(super) method: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "serde", derive(schemars::JsonSchema), schemars(rename = "RecipeTable"))]
#[serde(deny_unknown_fields)]
pub(super) struct RawRecipe {
    /// Recipe id: letters, digits, `-`, `_`, `.`.
    pub(super) id: String,
    /// One line.
    pub(super) summary: String,
    #[serde(default)]
    pub(super) notes: Vec<String>,
    /// The files of a folder run the recipe is for: path globs (`**/modeling_llama.py`, `*`
    /// and `?` within a segment, `**` across) or dotted module names
    /// (`transformers.models.llama.modeling_llama`), neither anchored at the folder run. Absent:
    /// every `.py` file.
    #[serde(default)]
    pub(super) files: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "serde", derive(schemars::JsonSchema), schemars(rename = "Hook"))]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawHook {
    /// Unique id within the recipe.
    pub(super) id: String,
    /// One line for reports.
    pub(super) summary: String,
    /// Target path, or `module`.
    #[serde(rename = "in")]
    pub(super) target: Option<RawIn>,
    /// Imports to make sure of.
    pub(super) ensure_imports: Option<Vec<String>>,
    /// Insertion anchor.
    pub(super) at: Option<RawAt>,
    /// Code for `at` and `replace`: `{name}` from `[vars]`, `{param.N}` (`param.0` the bound
    /// `self`/`cls`, `param.1` the first argument a caller passes), `{param.args}`,
    /// `{param.kwargs}`, and `{$NAME}` / `{$NAME!r}` for what the hook's pattern captured as
    /// `$NAME` (its source text / as a string literal).
    pub(super) code: Option<String>,
    /// Code taken from Python files beside the recipe, after `code` (which is then optional):
    /// each entry a `file` (relative to the recipe's folder, never leaving it) with `def = NAME`
    /// (that top-level `def`, `async def` or `class`, decorators and trailing comments
    /// included), `body = NAME` (that function's body, dedented by 4 spaces, its parameters
    /// after the first written as `{param.N}`) or neither (the whole file). The parts are
    /// joined by two blank lines.
    #[cfg_attr(feature = "serde", schemars(with = "Option<Vec<RawCodeFrom>>"))]
    pub(super) code_from: Option<Vec<Spanned<RawCodeFrom>>>,
    /// Template around `{value}` for every return (`{$NAME}`: what `when` captured).
    pub(super) wrap_returns: Option<String>,
    /// Leave returns inside statements matching this pattern alone.
    pub(super) unless_inside: Option<String>,
    /// Pattern of statements to replace by `code`; what it captures is `{$NAME}` in the code,
    /// match by match.
    pub(super) replace: Option<String>,
    /// Which matches `replace` uses: `first` (the default), `last` or `all`.
    pub(super) nth: Option<Nth>,
    /// How deep `replace` looks: `nested` (the default; never inside nested defs or classes)
    /// or `top`.
    pub(super) depth: Option<Depth>,
    /// Add this method to the target class, forwarding through `via`.
    pub(super) add_forwarder: Option<String>,
    /// The attribute a forwarder calls through.
    pub(super) via: Option<String>,
    /// Skip instead of failing when the target or anchor is absent.
    #[serde(default)]
    pub(super) optional: bool,
    /// Apply only where the target contains a match; what its first match captures is
    /// `{$NAME}` in the code (where the placement's own pattern does not bind `$NAME`).
    pub(super) when: Option<String>,
    /// Paths that must exist, or the hook is skipped.
    #[serde(default)]
    pub(super) requires: Vec<String>,
    /// What a capture (`{$NAME}`) inside a string literal of the code becomes: `escape` (the
    /// default: escaped for that literal, which then holds the captured text as it is) or
    /// `refuse` (the hook is refused where the text would need escaping). A raw literal escapes
    /// nothing: where it cannot hold the text, the hook is refused either way.
    pub(super) capture_in_string: Option<StringCapture>,
}

/// One `code-from` entry: a Python file beside the recipe, or one definition of it.
#[derive(Clone, Debug, Deserialize)]
#[cfg_attr(feature = "serde", derive(schemars::JsonSchema), schemars(rename = "CodeFrom"))]
#[serde(deny_unknown_fields)]
pub(super) struct RawCodeFrom {
    /// The Python file, relative to the recipe's folder (`/`-separated; never absolute, never
    /// leaving the folder).
    pub(super) file: String,
    /// A top-level `def`, `async def` or `class` of the file: its text from its first decorator
    /// to its last line, comments at the end of its body included.
    #[serde(rename = "def")]
    pub(super) definition: Option<String>,
    /// A top-level function of the file whose signature fits its `def` line: its body,
    /// dedented by 4 spaces, each parameter after the first written as `{param.N}`.
    pub(super) body: Option<String>,
}

#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "serde", derive(schemars::JsonSchema), schemars(rename = "At"))]
#[serde(untagged)]
pub(super) enum RawAt {
    Named(String),
    Anchor(RawAnchor),
}

#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "serde", derive(schemars::JsonSchema), schemars(rename = "Anchor"))]
#[serde(deny_unknown_fields)]
pub(super) struct RawAnchor {
    /// Before the statements matching this pattern; what it captures is `{$NAME}` in the code.
    pub(super) before: Option<String>,
    /// After the statements matching this pattern; what it captures is `{$NAME}` in the code.
    pub(super) after: Option<String>,
    /// Which matches: `first` (the default), `last` or `all` (the code at each, rendered with
    /// that match's captures).
    #[serde(default)]
    pub(super) nth: Nth,
    /// How deep to look: `nested` (the default; never inside nested defs or classes) or `top`.
    #[serde(default)]
    pub(super) depth: Depth,
}
