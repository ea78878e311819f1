//! The typed reasons of the error kinds this module owns: [`SpecReason`] (with
//! [`SelectorProblem`]) of [`ErrorKind::Spec`](crate::ErrorKind::Spec), [`BuilderReason`] of
//! [`ErrorKind::Builder`](crate::ErrorKind::Builder), [`PlacementReason`] of
//! [`ErrorKind::Placement`](crate::ErrorKind::Placement) and [`SelectionReason`] of
//! [`ErrorKind::Selection`](crate::ErrorKind::Selection) (the marker's and the verifier's reasons
//! live with the modules that raise them): a caller tells reasons apart by variant, never by
//! message text. Each reason's `Display` is the part of the kind's message that says why.

use crate::location::Location;
use crate::syntax::Depth;

/// Why a required hook cannot be placed ([`ErrorKind::Placement`](crate::ErrorKind::Placement)).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlacementReason {
    /// The docstring the code would follow ends on a line that holds more code.
    #[error("the docstring shares its line with other code")]
    DocstringSharesLine,
    /// The last statement of the body ends on a line that holds more code.
    #[error("the body's last statement shares its line with other code")]
    BodyEndSharesLine,
    /// The module's last statement ends on a line that holds more code.
    #[error("the module's last statement shares its line with other code")]
    ModuleEndSharesLine,
    /// The statement before the module-level insertion point ends on a line that holds more code.
    #[error("the statement before the insertion point shares its line")]
    PreviousSharesLine,
    /// The anchor statement shares its line with other code.
    #[error("the anchor statement shares its line with other code")]
    AnchorSharesLine,
    /// The statement a `replace` hook replaces shares its line with other code.
    #[error("the statement to replace shares its line with other code")]
    ReplacedSharesLine,
    /// Two return statements the hook wraps share one line.
    #[error("two return statements share line {line}; put them on lines of their own")]
    ReturnsShareLine {
        /// 1-based line of both returns.
        line: usize,
    },
    /// A docstring shares its line with other statements of a one-line suite.
    #[error("a docstring shares its line with other statements")]
    OneLineDocstring,
    /// The colon that opens a one-line suite cannot be found.
    #[error("cannot find the colon of this one-line suite")]
    NoSuiteColon,
    /// `after-imports` was asked of a definition, not the module.
    #[error("`after-imports` is for the module")]
    AfterImportsInDefinition,
    /// No statement of the body matches the hook's statement pattern.
    #[error("no statement {} matches `{pattern}`", depth_words(*depth))]
    NoMatch {
        /// Where the pattern was looked for.
        depth: Depth,
        /// The pattern as written.
        pattern: String,
    },
    /// The anchor statement is an `elif` branch.
    #[error("the anchor is an `elif` branch, which cannot be split from its `if`; anchor on the whole `if` or inside the branch")]
    ElifAnchor,
    /// Two hooks wrap the same return statement.
    #[error("hooks `{first}` and `{second}` both wrap this return")]
    BothWrap {
        /// One hook.
        first: String,
        /// The other hook.
        second: String,
    },
    /// An import the hook ensures would rebind a name the module binds otherwise.
    #[error("`{import}` would shadow `{name}`, which the module already binds differently")]
    Shadows {
        /// The import statement.
        import: String,
        /// The name it binds.
        name: String,
    },
    /// A forwarder hook targets something that is not a class.
    #[error("`{path}` is not a class")]
    NotAClass {
        /// The target's path.
        path: String,
    },
    /// A forwarder's `via` attribute is never assigned in the class.
    #[error("`{path}` never assigns `self.{via}`")]
    NeverAssigns {
        /// The class's path.
        path: String,
        /// The attribute.
        via: String,
    },
    /// The placement needs a class or function target and has the module.
    #[error("this placement needs a definition target")]
    NeedsDefinition,
    /// The code names a parameter the target does not have: `{param.N}` past the target's
    /// named parameters (`*args` and `**kwargs` are not counted).
    #[error("the template uses `{{param.{index}}}` but the target has {} after the bound one (`*args` and `**kwargs` are not counted; use `{{param.args}}`, `{{param.kwargs}}`)", crate::printable::counted(*count, "named parameter", "named parameters"))]
    MissingParameter {
        /// The parameter index the template uses.
        index: usize,
        /// How many named parameters the target has after the bound one.
        count: usize,
    },
    /// `{param.0}` on a target no call binds a parameter of: a `@staticmethod` or a function.
    #[error("the template uses `{{param.0}}` (the bound `self` or `cls`) but `{path}` is a {what} and has none; `{{param.1}}` is its first parameter")]
    NoBoundParameter {
        /// The target's path.
        path: String,
        /// `static method` or `function`.
        what: &'static str,
    },
    /// `{param.args}` or `{param.kwargs}` on a target without that parameter.
    #[error("the template uses `{{param.{key}}}` but the target has no `{stars}` parameter", stars = if key == "args" { "*args" } else { "**kwargs" })]
    MissingStarParameter {
        /// `args` or `kwargs`.
        key: String,
    },
    /// Code filled in with what a pattern captured holds a line that looks like a marker
    /// comment (a captured comment), which would confuse the next read of the file.
    #[error("the code, with `{{${name}}}` filled in with what the pattern captured, has a line that looks like a marker comment")]
    CapturedMarker {
        /// The capture's name.
        name: String,
    },
    /// A capture lands inside a string literal of the code, and the literal cannot hold its
    /// text as written: the hook says `capture-in-string = "refuse"`, or the literal is raw
    /// (which escapes nothing).
    #[error("`{{${name}}}` lands inside a string literal of the code, and the captured text would end or change that literal as written (the hook refuses to escape it there, or the literal is raw); write `{{${name}!r}}` for the capture as a string literal of its own")]
    CaptureInString {
        /// The capture's name.
        name: String,
    },
    /// A `wrap-returns` target has no return statement to wrap (`left_alone` returns were left
    /// alone: inside `unless-inside`, or bare returns of a generator).
    #[error("`{path}` has no return statement to wrap{}", left_alone_words(*left_alone))]
    NoReturn {
        /// The target's path.
        path: String,
        /// Returns that were left alone on purpose.
        left_alone: usize,
    },
    /// The recipe's selectors choose no target for the hook in this file.
    #[error("the selection finds nothing: {why}")]
    SelectsNothing {
        /// Why not: no class chosen, no target, or why each chosen class was skipped.
        why: String,
    },
}

