//! The typed reasons of [`ErrorKind::Placement`](crate::ErrorKind::Placement),
//! [`ErrorKind::Verify`](crate::ErrorKind::Verify) and [`ErrorKind::Marker`](crate::ErrorKind::Marker):
//! a caller tells reasons apart by variant, never by message text. Each reason's `Display` is
//! the message the library has always shown.

use crate::pattern::Depth;

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
    /// The code names a parameter the target does not have.
    #[error("the template uses `{{param.{index}}}` but the target has {count} parameters")]
    MissingParameter {
        /// The parameter index the template uses.
        index: usize,
        /// How many parameters the target has.
        count: usize,
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
    } else {
        format!(": its {left_alone} return(s) are inside `unless-inside` or are bare returns of a generator, which are left alone")
    }
}

/// Which invariant a patched text broke ([`ErrorKind::Verify`](crate::ErrorKind::Verify)).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyReason {
    /// The patched text does not parse.
    #[error("the patched text does not parse: {message}")]
    Unparsable {
        /// The parse error, as shown.
        message: String,
    },
    /// CPython's compiler would refuse the patched file (and not the original).
    #[error("CPython would refuse the patched file: {message}")]
    CompilerRefuses {
        /// CPython's message (`'await' outside function`, ...).
        message: String,
    },
    /// Bytes outside the edited ranges changed.
    #[error("bytes outside the edited ranges changed")]
    OutsideChanged,
    /// Removing the marker lines does not give back the original text.
    #[error("removing the markers does not give back the original text")]
    NotReversible,
    /// Without the inserted statements the syntax tree is not the original's.
    #[error("without the inserted statements the syntax tree differs from the original")]
    TreeChanged,
}

/// What is wrong with a recipe's marked blocks ([`ErrorKind::Marker`](crate::ErrorKind::Marker)).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MarkerReason {
    /// A marker line cannot be read (its seal, attributes or displaced text are damaged), or
    /// an older marker's displaced text does not appear in what it frames.
    #[error("{what}")]
    Damaged {
        /// What is damaged.
        what: String,
    },
    /// An inline marker cannot be read or does not fit the line below it.
    #[error("this inline marker is damaged ({what})")]
    InlineDamaged {
        /// What is damaged.
        what: String,
    },
    /// An opening marker has no closing marker.
    #[error("the opening marker of hook `{hook}` has no closing marker")]
    Unclosed {
        /// The hook of the opening marker.
        hook: String,
    },
    /// An opening marker inside a block that is still open.
    #[error("the block of hook `{open}` is not closed before this marker")]
    OpenBefore {
        /// The hook of the open block.
        open: String,
    },
    /// A closing marker without an opening marker.
    #[error("closing marker without an opening marker")]
    CloseWithoutOpen,
    /// A closing marker of one hook inside the block of another.
    #[error("closing marker for `{hook}` inside the block of `{open}`")]
    CloseMismatch {
        /// The hook of the closing marker.
        hook: String,
        /// The hook of the open block.
        open: String,
    },
    /// A block's text was edited by hand.
    #[error("the block of hook `{hook}` was edited by hand (its seal no longer matches)")]
    BlockEdited {
        /// The block's hook.
        hook: String,
    },
    /// The line an inline marker frames was edited by hand.
    #[error("the line changed by hook `{hook}` was edited by hand (its seal no longer matches)")]
    LineEdited {
        /// The marker's hook.
        hook: String,
    },
    /// An inline marker is followed by another marker line of the same recipe.
    #[error("the inline marker of hook `{hook}` is followed by another marker line of this recipe (a marker line was duplicated or moved)")]
    InlineFollowed {
        /// The marker's hook.
        hook: String,
    },
    /// Two frames of the recipe share bytes.
    #[error("the frames of hooks `{first}` (line {first_line}) and `{second}` (line {second_line}) overlap")]
    Overlap {
        /// The earlier frame's hook.
        first: String,
        /// Its marker's 1-based line.
        first_line: usize,
        /// The later frame's hook.
        second: String,
        /// Its marker's 1-based line.
        second_line: usize,
    },
    /// Another recipe changed lines inside this recipe's expanded one-line suite.
    #[error("recipe `{other}` has changes inside this recipe's expanded one-line suite: revert `{other}` first")]
    StackedInsideSuite {
        /// The other recipe.
        other: String,
    },
    /// The statements a `replace` block would put back do not match its pattern.
    #[error("the statements this block of hook `{hook}` would put back do not match its pattern `{pattern}` (was the marker forged?)")]
    PatternMismatch {
        /// The block's hook.
        hook: String,
        /// The hook's pattern.
        pattern: String,
    },
    /// A block that puts statements back belongs to a hook that is no `replace` of this recipe.
    #[error("hook `{hook}` is not a `replace` of this recipe, so the statements its block would put back cannot be checked; revert with the recipe that applied it")]
    NotAReplace {
        /// The block's hook.
        hook: String,
    },
    /// The code a hook adds is already in the file without its marker.
    #[error("line {line} already holds what hook `{hook}` adds here, without its marker (was a marker line deleted?): applying would add it twice and revert would leave it behind")]
    Unmarked {
        /// 1-based line of the code.
        line: usize,
        /// The hook.
        hook: String,
    },
}
