//! Where the string literals and comments of Python code lie, found by a linear scan of the
//! text (it need not parse): where a capture lands, to escape it for the literal it is in, and
//! what a spec warning checks a capture's place against. The replacement fields of an f-string
//! (`f'{x}'`) are code, the rest of it string.

use std::ops::Range;

/// What a stretch of code is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Region {
    /// Inside a string literal (its quotes and prefix included), of this kind.
    String(Literal),
    /// A comment, from `#` to the end of the line.
    Comment,
}

/// How a string literal is written: what a text inside it must escape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Literal {
    /// The quote character, `'` or `"`.
    pub(crate) quote: u8,
    /// Three quotes: line breaks may stand as they are.
    pub(crate) triple: bool,
    /// `r` prefix: backslashes are no escapes, and a quote cannot be written.
    pub(crate) raw: bool,
    /// `b` prefix: bytes, ASCII only.
    pub(crate) bytes: bool,
    /// `f` prefix: braces open fields.
    pub(crate) f: bool,
}

/// f-strings nested in f-string fields deeper than this are taken as string to their end, so
/// the scan never recurses without bound.
const MAX_FIELD_DEPTH: usize = 32;

/// The string and comment regions of `code`, in order.
pub(crate) fn regions(code: &str) -> Vec<(Range<usize>, Region)> {
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
pub(crate) fn region_at(regions: &[(Range<usize>, Region)], offset: usize) -> Option<Region> {
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
/// and its letters. Letters that belong to a longer name are no prefix.
fn prefix(b: &[u8], quote: usize) -> (usize, &[u8]) {
    let start = b[..quote]
        .iter()
        .rposition(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
        .map_or(0, |p| p + 1);
    let letters = &b[start..quote];
    let is_prefix = letters.len() <= 2 && letters.iter().all(|c| b"rRbBuUfF".contains(c));
    if is_prefix {
        (start, letters)
    } else {
        (quote, &[])
    }
}

/// Scans the literal whose opening quote is at `quote`, pushing its string parts (an
/// f-string's fields are code between them); the offset just after it. `depth`: how many
/// f-string fields it is inside.
fn string(b: &[u8], quote: usize, depth: usize, out: &mut Vec<(Range<usize>, Region)>) -> usize {
    let (mut part, letters) = prefix(b, quote);
    let has = |pair: &[u8]| letters.iter().any(|c| pair.contains(c));
    let f = has(b"fF") && depth < MAX_FIELD_DEPTH;
    let q = b[quote];
    let triple = b.get(quote + 1) == Some(&q) && b.get(quote + 2) == Some(&q);
    let literal = Literal {
        quote: q,
        triple,
        raw: has(b"rR"),
        bytes: has(b"bB"),
        f,
    };
    let width = if triple { 3 } else { 1 };
    let mut i = quote + width;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'\n' | b'\r' if !triple => break,
            c if c == q && (!triple || (b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q))) => {
                out.push((part..i + width, Region::String(literal)));
                return i + width;
            }
            b'{' if f && b.get(i + 1) == Some(&b'{') => i += 2,
            b'{' if f => {
                out.push((part..i + 1, Region::String(literal)));
                i = field_end(b, i + 1, depth + 1, out);
                part = i;
            }
            _ => i += 1,
        }
    }
    let end = i.min(b.len());
    out.push((part..end, Region::String(literal)));
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

    /// What the first occurrence of `X` in `code` is in: `String` for any literal.
    #[derive(Debug, PartialEq)]
    enum Is {
        String,
        Comment,
    }

    fn of_x(code: &str) -> Option<Is> {
        region_at(&regions(code), code.find('X').unwrap()).map(|region| match region {
            Region::String(_) => Is::String,
            Region::Comment => Is::Comment,
        })
    }

    /// The literal the first `X` of `code` is in.
    fn literal_of_x(code: &str) -> Literal {
        match region_at(&regions(code), code.find('X').unwrap()) {
            Some(Region::String(literal)) => literal,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_literal_knows_its_quotes_and_prefix() {
        let plain = literal_of_x("s = 'X'");
        assert_eq!(
            (plain.quote, plain.triple, plain.raw, plain.bytes, plain.f),
            (b'\'', false, false, false, false)
        );
        let raw_bytes = literal_of_x("s = Rb\"\"\"X\"\"\"");
        assert_eq!(
            (raw_bytes.quote, raw_bytes.triple, raw_bytes.raw, raw_bytes.bytes),
            (b'"', true, true, true)
        );
        // After an f-string's field, the rest of the literal is the same literal.
        let f = literal_of_x("f'{a} X'");
        assert!(f.f && !f.raw && f.quote == b'\'');
    }

    #[test]
    fn strings_and_comments_are_found_and_code_is_not() {
        assert_eq!(of_x("print(X)"), None);
        assert_eq!(of_x("print('X')"), Some(Is::String));
        assert_eq!(of_x("print(\"a\\\"X\")"), Some(Is::String));
        assert_eq!(of_x("s = '''\nX'''"), Some(Is::String));
        assert_eq!(of_x("s = rb'X'"), Some(Is::String));
        assert_eq!(of_x("x = 1  # X"), Some(Is::Comment));
        assert_eq!(of_x("s = '#'; X"), None);
        assert_eq!(of_x("s = 'a'\nX"), None);
        // An unterminated literal ends at its line.
        assert_eq!(of_x("s = 'a\nX"), None);
    }

    #[test]
    fn an_f_string_field_is_code() {
        assert_eq!(of_x("f'{X}'"), None);
        assert_eq!(of_x("f'a {X!r:>{w}}'"), None);
        assert_eq!(of_x("f'{{X}}'"), Some(Is::String));
        assert_eq!(of_x("f'{d[\"k\"]} X'"), Some(Is::String));
        assert_eq!(of_x("F\"{g('a')}\" + X"), None);
        // A name ending in f is no prefix.
        assert_eq!(of_x("elf'{X}'"), Some(Is::String));
        // Deeply nested f-strings are scanned without recursing without bound.
        let deep = format!("{}X{}", "f'{".repeat(10_000), "}'".repeat(10_000));
        let _ = of_x(&deep);
    }
}