fn depth_words(depth: Depth) -> &'static str {
    match depth {
        Depth::Top => "at the top level of the body",
        Depth::Nested => "in the body",
    }
}

fn left_alone_words(left_alone: usize) -> String {
    if left_alone == 0 {
        String::new()
    } else if left_alone == 1 {
        ": its 1 return is inside `unless-inside` or is a bare return of a generator, which is left alone".to_string()
    } else {
        format!(": its {left_alone} returns are inside `unless-inside` or are bare returns of a generator, which are left alone")
    }
}

/// What is wrong with a recipe built in code ([`ErrorKind::Builder`](crate::ErrorKind::Builder)),
/// in the builder's terms: the calls of [`crate::RecipeBuilder`] and [`crate::HookBuilder`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuilderReason {
    /// A call that sets one value was made twice (the recipe would depend on their order).
    #[error("{call} is called twice; call it once")]
    Twice {
        /// The call (`.code(...)`).
        call: &'static str,
    },
    /// The hook has no placement.
    #[error("the hook needs a placement: call one of .at(...), .replace(...), .wrap_returns(...), .ensure_imports(...), .add_forwarder(...)")]
    NoPlacement,
    /// The hook has two placements.
    #[error("the hook has two placements, {first} and {second}: keep one")]
    TwoPlacements {
        /// The first of them, in the order of the builder's calls.
        first: &'static str,
        /// The second.
        second: &'static str,
    },
    /// A call that goes only with another.
    #[error("{call} is only used with {with}")]
    Alone {
        /// The call made (`.unless_inside(...)`).
        call: &'static str,
        /// What it goes with.
        with: &'static str,
    },
    /// A placement that needs a target, without `.target(...)`.
    #[error("{placement} needs {what}: call .target(...)")]
    NeedsTarget {
        /// The placement (`.wrap_returns(...)`).
        placement: &'static str,
        /// What it needs (`a function`).
        what: &'static str,
    },
    /// A placement for the module, with `.target(...)`.
    #[error("{placement} works on the module: drop .target(...)")]
    ModuleOnly {
        /// The placement (`.ensure_imports(...)`).
        placement: &'static str,
    },
    /// A rule a TOML recipe follows too, broken the same way: the one reason of both forms
    /// (`.at(...)` without `.code(...)` is [`SpecReason::CodeMissing`], as `at` without `code`
    /// is), said in the builder's terms. [`SpecReason::DuplicateHook`] has line 0 here.
    #[error("{}", builder_words(.0))]
    Rule(SpecReason),
    /// The value given to a call is refused by the rule a TOML recipe follows too.
    #[error("{call}{}", refused_words(reason))]
    Refused {
        /// The call (`.code(...)`, `Hook::builder(id, ..)`).
        call: &'static str,
        /// The rule's reason, as a TOML recipe would be told.
        reason: SpecReason,
    },
}

