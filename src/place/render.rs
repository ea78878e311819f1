//! Rendering: code indented in the file's style, framed by markers, as an edit at an
//! [`Insertion`] or in place of displaced text.

use std::ops::Range;

use crate::edit::Edit;
use crate::marker::{self, Displaced};
use crate::source::{newlines_inside_literals, SourceFile};

use super::{oversized, Displacement, Insertion, Placer, Refusal, MAX_ADDED_BYTES};

impl Placer<'_> {
    /// `code` framed as a block at `place`, indented there, among other recipes' blocks.
    pub(super) fn frame(&self, place: &Insertion, code: &str) -> Result<Edit, Refusal> {
        let lines = self.indent_code(code, &place.indent)?;
        let Settled { at, prefix, suffix } = self.settle(place);
        let frame = marker::block(
            self.recipe,
            self.hook,
            &place.indent,
            self.newline(),
            &lines,
            Displaced::Nothing,
        );
        let start = prefix.len() + frame.content_offset;
        Ok(
            Edit::insertion(self.hook, at, format!("{prefix}{}{suffix}", frame.text))
                .with_inserted(start..start + frame.content_len)
                .with_depth(place.indent.len()),
        )
    }

    /// Where exactly a block at `place` goes: among other recipes' blocks at that line start
    /// (by recipe id), with the line breaks it needs around it.
    fn settle(&self, place: &Insertion) -> Settled {
        let text = self.text();
        let at = if place.at < text.len() || text.ends_with(['\n', '\r']) {
            self.among_other_blocks(place.at)
        } else {
            place.at
        };
        if at == text.len() && !text.is_empty() && !text.ends_with(['\n', '\r']) && at > self.line_start(at) {
            // No final line break: the frame starts with one and ends without one.
            Settled {
                at,
                prefix: self.newline(),
                suffix: "",
            }
        } else {
            Settled {
                at,
                prefix: "",
                suffix: self.line_break_before(at),
            }
        }
    }

    /// Indents rendered code: the snippet's indentation unit becomes the file's, every line gets
    /// `indent`, lines inside multi-line strings stay as written, line breaks become the file's.
    /// Returns the lines, each ending with the file's line break; refused (at the file's start)
    /// when they would be longer than [`MAX_ADDED_BYTES`] (a long indentation times many lines).
    pub(crate) fn indent_code(&self, code: &str, indent: &str) -> Result<String, Refusal> {
        let snippet = SourceFile::new("<code>", code);
        // The lines a string literal continues onto, read lexically: the code was parsed when
        // the recipe was compiled, and the output is parsed again by the verification, so a
        // third parse here (the largest part of planning a long helper) would find nothing new.
        let mut string_lines: Vec<usize> = newlines_inside_literals(code)
            .into_iter()
            .map(|newline| snippet.lines().line_of(newline) + 1)
            .collect();
        // Looked up once per line: sorted for a binary search (a linear one is quadratic in a
        // long string).
        string_lines.sort_unstable();
        string_lines.dedup();
        let unit = snippet.style().indent_unit().to_string();
        // Nested levels follow the block's own indentation: a block indented with spaces in a
        // file whose unit is a tab (or the other way round) must not mix the two.
        let file_unit = match (self.style().indent_unit(), indent) {
            (file, block) if !block.is_empty() && !block.contains('\t') && file.contains('\t') => "    ",
            (file, block) if block.contains('\t') && !file.contains('\t') => "\t",
            (file, _) => file,
        };
        let mut out = String::with_capacity(code.len().min(MAX_ADDED_BYTES));
        // Each line's length is known before it is built: over the limit, nothing more is added.
        let fits = |out: &String, more: usize| {
            let total = out
                .len()
                .checked_add(more)
                .and_then(|n| n.checked_add(self.newline().len()));
            match total {
                Some(n) if n <= MAX_ADDED_BYTES => Ok(()),
                _ => Err(oversized(
                    0,
                    "the hook's code, indented for the file,",
                    total,
                    MAX_ADDED_BYTES,
                )),
            }
        };
        for (i, line) in code.split('\n').enumerate() {
            let line = line.strip_suffix('\r').unwrap_or(line);
            if string_lines.binary_search(&(i + 1)).is_ok() {
                fits(&out, line.len())?;
                out.push_str(line);
            } else if !line.trim().is_empty() {
                let trimmed = line.trim_start_matches([' ', '\t']);
                let leading = &line[..line.len() - trimmed.len()];
                let levels = if unit.is_empty() { 0 } else { leading.len() / unit.len() };
                let extra = if unit.is_empty() {
                    leading
                } else {
                    &leading[levels * unit.len()..]
                };
                let nested = file_unit.len().saturating_mul(levels);
                fits(
                    &out,
                    indent
                        .len()
                        .saturating_add(nested)
                        .saturating_add(extra.len() + trimmed.len()),
                )?;
                out.push_str(indent);
                out.push_str(&file_unit.repeat(levels));
                out.push_str(extra);
                out.push_str(trimmed);
            }
            fits(&out, 0)?;
            out.push_str(self.newline());
        }
        Ok(out)
    }

    /// The line break that ends the line before `at` (a line start), for the line break after a
    /// block inserted there: in a file with mixed line breaks, a block ending in the file's `\r`
    /// would join a following `\n` into one `\r\n`.
    fn line_break_before(&self, at: usize) -> &'static str {
        let before = &self.text()[..at];
        if before.ends_with("\r\n") {
            "\r\n"
        } else if before.ends_with('\r') {
            "\r"
        } else if before.ends_with('\n') || self.text()[at..].starts_with('\n') {
            "\n"
        } else {
            self.newline()
        }
    }

    /// A framed block of `lines` (already indented) at `place`; `inserted` is the part of
    /// `lines` the hook brought (the rest is displaced code that stays, such as a suite).
    pub(super) fn displacing_block(&self, place: &Displacement, lines: &str, inserted: Range<usize>) -> Edit {
        let Displacement { range, indent, joined } = place;
        let (range, joined) = (range.clone(), *joined);
        let was = &self.text()[range.clone()];
        let displaced = if joined {
            Displaced::Joined(was)
        } else {
            Displaced::Lines(was)
        };
        let frame = marker::block(self.recipe, self.hook, indent, self.newline(), lines, displaced);
        let lead = if joined { self.newline() } else { "" };
        let base = lead.len() + frame.content_offset;
        Edit::replacement(self.hook, range, format!("{lead}{}", frame.text))
            .with_inserted(base + inserted.start..base + inserted.end)
    }
}

/// An [`Insertion`] settled in the text: the offset of the frame, and the line breaks that go
/// before it (at the end of a text without a final line break) and after it.
struct Settled {
    at: usize,
    prefix: &'static str,
    suffix: &'static str,
}
