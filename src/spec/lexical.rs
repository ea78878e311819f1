//! Where the string literals and comments of Python code lie, found by a linear scan of the
//! text (it need not parse): what a spec warning checks a capture's place against. The
//! replacement fields of an f-string (`f'{x}'`) are code, the rest of it string.

use std::ops::Range;

/// What a stretch of code is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Region {
    /// Inside a string literal (its quotes and prefix included).
    String,
    /// A comment, from `#` to the end of the line.
    Comment,
}

/// f-strings nested in f-string fields deeper than this are taken as string to their end, so
/// the scan never recurses without bound.
const MAX_FIELD_DEPTH: usize = 32;

/// The string and comment regions of `code`, in order.
pub(super) fn regions(code: &str) -> Vec<(Range<usize>, Region)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'#' => {
                let end = line_end(b, i);
                out.push((i..end, Region::Comment));
                i = end;
            }
            b'\'' | b'"' => i = string(b, i, 0, &mut out),
            _ => i += 1,
        }
    }
    out
}

/// The region that the byte at `offset` is in, if any.
pub(super) fn region_at(regions: &[(Range<usize>, Region)], offset: usize) -> Option<Region> {
    regions
        .iter()
        .find(|(range, _)| range.contains(&offset))
        .map(|(_, region)| *region)
}

fn line_end(b: &[u8], from: usize) -> usize {
    b[from..]
        .iter()
        .position(|c| matches!(c, b'\n' | b'\r'))
        .map_or(b.len(), |n| from + n)
}

/// The start of the prefix (`r`, `b`, `f`, `rb`...) of the literal whose quote is at `quote`,
/// and whether it is an f-string. Letters that belong to a longer name are no prefix.
fn prefix(b: &[u8], quote: usize) -> (usize, bool) {
    let start = b[..quote]
        .iter()
        .rposition(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
        .map_or(0, |p| p + 1);
    let letters = &b[start..quote];
    let is_prefix = letters.len() <= 2 && letters.iter().all(|c| b"rRbBuUfF".contains(c));
    if is_prefix {
        (start, letters.iter().any(|c| matches!(c, b'f' | b'F')))
    } else {
        (quote, false)
    }
}

/// Scans the literal whose opening quote is at `quote`, pushing its string parts (an
/// f-string's fields are code between them); the offset just after it. `depth`: how many
/// f-string fields it is inside.
fn string(b: &[u8], quote: usize, depth: usize, out: &mut Vec<(Range<usize>, Region)>) -> usize {
    let (mut part, f) = prefix(b, quote);
    let f = f && depth < MAX_FIELD_DEPTH;
    let q = b[quote];
    let triple = b.get(quote + 1) == Some(&q) && b.get(quote + 2) == Some(&q);
    let width = if triple { 3 } else { 1 };
    let mut i = quote + width;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'\n' | b'\r' if !triple => break,
            c if c == q && (!triple || (b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q))) => {
                out.push((part..i + width, Region::String));
                return i + width;
            }
            b'{' if f && b.get(i + 1) == Some(&b'{') => i += 2,
            b'{' if f => {
                out.push((part..i + 1, Region::String));
                i = field_end(b, i + 1, depth + 1, out);
                part = i;
            }
            _ => i += 1,
        }
    }
    let end = i.min(b.len());
    out.push((part..end, Region::String));
    end
}

/// The offset of the `}` that closes the f-string field starting at `from` (the end of the
/// text when none does), pushing the strings inside it.
fn field_end(b: &[u8], from: usize, depth: usize, out: &mut Vec<(Range<usize>, Region)>) -> usize {
    let mut nesting = 0usize;
    let mut i = from;
    while i < b.len() {
        match b[i] {
            b'}' if nesting == 0 => return i,
            b'(' | b'[' | b'{' => nesting += 1,
            b')' | b']' | b'}' => nesting = nesting.saturating_sub(1),
            b'\'' | b'"' => {
                i = string(b, i, depth, out);
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The region of the first occurrence of `X` in `code`.
    fn of_x(code: &str) -> Option<Region> {
        region_at(&regions(code), code.find('X').unwrap())
    }

    #[test]
    fn strings_and_comments_are_found_and_code_is_not() {
        assert_eq!(of_x("print(X)"), None);
        assert_eq!(of_x("print('X')"), Some(Region::String));
        assert_eq!(of_x("print(\"a\\\"X\")"), Some(Region::String));
        assert_eq!(of_x("s = '''\nX'''"), Some(Region::String));
        assert_eq!(of_x("s = rb'X'"), Some(Region::String));
        assert_eq!(of_x("x = 1  # X"), Some(Region::Comment));
        assert_eq!(of_x("s = '#'; X"), None);
        assert_eq!(of_x("s = 'a'\nX"), None);
        // An unterminated literal ends at its line.
        assert_eq!(of_x("s = 'a\nX"), None);
    }

    #[test]
    fn an_f_string_field_is_code() {
        assert_eq!(of_x("f'{X}'"), None);
        assert_eq!(of_x("f'a {X!r:>{w}}'"), None);
        assert_eq!(of_x("f'{{X}}'"), Some(Region::String));
        assert_eq!(of_x("f'{d[\"k\"]} X'"), Some(Region::String));
        assert_eq!(of_x("F\"{g('a')}\" + X"), None);
        // A name ending in f is no prefix.
        assert_eq!(of_x("elf'{X}'"), Some(Region::String));
        // Deeply nested f-strings are scanned without recursing without bound.
        let deep = format!("{}X{}", "f'{".repeat(10_000), "}'".repeat(10_000));
        let _ = of_x(&deep);
    }
}