/// A rule both forms of a recipe follow ([`BuilderReason::Rule`]), in the builder's terms.
fn builder_words(reason: &SpecReason) -> String {
    match reason {
        SpecReason::CodeMissing => "the placement needs code: call .code(...)".to_string(),
        SpecReason::CodeUnused => ".code(...) is only used with .at(...) or .replace(...)".to_string(),
        SpecReason::UnknownVariable { name } => format!(
            "`{{{name}}}` names no variable: call .var(\"{name}\", ...) on the recipe, or write `{{{{{name}}}}}` for literal braces"
        ),
        SpecReason::ValueOutsideWrap => "`{value}` (the returned value) exists only in .wrap_returns(...)".to_string(),
        SpecReason::DuplicateHook { .. } => "another hook of the recipe has this id".to_string(),
        other => other.to_string(),
    }
}

/// The reason of [`BuilderReason::Refused`] after its call (none when the cause says it all).
fn refused_words(reason: &SpecReason) -> String {
    match reason {
        SpecReason::Value => String::new(),
        reason => format!(": {reason}"),
    }
}

/// What is wrong with a hook spec ([`ErrorKind::Spec`](crate::ErrorKind::Spec)); the error's
/// location is the key or table at fault.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecReason {
    /// The TOML reader refuses the text (syntax, unknown field, wrong type); the position is the
    /// error's location.
    #[error("{message}")]
    Toml {
        /// The TOML reader's message.
        message: String,
    },
    /// The value has an error of its own (a bad target path, code too long), which is the spec
    /// error's cause and says it all.
    #[error("")]
    Value,
    /// A recipe or hook id with other characters than those a marker can hold.
    #[error("id `{id}` must be non-empty ASCII letters, digits, `-`, `_` or `.`")]
    BadId {
        /// The id as written.
        id: String,
    },
    /// A summary or note with a line break or another control character.
    #[error("the {what} must be one line without control characters (found {found:?})")]
    NotOneLine {
        /// `summary` or `note`.
        what: &'static str,
        /// The first control character.
        found: char,
    },
    /// A `[vars]` value with a line that looks like a pysplice marker.
    #[error("variable `{name}` has a line that looks like a pysplice marker; the next run would take it for one")]
    MarkerLikeVariable {
        /// The variable.
        name: String,
    },
    /// An empty entry in `[recipe] files`.
    #[error("an entry of `files` is empty; give a path glob (`**/modeling_llama.py`) or a module name")]
    EmptyFileGlob,
    /// Code with a line that looks like a pysplice marker.
    #[error("the code has a line that looks like a pysplice marker; the next run would take it for one")]
    MarkerLikeCode,
    /// Two hooks with one id.
    #[error("duplicate hook id (first used at line {first_line})")]
    DuplicateHook {
        /// 1-based line of the first hook with the id.
        first_line: usize,
    },
    /// A `[select.NAME]` table is wrong.
    #[error("[select.{name}]: {problem}")]
    ClassSelector {
        /// The selector's name.
        name: String,
        /// What is wrong with it.
        problem: SelectorProblem,
    },
    /// `[conventions] entry-list` is not a Python name.
    #[error("[conventions]: entry-list `{name}` is not a Python name")]
    EntryListNotAName {
        /// The value as written.
        name: String,
    },
    /// A hook has none or several of the placements.
    #[error("a hook needs exactly one of `ensure-imports`, `at`, `wrap-returns`, `replace`, `add-forwarder`")]
    PlacementCount,
    /// `in = { class = NAME }` names no selector.
    #[error("`class = \"{class}\"` names no selector; the recipe has {}", selector_list(known))]
    UnknownSelector {
        /// The name as written.
        class: String,
        /// The recipe's selectors.
        known: Vec<String>,
    },
    /// `in = { method = NAME }` is not a Python name.
    #[error("`method = \"{method}\"` is not a Python name")]
    MethodNotAName {
        /// The value as written.
        method: String,
    },
    /// `at` or `replace` without `code`.
    #[error("`at` and `replace` need `code`")]
    CodeMissing,
    /// `code` without `at` or `replace`.
    #[error("`code` is only used with `at` or `replace`")]
    CodeUnused,
    /// `unless-inside` without `wrap-returns`.
    #[error("`unless-inside` is only used with `wrap-returns`")]
    UnlessInsideAlone,
    /// `add-forwarder` without `via`, or `via` without `add-forwarder`.
    #[error("`add-forwarder` and `via` go together")]
    ForwarderVia,
    /// `nth` or `depth` outside `replace` and `at = { ... }`.
    #[error("`nth` and `depth` belong to `replace` or inside `at = {{ ... }}`")]
    NthDepthAlone,
    /// `ensure-imports` with an `in` target.
    #[error("`ensure-imports` works on the module; drop `in`")]
    ImportsNeedModule,
    /// An `ensure-imports` entry on several lines.
    #[error("`{text}` spans several lines; write one import per entry, on one line")]
    ImportSpansLines {
        /// The entry.
        text: String,
    },
    /// An `ensure-imports` entry that is not one import of one name.
    #[error("`{text}` is not one import of one name (`os`, `a as b`, `from a import b`)")]
    NotOneImport {
        /// The entry (trimmed).
        text: String,
    },
    /// `wrap-returns` on the module.
    #[error("`wrap-returns` needs a function target")]
    WrapNeedsFunction,
    /// A `wrap-returns` template without `{value}`.
    #[error("the template must use `{{value}}` (the returned value)")]
    WrapNeedsValue,
    /// An `add-forwarder` method or `via` attribute that is not a Python name.
    #[error("`{name}` is not a Python name")]
    ForwarderNotAName {
        /// The value as written.
        name: String,
    },
    /// `add-forwarder` on the module.
    #[error("`add-forwarder` needs a class target")]
    ForwarderNeedsClass,
    /// `at = "after-imports"` for a definition.
    #[error("`after-imports` is for `in = \"module\"`")]
    AfterImportsNeedsModule,
    /// An `at` name that is no anchor.
    #[error(
        "unknown anchor `{anchor}`; use start, end, after-imports, {{ before = PATTERN }} or {{ after = PATTERN }}"
    )]
    UnknownAnchor {
        /// The name as written.
        anchor: String,
    },
    /// `at = { ... }` with none or both of `before` and `after`.
    #[error("`at = {{ ... }}` needs exactly one of `before` and `after`")]
    AnchorSides,
    /// `{value}` outside `wrap-returns`.
    #[error("`{{value}}` (the returned value) exists only in `wrap-returns`")]
    ValueOutsideWrap,
    /// A placeholder that names no variable.
    #[error("`{{{name}}}` names no variable: define `{name}` in [vars], or write `{{{{{name}}}}}` for literal braces")]
    UnknownVariable {
        /// The placeholder's name.
        name: String,
    },
    /// A `{param.N}` placeholder in code for the module.
    #[error("`{{{name}}}` names a parameter, but the hook's target is the module")]
    ParameterInModule {
        /// The placeholder's name (`param.0`).
        name: String,
    },
    /// A pattern that does not parse (the cause says why).
    #[error("pattern `{text}` is not valid")]
    InvalidPattern {
        /// The pattern as written.
        text: String,
    },
    /// A `$$$NAME` that occurs twice in one pattern (or also as `$NAME`).
    #[error("`{name}` occurs more than once in pattern `{text}`; a named sequence is captured once, never compared")]
    RepeatedSequence {
        /// The pattern as written.
        text: String,
        /// The sequence as written (`$$$ARGS`).
        name: String,
    },
    /// A `{$NAME}` placeholder whose name the hook's patterns do not bind.
    #[error(
        "`{{${name}}}` names no metavariable of the hook's patterns ({})",
        bound_words(bound)
    )]
    UnboundCapture {
        /// The capture's name (without `$`).
        name: String,
        /// The names the hook's patterns bind.
        bound: Vec<String>,
    },
    /// A `{$NAME}` placeholder in a hook without a pattern to capture it.
    #[error("`{{${name}}}` uses what a pattern captured, but the hook has no pattern (`at = {{ before | after = PATTERN }}`, `replace` or `when`)")]
    CaptureWithoutPattern {
        /// The capture's name (without `$`).
        name: String,
    },
    /// A pattern of several statements.
    #[error("a pattern is exactly one statement or expression; `{text}` has {count}")]
    PatternNotOneStatement {
        /// The pattern as written.
        text: String,
        /// How many statements it has.
        count: usize,
    },
    /// Code that does not parse as Python (the cause says why).
    #[error("code does not parse as Python")]
    CodeUnparsable,
    /// A `code-from` entry of a hook cannot give its code; the location is the entry in the
    /// recipe, the problem says what is wrong (and where in the code file, when it is there).
    #[error("code-from `{file}`: {problem}")]
    CodeFrom {
        /// The entry's `file`, as written.
        file: String,
        /// What is wrong.
        problem: CodeFromProblem,
    },
    /// `builtin:NAME` names no recipe of the catalogue the caller passed.
    #[error("no builtin recipe `{name}`; {}", known_builtins(known))]
    UnknownBuiltin {
        /// The name asked for (after `builtin:`).
        name: String,
        /// The catalogue's names, each with its `builtin:` prefix.
        known: Vec<String>,
    },
}

