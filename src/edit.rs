//! Text edits and their application: byte ranges of the original text and what replaces them.

use std::ops::Range;

use crate::location::Location;
use crate::source::SourceFile;

/// Two hooks want to change overlapping text ([`apply_edits`]); the crate's
/// [`ErrorKind::Conflict`](crate::ErrorKind::Conflict) once it becomes a [`crate::Error`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{location}: hooks `{first}` and `{second}` edit overlapping text")]
pub(crate) struct Conflict {
    /// The hook of the earlier edit.
    pub first: String,
    /// The hook of the later one.
    pub second: String,
    /// Where the overlap starts.
    pub location: Location,
}

/// One change to the original text, made by one hook.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    range: Range<usize>,
    text: String,
    hook: String,
    /// Ranges of `text` holding code the hook inserted (relative to `text`).
    inserted: Vec<Range<usize>>,
    /// For a rewritten statement: the original statement's range and the new one's range in `text`.
    rewritten: Option<(Range<usize>, Range<usize>)>,
    /// Original statements this edit removes (replacements).
    removed: Vec<Range<usize>>,
    /// Placed after other insertions at the same offset (a marker that must stay next to its line).
    last_at_offset: bool,
    /// Indentation width of an inserted block: at one offset, deeper blocks go first, since they
    /// close the inner block that the shallower ones follow.
    depth: usize,
    /// Placed before other insertions of the same depth at the same offset (imports, which the
    /// code inserted there may use).
    first_at_offset: bool,
}

impl Edit {
    /// Inserts `text` at `offset`.
    #[must_use]
    pub fn insertion(hook: &str, offset: usize, text: String) -> Edit {
        Edit::replacement(hook, offset..offset, text)
    }

    /// Replaces `range` by `text`.
    #[must_use]
    pub fn replacement(hook: &str, range: Range<usize>, text: String) -> Edit {
        Edit {
            range,
            text,
            hook: hook.to_string(),
            inserted: Vec::new(),
            rewritten: None,
            removed: Vec::new(),
            last_at_offset: false,
            depth: 0,
            first_at_offset: false,
        }
    }

    /// Deletes `range`.
    #[must_use]
    pub fn deletion(hook: &str, range: Range<usize>) -> Edit {
        Edit::replacement(hook, range, String::new())
    }

    /// Marks `range` of the new text as inserted code (for verification).
    #[must_use]
    pub fn with_inserted(mut self, range: Range<usize>) -> Edit {
        self.inserted.push(range);
        self
    }

    /// Records that the statement at `original` becomes the statement at `new` of the new text.
    #[must_use]
    pub fn with_rewritten(mut self, original: Range<usize>, new: Range<usize>) -> Edit {
        self.rewritten = Some((original, new));
        self
    }

    /// Records that the original statement at `range` is removed.
    #[must_use]
    pub fn with_removed(mut self, range: Range<usize>) -> Edit {
        self.removed.push(range);
        self
    }

    /// Records the indentation width of an inserted block (read when the edits are applied).
    #[must_use]
    pub fn with_depth(mut self, depth: usize) -> Edit {
        self.depth = depth;
        self
    }

    /// Keeps this insertion after every other insertion at the same offset, next to the text
    /// that follows it (inline markers describe the line right after them).
    #[must_use]
    pub fn last_at_offset(mut self) -> Edit {
        self.last_at_offset = true;
        self
    }

    /// Keeps this insertion before the other insertions of its depth at the same offset (an
    /// import block goes above the code that uses it, whatever the hook order).
    #[must_use]
    pub fn first_at_offset(mut self) -> Edit {
        self.first_at_offset = true;
        self
    }

    /// The original byte range replaced.
    #[must_use]
    pub fn range(&self) -> Range<usize> {
        self.range.clone()
    }

    /// The new text.
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The hook that made the edit.
    #[must_use]
    pub fn hook(&self) -> &str {
        &self.hook
    }

    /// The ranges of [`Edit::text`] holding code the hook inserted (without marker lines).
    #[must_use]
    pub fn inserted(&self) -> &[Range<usize>] {
        &self.inserted
    }
}

/// Where edits landed in the new text, for verification.
#[derive(Clone, Debug, Default)]
pub(crate) struct EditMap {
    /// Inserted code, as ranges of the new text.
    pub inserted: Vec<Range<usize>>,
    /// Rewritten statements: (original range, new range).
    pub rewritten: Vec<(Range<usize>, Range<usize>)>,
    /// Original statements removed.
    pub removed: Vec<Range<usize>>,
    /// Each edit's original range and its range in the new text, with its hook.
    pub spans: Vec<(Range<usize>, Range<usize>, String)>,
}

/// Applies `edits` to `file`'s text. Edits are ordered by position; insertions at the same
/// offset go deepest indentation first (an inner block's end before an outer one's), then
/// imports, then in the order given (hook order), with inline markers last, next to the line
/// they describe.
///
/// # Errors
/// A [`Conflict`] naming both hooks when two edits overlap.
pub(crate) fn apply_edits(file: &SourceFile, edits: &[Edit]) -> Result<(String, EditMap), Conflict> {
    let text = file.text();
    let mut order: Vec<&Edit> = edits.iter().collect();
    order.sort_by_key(|e| {
        (
            e.range.start,
            e.range.end,
            e.last_at_offset,
            std::cmp::Reverse(e.depth),
            !e.first_at_offset,
        )
    });
    for pair in order.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let overlap = b.range.start < a.range.end || (a.range == b.range && !a.range.is_empty());
        if overlap {
            return Err(Conflict {
                first: a.hook.clone(),
                second: b.hook.clone(),
                location: file.location(b.range.start),
            });
        }
    }
    let mut out = String::with_capacity(text.len() + edits.iter().map(|e| e.text.len()).sum::<usize>());
    let mut map = EditMap::default();
    let mut at = 0;
    for edit in order {
        out.push_str(&text[at..edit.range.start]);
        let base = out.len();
        out.push_str(&edit.text);
        map.inserted
            .extend(edit.inserted.iter().map(|r| base + r.start..base + r.end));
        if let Some((original, new)) = &edit.rewritten {
            map.rewritten.push((original.clone(), base + new.start..base + new.end));
        }
        map.removed.extend(edit.removed.iter().cloned());
        map.spans.push((edit.range.clone(), base..out.len(), edit.hook.clone()));
        at = edit.range.end;
    }
    out.push_str(&text[at..]);
    Ok((out, map))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_apply_in_order_and_conflicts_name_both_hooks() {
        let file = SourceFile::new("t.py", "abcdef");
        let edits = [
            Edit::insertion("b", 3, "X".into()),
            Edit::replacement("a", 0..1, "Z".into()),
            Edit::insertion("c", 3, "Y".into()),
            Edit::deletion("d", 5..6),
        ];
        assert_eq!(apply_edits(&file, &edits).unwrap().0, "ZbcXYde");
        let clash = [
            Edit::replacement("a", 0..3, "x".into()),
            Edit::replacement("b", 2..4, "y".into()),
        ];
        let err = apply_edits(&file, &clash).unwrap_err();
        assert!(err.to_string().contains("hooks `a` and `b`"), "{err}");
    }
}
