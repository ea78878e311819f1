//! A bracket scan of Python text that skips string literals and comments: how deep brackets
//! nest (CPython's tokenizer refuses more than 200 levels) and where a bracket closes.

/// Calls `visit(offset, depth_after)` for every bracket outside strings and comments: the depth
/// is the nesting after an opening bracket, or after a closing one.
fn scan(text: &str, visit: &mut dyn FnMut(usize, usize) -> bool) {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'#' => {
                while i < bytes.len() && !matches!(bytes[i], b'\n' | b'\r') {
                    i += 1;
                }
                continue;
            }
            b'"' | b'\'' => {
                i = string_end(bytes, i);
                continue;
            }
            b'(' | b'[' | b'{' => {
                depth += 1;
                if !visit(i, depth) {
                    return;
                }
            }
            b')' | b']' | b'}' => {
                depth = depth.saturating_sub(1);
                if !visit(i, depth) {
                    return;
                }
            }
            _ => {}
        }
        i += 1;
    }
}

/// The offset just after the string literal whose opening quote is at `start`. A backslash
/// escapes the next byte (also in raw strings, where it still keeps a quote from ending the
/// literal); a single-quoted literal ends at an unescaped line break.
fn string_end(bytes: &[u8], start: usize) -> usize {
    let quote = bytes[start];
    let triple = bytes.len() >= start + 3 && bytes[start + 1] == quote && bytes[start + 2] == quote;
    let mut i = start + if triple { 3 } else { 1 };
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'\n' | b'\r' if !triple => return i,
            b if b == quote => {
                if !triple {
                    return i + 1;
                }
                if bytes.len() >= i + 3 && bytes[i + 1] == quote && bytes[i + 2] == quote {
                    return i + 3;
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    bytes.len()
}

/// The offset of the first bracket nested deeper than `limit`, if any.
pub(crate) fn deeper_than(text: &str, limit: usize) -> Option<usize> {
    let mut found = None;
    scan(text, &mut |at, depth| {
        if depth > limit {
            found = Some(at);
        }
        found.is_none()
    });
    found
}

/// Whether `text` is one bracketed expression: it opens with a bracket whose closing bracket is
/// its last byte (`(a, b)`, not `(a), b` nor `(a) + (b)`).
pub(crate) fn is_enclosed(text: &str) -> bool {
    if !text.starts_with(['(', '[', '{']) {
        return false;
    }
    let mut closed_at = None;
    scan(text, &mut |at, depth| {
        if depth == 0 {
            closed_at = Some(at);
            return false;
        }
        true
    });
    closed_at == Some(text.len() - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enclosed_only_when_the_first_bracket_closes_last() {
        assert!(is_enclosed("(a, b)"));
        assert!(is_enclosed("(\n  x.f()\n  .g()\n)"));
        assert!(is_enclosed("(\"a)\"\n \"b\")"));
        assert!(is_enclosed("(a  # )\n)"));
        assert!(!is_enclosed("(a), b"));
        assert!(!is_enclosed("(a) + (b)"));
        assert!(!is_enclosed("a"));
    }

    #[test]
    fn depth_skips_strings_and_comments() {
        assert_eq!(deeper_than("((('(((('\n# ((((\n)))", 3), None);
        assert_eq!(deeper_than("((((", 3), Some(3));
        assert_eq!(deeper_than("'''((((\n(((('''", 1), None);
    }
}