/// The names of a catalogue, as [`SpecReason::UnknownBuiltin`] says them.
fn known_builtins(known: &[String]) -> String {
    if known.is_empty() {
        "there are no builtin recipes".to_string()
    } else {
        format!("the builtin recipes are {}", known.join(", "))
    }
}

/// What is wrong with a `code-from` entry of a hook ([`SpecReason::CodeFrom`]). Where the
/// problem is inside the code file, `at` is that place (the file's name is the recipe's folder
/// joined with the entry's path); the error itself points at the entry in the recipe.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodeFromProblem {
    /// The recipe was read without its folder ([`Recipe::from_toml`](crate::Recipe::from_toml)),
    /// so no code file can be found.
    #[error("the recipe was read without its folder, so its code files cannot be found; read it from its file (`Recipe::from_file`) or with its folder (`Recipe::from_toml_with`)")]
    NeedsFolder,
    /// The path is absolute.
    #[error("the path is absolute; name the file relative to the recipe's folder")]
    Absolute,
    /// The path leads out of the recipe's folder: through `..`, or a symbolic link that points
    /// elsewhere. Nothing was read.
    #[error("the path leads out of the recipe's folder (through `..` or a symbolic link); code files are read from the recipe's folder and below only")]
    OutsideFolder,
    /// The file cannot be read (missing, a directory, ...); the cause is the reading's error.
    #[error("the file cannot be read")]
    Unreadable,
    /// The file is not UTF-8 text (or declares another encoding); the cause says where and why.
    #[error("the file is not UTF-8 text ({at})")]
    NotText {
        /// The first bad byte, or the encoding declaration.
        at: Location,
    },
    /// The file is not valid Python; the cause is the parser's error.
    #[error("{at}: the file does not parse as Python")]
    Unparsable {
        /// Where the parser stopped.
        at: Location,
    },
    /// An entry names both `def` and `body`.
    #[error("an entry takes `def` or `body`, not both")]
    DefAndBody,
    /// `def` or `body` names nothing the file defines at its top level.
    #[error(
        "`{key} = \"{name}\"`: the file defines no top-level `def`, `async def` or `class` of that name{}",
        defined_words(defined)
    )]
    NotDefined {
        /// `def` or `body`.
        key: &'static str,
        /// The name as written.
        name: String,
        /// The names of the file's top-level definitions.
        defined: Vec<String>,
    },
    /// `body` names a class or an `async def`: it takes the body of a plain function, which
    /// a method's code can run as written.
    #[error("`body = \"{name}\"` names a class or an `async def`; `body` takes the body of a plain `def` (`def` takes a whole definition)")]
    BodyNeedsFunction {
        /// The definition's name.
        name: String,
    },
    /// `body` names a function whose signature does not end on its `def` line.
    #[error("{at}: the signature of `{name}` spans several lines; `body` needs it on the `def` line, ending with `:`")]
    SignatureSpansLines {
        /// The function's name.
        name: String,
        /// Its `def` line.
        at: Location,
    },
    /// A line of the body that `body` takes is not indented by 4 spaces.
    #[error("{at}: the line is not indented by 4 spaces; `body` takes a body indented by exactly 4 spaces")]
    NotIndented {
        /// The line.
        at: Location,
    },
}

