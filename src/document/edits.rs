//! Edits in LSP terms: the line-based edits that turn the current text into another.

use std::ops::Range;

use similar::{Algorithm, DiffOp};

use super::{Document, TextEdit, Utf16Range};

impl Document {
    /// Line-based edits turning `old` (the current text) into `new`.
    pub(super) fn diff(&self, old: &str, new: &str) -> Vec<TextEdit> {
        if old == new {
            return Vec::new();
        }
        let old_lines = split_lines(old);
        let new_lines = split_lines(new);
        let ops = similar::capture_diff_slices(Algorithm::Myers, &old_lines, &new_lines);
        // Byte offset of every old line start, and of the end.
        let mut old_starts = Vec::with_capacity(old_lines.len() + 1);
        let mut at = 0;
        for line in &old_lines {
            old_starts.push(at);
            at += line.len();
        }
        old_starts.push(at);
        let mut edits = Vec::new();
        let mut pending: Option<(Range<usize>, String)> = None;
        for op in ops {
            let (old_range, new_range) = match op {
                DiffOp::Equal { .. } => {
                    if let Some((range, text)) = pending.take() {
                        edits.push(self.line_edit(&old_starts, range, text));
                    }
                    continue;
                }
                DiffOp::Delete { old_index, old_len, .. } => (old_index..old_index + old_len, 0..0),
                DiffOp::Insert {
                    old_index,
                    new_index,
                    new_len,
                } => (old_index..old_index, new_index..new_index + new_len),
                DiffOp::Replace {
                    old_index,
                    old_len,
                    new_index,
                    new_len,
                } => (old_index..old_index + old_len, new_index..new_index + new_len),
            };
            let added: String = new_lines[new_range].concat();
            pending = Some(match pending.take() {
                Some((range, mut text)) => {
                    text.push_str(&added);
                    (range.start..old_range.end.max(range.end), text)
                }
                None => (old_range, added),
            });
        }
        if let Some((range, text)) = pending {
            edits.push(self.line_edit(&old_starts, range, text));
        }
        if let (Some(last), Some(line)) = (edits.last_mut(), old_lines.last()) {
            let end = old_starts[old_lines.len()];
            *last = self.inside_document(last, old, end, line_break(line));
        }
        edits
    }

    fn line_edit(&self, old_starts: &[usize], lines: Range<usize>, new_text: String) -> TextEdit {
        let start = self.position(old_starts[lines.start]);
        let end = self.position(old_starts[lines.end]);
        TextEdit {
            range: Utf16Range::new(start, end),
            new_text,
        }
    }

    /// The same change as `edit`, with no position past the file's final line break where that
    /// can be said: an edit ending at the very end (after the last line's break) is moved before
    /// that break. Clients disagree on the line after the last one (Neovim appends an extra empty
    /// line for an insertion there); positions inside the text mean the same to every client.
    fn inside_document(&self, edit: &TextEdit, old: &str, end: usize, last_break: &str) -> TextEdit {
        let b = last_break.len();
        let start = self.offset(edit.range.start);
        if b == 0 || self.offset(edit.range.end) != end || end != old.len() || start > end {
            return edit.clone();
        }
        let moved = |from: usize, to: usize, text: String| TextEdit {
            range: Utf16Range::new(self.position(from), self.position(to)),
            new_text: text,
        };
        match edit.new_text.strip_suffix(last_break) {
            // Insert (or replace the last lines with) text ending in the same break.
            Some(body) if start == end => moved(end - b, end - b, format!("{last_break}{body}")),
            Some(body) => moved(start, end - b, body.to_string()),
            // Delete the last lines: take the break before them instead of the final one.
            None if edit.new_text.is_empty() && start >= b && old[..start].ends_with(last_break) => {
                moved(start - b, end - b, String::new())
            }
            None => edit.clone(),
        }
    }
}

/// The line break that ends `line` (`\r\n`, `\n`, `\r`), or `""`.
fn line_break(line: &str) -> &str {
    if line.ends_with("\r\n") {
        "\r\n"
    } else if line.ends_with('\n') {
        "\n"
    } else if line.ends_with('\r') {
        "\r"
    } else {
        ""
    }
}

/// The lines of `text` with their line breaks (`\n`, `\r\n`, `\r`); no empty last line.
fn split_lines(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut lines = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                lines.push(&text[start..=i]);
                start = i + 1;
            }
            b'\r' => {
                let end = if bytes.get(i + 1) == Some(&b'\n') { i + 2 } else { i + 1 };
                lines.push(&text[start..end]);
                start = end;
                i = end - 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_on_python_newlines_only() {
        assert_eq!(
            split_lines("a\nb\r\nc\rd\x0ce\u{2028}f"),
            ["a\n", "b\r\n", "c\r", "d\x0ce\u{2028}f"]
        );
        assert_eq!(split_lines("a\n"), ["a\n"]);
        assert!(split_lines("").is_empty());
    }
}
