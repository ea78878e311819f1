//! Line breaks inside string literals: the lines after them are string content, never
//! re-indented and never read as comments or marker lines.

use super::{LineIndex, SourceFile};

/// Offsets (within `literal`, the source of a string expression) of line breaks that lie inside
/// string literals: the lines after them must not be re-indented. Line breaks between the parts
/// of an implicitly concatenated string are outside and do not count.
pub(crate) fn newlines_inside_literals(literal: &str) -> Vec<usize> {
    let bytes = literal.as_bytes();
    // The length of the line break at `i` (`\n`, `\r\n` or a lone `\r`), 0 if none.
    let line_break = |i: usize| match bytes.get(i) {
        Some(b'\n') => 1,
        Some(b'\r') if bytes.get(i + 1) == Some(&b'\n') => 2,
        Some(b'\r') => 1,
        _ => 0,
    };
    let mut inside = Vec::new();
    let mut i = 0;
    let mut quote: Option<&[u8]> = None;
    while i < bytes.len() {
        match quote {
            None => {
                if bytes[i] == b'#' {
                    // A comment, up to the end of its line.
                    while i < bytes.len() && line_break(i) == 0 {
                        i += 1;
                    }
                    continue;
                }
                if bytes[i] == b'"' || bytes[i] == b'\'' {
                    let triple = bytes[i..].starts_with(b"\"\"\"") || bytes[i..].starts_with(b"'''");
                    let len = if triple { 3 } else { 1 };
                    quote = Some(&bytes[i..i + len]);
                    i += len;
                    continue;
                }
                i += 1;
            }
            Some(q) => {
                let escaped = bytes[i] == b'\\';
                let at = if escaped { i + 1 } else { i };
                let width = line_break(at);
                if width > 0 {
                    // Inside the literal when escaped or triple-quoted; a single-quoted string
                    // ends at an unescaped line break (not valid Python, but text is not always).
                    if escaped || q.len() == 3 {
                        inside.push(at + width - 1);
                    } else {
                        quote = None;
                    }
                    i = at + width;
                } else if escaped {
                    i += 2;
                } else if bytes[i..].starts_with(q) {
                    i += q.len();
                    quote = None;
                } else {
                    i += 1;
                }
            }
        }
    }
    inside
}

/// The 1-based lines of `text` that start inside a string literal (after a line break inside a
/// triple-quoted string or a backslash continuation of a string), sorted. A comment-looking line
/// there is string content, not a comment.
pub(crate) fn lines_inside_strings(text: &str) -> Vec<usize> {
    let breaks = newlines_inside_literals(text);
    if breaks.is_empty() {
        return breaks;
    }
    let index = LineIndex::new(text);
    breaks.into_iter().map(|offset| index.line_of(offset) + 1).collect()
}

/// [`lines_inside_strings`] of a file, through the line index it already has.
pub(crate) fn file_lines_inside_strings(file: &SourceFile) -> Vec<usize> {
    let index = file.lines();
    newlines_inside_literals(file.text())
        .into_iter()
        .map(|offset| index.line_of(offset) + 1)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_line_breaks_inside_literals_count() {
        assert_eq!(newlines_inside_literals("(\"a\"\n \"b\")"), Vec::<usize>::new());
        assert_eq!(newlines_inside_literals("\"\"\"a\nb\"\"\""), vec![4]);
        assert_eq!(newlines_inside_literals("'a\\\nb'"), vec![3]);
        assert_eq!(newlines_inside_literals("('''x''' # c '\n 'y')"), Vec::<usize>::new());
        assert_eq!(
            lines_inside_strings("x = 1\ns = \"\"\"\n# >>> not a marker\n\"\"\"\n"),
            vec![3, 4]
        );
        // Comments end at any line break; lone `\r` breaks inside strings count.
        assert_eq!(lines_inside_strings("# c\r'''a\rb'''\r\n# >>> x\r\n"), vec![3]);
        assert_eq!(newlines_inside_literals("'a\\\r\nb'"), vec![4]);
    }
}