/// The names a code file defines, as [`CodeFromProblem::NotDefined`] says them.
fn defined_words(defined: &[String]) -> String {
    if defined.is_empty() {
        " (it defines none)".to_string()
    } else {
        format!(" (it defines {})", defined.join(", "))
    }
}

/// What is wrong with a `[select.NAME]` table ([`SpecReason::ClassSelector`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SelectorProblem {
    /// The name has other characters than letters, digits, `_` or `-`.
    #[error("the name must be letters, digits, `_` or `-`")]
    BadName,
    /// A `has-method`, `assigns` or `via` value that is not a Python name.
    #[error("`{text}` is not a Python name")]
    NotAName {
        /// The value as written.
        text: String,
    },
    /// A root selector that chooses nothing.
    #[error("a root selector needs `entries = true` or `has-method`; a derived one `held-by`")]
    RootChoosesNothing,
    /// `via` or `assigns` in a root selector.
    #[error("`via` and `assigns` belong to `held-by`")]
    DerivedKeysInRoot,
    /// `entries`, `has-method` or `exclude` in a derived selector.
    #[error("`entries`, `has-method` and `exclude` belong to root selectors (without `held-by`)")]
    RootKeysInDerived,
    /// `held-by` names no selector.
    #[error("`held-by = \"{by}\"` names no selector; the recipe has {}", selector_list(known))]
    UnknownHolder {
        /// The name as written.
        by: String,
        /// The recipe's selectors.
        known: Vec<String>,
    },
    /// `held-by` names the selector itself.
    #[error("a selector cannot hold itself")]
    HoldsItself,
    /// `entries = true` without `[conventions] entry-list`.
    #[error("`entries = true` needs the variable that lists entry classes: `[conventions] entry-list = \"NAME\"`")]
    EntriesWithoutList,
    /// `held-by` chains that come back to this selector.
    #[error("`held-by` goes round in a circle ({})", chain.join(" -> "))]
    Circle {
        /// The selectors of the circle, from this one.
        chain: Vec<String>,
    },
}

