//! The one printable form of text from outside (a file name, a hook id, an architecture) in
//! what the library and the programs show: control and bidirectional formatting characters
//! escaped ([`printable`]), and, where a name sits inside a message, cut to a length
//! ([`shown`]). The Python programs follow the same rule.

use std::borrow::Cow;
use std::fmt::Write;

/// At most this many chars of a name a message shows ([`shown`]).
const SHOWN_CHARS: usize = 80;

/// `text` safe to print on a terminal: control characters (C0 with line breaks and tabs, DEL,
/// C1) and the bidirectional formatting characters (which reorder what a terminal or editor
/// shows) written as escapes (`\x1b`, `\n`, `\u{202e}`); anything else unchanged. For file
/// names and other text from outside in human-readable output: a name such as
/// `evil\x1b]0;PWNED\x07.py` can neither retitle the terminal nor fake a line.
///
/// ```
/// use pysplice::report::printable;
/// assert_eq!(printable("evil\u{1b}]0;PWNED\u{7}x.py"), "evil\\x1b]0;PWNED\\x07x.py");
/// assert_eq!(printable("a\nb\u{202e}c"), "a\\nb\\u{202e}c");
/// assert_eq!(printable("models/qwen2_moe.py"), "models/qwen2_moe.py");
/// ```
#[must_use]
pub fn printable(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// [`printable`], keeping line breaks (`\n`) as they are: for messages of several lines.
#[must_use]
pub fn printable_lines(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

fn escape(text: &str, keep_newlines: bool) -> Cow<'_, str> {
    let unsafe_char = |c: char| (c.is_control() && !(keep_newlines && c == '\n')) || is_bidi_control(c);
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !unsafe_char(c) {
            out.push(c);
            continue;
        }
        let _ = match c {
            '\n' => write!(out, "\\n"),
            '\r' => write!(out, "\\r"),
            '\t' => write!(out, "\\t"),
            c if (c as u32) < 0x100 => write!(out, "\\x{:02x}", c as u32),
            c => write!(out, "\\u{{{:x}}}", c as u32),
        };
    }
    Cow::Owned(out)
}

/// The characters that change the display order of the text around them (Unicode's bidi
/// embeddings, overrides, isolates and marks).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `n` with the noun for that many, as a message counts things: `1 named parameter`,
/// `0 named parameters`, `2 named parameters`.
///
/// ```
/// use pysplice::report::counted;
/// assert_eq!(counted(1, "return", "returns"), "1 return");
/// assert_eq!(counted(0, "class", "classes"), "0 classes");
/// ```
#[must_use]
pub fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `name` inside a message: [`printable`], cut after 80 chars with `...` and the full length
/// in bytes, so that an untrusted name can neither fill the screen nor drive the terminal.
///
/// ```
/// use pysplice::report::shown;
/// assert_eq!(shown("Evil\u{1b}]0;x\u{7}"), "Evil\\x1b]0;x\\x07");
/// assert_eq!(shown(&"a".repeat(81)), format!("{}... (81 bytes)", "a".repeat(80)));
/// ```
#[must_use]
pub fn shown(name: &str) -> String {
    let mut chars = name.chars();
    let head: String = chars.by_ref().take(SHOWN_CHARS).collect();
    let mut out = printable(&head).into_owned();
    if chars.next().is_some() {
        let _ = write!(out, "... ({} bytes)", name.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_in_a_message_is_escaped_as_printable_escapes_it_and_cut() {
        for name in ["A\u{1b}]0;x\u{7}", "a\nb\u{202e}c\td", "models/qwen2_moe.py", "\u{85}x"] {
            assert_eq!(shown(name), printable(name), "{name:?}");
        }
        let cut = shown(&format!("\u{1b}{}", "a".repeat(1000)));
        assert_eq!(cut, format!("\\x1b{}... (1001 bytes)", "a".repeat(79)));
    }
}
