//! Placement: turning one hook into edits of one parsed file, in the file's own style.
//!
//! This module knows Python's layout rules: docstrings, decorators, one-line suites, statements
//! sharing a line, `elif` chains, comments at the end of a line, tabs, CRLF, the BOM, files
//! without a final newline, and other recipes' marker lines. It never decides whether a hook
//! should apply (see [`crate::engine`]); it only says where and how, or why it cannot.
//!
//! A placement first finds *where*, as a value: an [`Insertion`] (a line start and the
//! indentation of the block there) or a [`Displacement`] (the text a block takes the place of);
//! then `render` frames *what* goes there. Each kind of placement has its own module:
//!
//! | module | placement |
//! |---|---|
//! | `lines` | line navigation around offsets |
//! | `neighbours` | other recipes' marker lines next to an insertion point |
//! | `render` | code in the file's style, framed by markers, as an edit |
//! | `body` | the start or end of a class or function body; forwarders |
//! | `one_line` | one-line suites, for one hook or several |
//! | `statements` | before, after or in place of selected statements |
//! | `module` | the module's top, after its imports, its end |
//! | `imports` | the imports a recipe needs |
//! | `returns` | wrapped return values |

mod body;
mod imports;
mod lines;
mod module;
mod neighbours;
mod one_line;
mod render;
mod returns;
mod statements;
#[cfg(test)]
mod tests;

use std::ops::Range;

use crate::edit::Edit;
use crate::error::PlacementReason;
use crate::outline::ParsedFile;
use crate::source::{SourceFile, Style};
pub(crate) use crate::syntax::is_docstring;
use crate::syntax::Node;
use crate::template::TooLong;

pub(crate) use imports::binds_name;

/// Why a hook cannot be placed, with the offset it concerns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// Offset in the file the reason is about.
    pub offset: usize,
    /// Why.
    pub cause: Refused,
}

/// The cause of a [`Refusal`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The placement itself is impossible.
    Placement(PlacementReason),
    /// The code placed would be longer than allowed (see [`MAX_ADDED_BYTES`]): `what`.
    Oversized {
        /// What would be too long, for people.
        what: &'static str,
        /// How long, and the limit.
        too_long: TooLong,
    },
}

type Placed = Result<Vec<Edit>, Refusal>;

fn refuse(offset: usize, reason: PlacementReason) -> Refusal {
    Refusal {
        offset,
        cause: Refused::Placement(reason),
    }
}

/// The most bytes the edits of one file may add: the file limit
/// ([`crate::limits::MAX_FILE_BYTES`]). The patched file holds every edit's text, so edits over it
/// could never be written; they are refused before more text is built.
pub(crate) const MAX_ADDED_BYTES: usize = crate::template::MAX_RENDERED_BYTES;

/// A refusal at `offset` because `what` would be `bytes` long, over `limit`.
pub(crate) fn oversized(offset: usize, what: &'static str, bytes: Option<usize>, limit: usize) -> Refusal {
    Refusal {
        offset,
        cause: Refused::Oversized {
            what,
            too_long: TooLong { bytes, limit },
        },
    }
}

/// Adds the text of `edit` to `added` (the bytes the edits so far add), refused at `offset`
/// once that passes [`MAX_ADDED_BYTES`].
fn count_added(added: &mut usize, edit: &Edit, offset: usize) -> Result<(), Refusal> {
    *added = added.saturating_add(edit.text().len());
    if *added > MAX_ADDED_BYTES {
        return Err(oversized(
            offset,
            "the code this hook adds to the file",
            Some(*added),
            MAX_ADDED_BYTES,
        ));
    }
    Ok(())
}

/// Where a framed block goes: the start of a line (the text's end to append) and the
/// indentation of the block's lines. A placement computes it; [`Placer::frame`] puts code there.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Insertion {
    /// The line start the block goes before, before other recipes' blocks are taken into
    /// account (see `Placer::among_other_blocks`).
    at: usize,
    /// The indentation of every line of the block.
    indent: String,
}

impl Insertion {
    /// A block at the line start `at`, indented by `indent`.
    fn new(at: usize, indent: impl Into<String>) -> Insertion {
        Insertion {
            at,
            indent: indent.into(),
        }
    }
}

/// Where a framed block takes the place of original text: whole lines (from a line start to
/// a line end: replaced statements), or the rest of a line after a colon (`joined`: a one-line
/// suite expanded into a block). The frame keeps the displaced text for revert.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Displacement {
    /// The displaced text.
    range: Range<usize>,
    /// The indentation of every line of the block.
    indent: String,
    /// Whether the block splits a line (it then starts with a line break).
    joined: bool,
}

impl Displacement {
    /// The whole lines `range`, displaced by a block indented by `indent`.
    fn lines(range: Range<usize>, indent: impl Into<String>) -> Displacement {
        Displacement {
            range,
            indent: indent.into(),
            joined: false,
        }
    }

    /// The rest of a line after a colon, `range`, displaced by a block indented by `indent`.
    fn joined(range: Range<usize>, indent: impl Into<String>) -> Displacement {
        Displacement {
            range,
            indent: indent.into(),
            joined: true,
        }
    }
}

/// Places hook code in one file.
pub struct Placer<'a> {
    file: &'a ParsedFile,
    recipe: &'a str,
    hook: &'a str,
    /// 1-based lines that start inside a string literal: never marker lines.
    string_lines: &'a [usize],
}

impl<'a> Placer<'a> {
    /// A placer for `hook` of `recipe` in `file`, whose lines inside string literals are
    /// `string_lines` (see `source::lines_inside_strings`).
    #[must_use]
    pub fn new(file: &'a ParsedFile, recipe: &'a str, hook: &'a str, string_lines: &'a [usize]) -> Placer<'a> {
        Placer {
            file,
            recipe,
            hook,
            string_lines,
        }
    }

    fn source(&self) -> &SourceFile {
        self.file.source()
    }

    fn style(&self) -> &Style {
        self.source().style()
    }

    fn newline(&self) -> &'static str {
        self.style().newline().as_str()
    }

    fn text(&self) -> &str {
        self.source().text()
    }
}

/// A hook's code rendered for one place: for a pattern anchor, the statement the pattern
/// matched there (its captures fill in `{$NAME}`), else `None`; refused when too long or when
/// what it captured cannot be placed.
pub(crate) type CodeAt<'a> = dyn Fn(Option<&Node>) -> Result<String, Refusal> + 'a;

/// A wrap-returns template filled in with a return's value (refused when too long).
pub(crate) type WrapFn<'a> = dyn Fn(&str) -> Result<String, TooLong> + 'a;

/// What one hook does to a one-line suite that several hooks change (see
/// [`Placer::compose_suite`]).
pub(crate) enum SuitePart<'a> {
    /// Code at the start of the body.
    Start(String),
    /// Code at the end of the body.
    End(String),
    /// The suite's return, wrapped by a template.
    Wrap(&'a Node, Box<WrapFn<'a>>),
}