/// The metavariables a hook's patterns bind, for a message.
fn bound_words(names: &[String]) -> String {
    if names.is_empty() {
        return "they bind none".into();
    }
    let names: Vec<String> = names.iter().map(|n| format!("`${n}`")).collect();
    format!("they bind {}", names.join(", "))
}

/// The recipe's selector names for a message, quoted, or that it has none.
fn selector_list(names: &[String]) -> String {
    if names.is_empty() {
        return "no `[select.NAME]` table".into();
    }
    names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
}

/// Why a class asked for by name has no answer ([`ErrorKind::Selection`](crate::ErrorKind::Selection)).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SelectionReason {
    /// The class is none of those the recipe's root selectors choose.
    #[error(
        "`{}` is none of the classes this recipe selects{}",
        crate::printable::shown(name),
        crate::suggest::did_you_mean(closest)
    )]
    NotSelected {
        /// The name asked for.
        name: String,
        /// The closest names that are selected, best first.
        closest: Vec<String>,
    },
    /// Every class of that name is selected but skipped.
    #[error("`{name}` cannot be patched: {why}")]
    CannotPatch {
        /// The name asked for.
        name: String,
        /// Why it is skipped.
        why: String,
    },
    /// A reason of a recipe catalogue (architecture selection, a model's `config.json`), in its
    /// own words.
    #[error("{0}")]
    Catalogue(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts of one read in the singular, others in the plural.
    #[test]
    fn counts_agree_with_their_nouns() {
        let missing = |count| PlacementReason::MissingParameter { index: 3, count }.to_string();
        assert!(missing(1).contains("has 1 named parameter after"), "{}", missing(1));
        assert!(missing(0).contains("has 0 named parameters after"), "{}", missing(0));
        assert_eq!(
            left_alone_words(1),
            ": its 1 return is inside `unless-inside` or is a bare return of a generator, which is left alone"
        );
        assert!(left_alone_words(2).starts_with(": its 2 returns are inside"));
    }

    /// The reasons whose text has braces or quotes read as the messages always have.
    #[test]
    fn spec_reasons_with_braces_read_as_before() {
        let name = || "x".to_string();
        let cases = [
            (
                SpecReason::ValueOutsideWrap,
                "`{value}` (the returned value) exists only in `wrap-returns`",
            ),
            (
                SpecReason::WrapNeedsValue,
                "the template must use `{value}` (the returned value)",
            ),
            (
                SpecReason::NthDepthAlone,
                "`nth` and `depth` belong to `replace` or inside `at = { ... }`",
            ),
            (
                SpecReason::AnchorSides,
                "`at = { ... }` needs exactly one of `before` and `after`",
            ),
            (
                SpecReason::AfterImportsNeedsModule,
                "`after-imports` is for `in = \"module\"`",
            ),
            (
                SpecReason::UnknownVariable { name: name() },
                "`{x}` names no variable: define `x` in [vars], or write `{{x}}` for literal braces",
            ),
            (
                SpecReason::ParameterInModule { name: name() },
                "`{x}` names a parameter, but the hook's target is the module",
            ),
            (
                SpecReason::UnknownAnchor { anchor: name() },
                "unknown anchor `x`; use start, end, after-imports, { before = PATTERN } or { after = PATTERN }",
            ),
            (
                SpecReason::UnknownSelector {
                    class: name(),
                    known: Vec::new(),
                },
                "`class = \"x\"` names no selector; the recipe has no `[select.NAME]` table",
            ),
            (SpecReason::Value, ""),
        ];
        for (reason, text) in cases {
            assert_eq!(reason.to_string(), text);
        }
        let problem = SelectorProblem::EntriesWithoutList.to_string();
        assert_eq!(
            problem,
            "`entries = true` needs the variable that lists entry classes: `[conventions] entry-list = \"NAME\"`"
        );
    }
}
