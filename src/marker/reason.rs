//! What is wrong with a recipe's marked blocks, as [`scan`](super::scan) finds it: its error
//! ([`MarkerError`]) with its reason ([`MarkerReason`]), which the crate's
//! [`ErrorKind::Marker`](crate::ErrorKind::Marker) carries as is once it becomes a
//! [`crate::Error`].

use crate::location::Location;

/// Why [`scan`](super::scan) cannot read a recipe's frames back, at the marker line at fault,
/// for the hook whose frame it is.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{location}: {reason} [hook {hook}]")]
#[non_exhaustive]
pub struct MarkerError {
    /// What is wrong (boxed, so that a `Result` stays small).
    pub reason: Box<MarkerReason>,
    /// The marker line at fault.
    pub location: Location,
    /// The hook whose frame it is.
    pub hook: String,
}

/// What is wrong with a recipe's marked blocks ([`MarkerError::reason`],
/// [`ErrorKind::Marker`](crate::ErrorKind::Marker)): a frame that does not match what pysplice
/// inserted, or one that another recipe changed after ([`MarkerReason::Stacked`]).
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
    /// Another recipe changed a frame of this recipe after it was applied (its change sits on
    /// top of this one): that recipe must be reverted first. The error's location is this
    /// recipe's marker line, its hook the one whose change is covered.
    #[error(
        "recipe `{top}` was applied on top of this change (its marker for hook `{top_hook}` is at line {top_line})"
    )]
    Stacked {
        /// The recipe on top.
        top: String,
        /// The hook of the recipe on top whose marker is in the way.
        top_hook: String,
        /// 1-based line of that marker.
        top_line: usize,
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

impl MarkerReason {
    /// What to do about it, as [`ErrorKind::Marker`](crate::ErrorKind::Marker)'s message says
    /// after the reason: revert the recipe on top of a stacked frame, mend a damaged one.
    pub(crate) fn remedy(&self) -> String {
        match self {
            MarkerReason::Stacked { top, .. } => format!("revert `{top}` first"),
            _ => "restore the block or remove it by hand, then run again".to_string(),
        }
    }
}
