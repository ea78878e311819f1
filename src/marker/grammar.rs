//! The marker grammar: the one place that writes marker lines and reads them back.
//!
//! ```text
//! line      = [BOM] indent marker blanks [line-break]
//! marker    = begin | end | inline
//! begin     = "# >>> pysplice " id " " seal [" was=" json | " joined=" json]
//! end       = "# <<< pysplice " id
//! inline    = "# ~~~ pysplice " id " " seal " at=" digits " len=" digits " was=" json
//! id        = name "/" name
//! name      = 1*(ASCII letter | digit | "-" | "_" | ".")
//! seal      = "sha256:" 64*lowercase-hex | 8*lowercase-hex      ; the second: older markers
//! json      = a JSON string; it runs to the end of the line
//! indent    = *(" " | "\t" | "\x0c")
//! blanks    = *(" " | "\t" | "\x0c")
//! line-break = "\n" | "\r\n" | "\r"
//! ```
//!
//! What is accepted around a marker, and why:
//! - **Indentation**: spaces, tabs and form feeds, Python's indentation characters, so a marker
//!   survives re-indentation by an editor or a formatter. Other Unicode blanks are not Python
//!   indentation and make the line no marker.
//! - **Trailing blanks** (the same characters) are ignored, since editors add and strip them.
//!   Inside the marker, fields are separated by exactly one space, as written: nothing rewrites
//!   the middle of a comment, so anything else is a damaged marker.
//! - **Line breaks**: a line is given without its break, or with one of Python's (`\n`, `\r\n`,
//!   `\r`), which is ignored: CRLF and CR files read like LF files.
//! - **Byte order mark**: ignored at the start of the line (it precedes line 1's code).
//! - **Position**: a marker is a whole line. A marker comment after code (`x = 1  # >>> pysplice
//!   r/h`) is an ordinary comment, and a line that starts inside a string literal (a
//!   triple-quoted string, a backslash continuation) is text, never a marker: the scan of a
//!   whole file (and [`carries`]) applies that rule, [`parse_line`] sees one line only.
//! - **Ids** are what recipes may declare ([`is_id`]); a line whose id is anything else (control
//!   characters that would reach a terminal, a second `/`) is not a marker.
//!
//! Recipes may not write text that a slightly different spelling would make a marker (`#>>>
//! pysplice`, `## <<<  pysplice`): [`looks_like_marker`] and [`marker_like_offset`] recognise it
//! loosely, so the next scan never takes inserted code for a frame.

use crate::source::{file_lines_inside_strings, SourceFile};

const BEGIN: &str = "# >>> pysplice ";
const END: &str = "# <<< pysplice ";
const INLINE: &str = "# ~~~ pysplice ";
const SEAL: &str = "sha256:";
/// The marker words, for the loose recognition of marker-like text.
const ARROWS: [&str; 3] = [">>>", "<<<", "~~~"];

/// The blanks accepted before and after a marker: Python's indentation characters.
fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\x0c')
}

/// The kind of a marker line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkerKind {
    /// `# >>> pysplice`: opens a block.
    Begin,
    /// `# <<< pysplice`: closes a block.
    End,
    /// `# ~~~ pysplice`: describes a change in the line below it.
    Inline,
}

impl MarkerKind {
    fn prefix(self) -> &'static str {
        match self {
            MarkerKind::Begin => BEGIN,
            MarkerKind::End => END,
            MarkerKind::Inline => INLINE,
        }
    }
}

/// A marker line as read: kind, recipe and hook ids, and the rest of the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MarkerLine<'a> {
    /// Which marker.
    pub kind: MarkerKind,
    /// The recipe id.
    pub recipe: &'a str,
    /// The hook id.
    pub hook: &'a str,
    /// What follows `RECIPE/HOOK` and its one space (seal and attributes), without the trailing
    /// blanks of the line.
    pub fields: &'a str,
}

impl MarkerLine<'_> {
    /// Whether this opens a joined frame (an expanded one-line suite, `joined=`): the attribute
    /// after the seal says so, not text anywhere on the line (a `was=` text may hold ` joined="`).
    #[must_use]
    pub fn opens_joined(&self) -> bool {
        self.kind == MarkerKind::Begin
            && self
                .fields
                .split_once(' ')
                .is_some_and(|(_, attribute)| attribute.starts_with("joined="))
    }
}

/// Reads one line (indentation allowed, with or without its line break) as a marker line; see
/// the [module](crate::marker) for the lines pysplice writes.
#[must_use]
pub fn parse_line(line: &str) -> Option<MarkerLine<'_>> {
    let code = line
        .strip_prefix('\u{feff}')
        .unwrap_or(line)
        .trim_start_matches(is_blank)
        .trim_end_matches(['\n', '\r'])
        .trim_end_matches(is_blank);
    let (kind, rest) = [MarkerKind::Begin, MarkerKind::End, MarkerKind::Inline]
        .into_iter()
        .find_map(|kind| code.strip_prefix(kind.prefix()).map(|rest| (kind, rest)))?;
    let (id, fields) = rest.split_once(' ').unwrap_or((rest, ""));
    let (recipe, hook) = id.split_once('/')?;
    if !is_id(recipe) || !is_id(hook) {
        return None;
    }
    Some(MarkerLine {
        kind,
        recipe,
        hook,
        fields,
    })
}

/// Whether `id` can be a recipe or hook id: non-empty ASCII letters, digits, `-`, `_`, `.`.
#[must_use]
pub fn is_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// A marker line of `file`, where it is.
pub(crate) struct Found<'a> {
    /// The marker.
    pub(crate) marker: MarkerLine<'a>,
    /// 1-based line.
    pub(crate) line: usize,
    /// Offset of the line's start (after a BOM).
    pub(crate) start: usize,
}

/// Every marker line of every recipe in `file`, in order; lines that start inside a string
/// literal are text, never markers.
pub(crate) fn marker_lines(file: &SourceFile) -> Vec<Found<'_>> {
    let text = file.text();
    // Every marker line holds " pysplice ": a file without it (most files) has none, and a
    // substring search is far cheaper than reading its strings and lines.
    if !text.contains(" pysplice ") {
        return Vec::new();
    }
    let in_strings = file_lines_inside_strings(file);
    let mut found = Vec::new();
    for line in 1..=file.lines().line_count() {
        let range = file.line_range(line);
        let start = file.code_start(line).min(range.end);
        let code = &text[start..range.end];
        // A cheap test first: most lines are no comment.
        if !code.trim_start_matches(is_blank).starts_with('#') || in_strings.binary_search(&line).is_ok() {
            continue;
        }
        if let Some(marker) = parse_line(code) {
            found.push(Found { marker, line, start });
        }
    }
    found
}

/// Whether `text` has a marker line of `recipe`.
#[must_use]
pub fn carries(text: &str, recipe: &str) -> bool {
    // Most files mention no recipe: the full scan only for those that do.
    text.contains(&format!("pysplice {recipe}/"))
        && marker_lines(&SourceFile::new("<text>", text))
            .iter()
            .any(|found| found.marker.recipe == recipe)
}

/// Whether `line` looks like a marker line, also with other spacing or repeated `#` (`#>>>
/// pysplice`): text that recipes must never write, since the next scan would take it for one.
#[must_use]
pub fn looks_like_marker(line: &str) -> bool {
    let code = line.trim_start_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
    let Some(rest) = code.strip_prefix('#') else {
        return false;
    };
    let rest = rest.trim_start_matches(|c: char| c == '#' || c.is_whitespace());
    ARROWS.iter().any(|arrow| {
        rest.strip_prefix(arrow)
            .is_some_and(|r| r.trim_start().starts_with("pysplice"))
    })
}

/// The offset in `text` of the first marker word followed by `pysplice` (`>>> pysplice`,
/// `<<<pysplice`, ...) anywhere, for pointing at marker-like text in a recipe's TOML source,
/// where escapes (`\n`) hide the line structure.
#[must_use]
pub fn marker_like_offset(text: &str) -> Option<usize> {
    text.match_indices("pysplice").find_map(|(i, _)| {
        let before = text[..i].trim_end();
        ARROWS
            .iter()
            .any(|arrow| before.ends_with(arrow))
            .then(|| before.len() - 3)
    })
}

/// A seal as read from a marker.
#[derive(Clone, Debug)]
pub(crate) enum Seal {
    /// `sha256:` and 64 hex digits.
    Current(String),
    /// 8 hex digits, written before the seal covered the displaced text.
    Legacy(String),
}

impl Seal {
    /// The seal token `token`, if it is one.
    pub(crate) fn read(token: &str) -> Option<Seal> {
        let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        match token.strip_prefix(SEAL) {
            Some(digits) if hex(digits, 64) => Some(Seal::Current(token.to_string())),
            None if hex(token, 8) => Some(Seal::Legacy(token.to_string())),
            _ => None,
        }
    }

    /// The token as written.
    pub(crate) fn token(&self) -> &str {
        match self {
            Seal::Current(token) | Seal::Legacy(token) => token,
        }
    }
}

/// The seal token for SHA-256 `digest` bytes.
pub(crate) fn seal_token(digest: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(SEAL.len() + 2 * digest.len());
    out.push_str(SEAL);
    for byte in digest {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// What an opening marker says after its id.
#[derive(Clone, Debug)]
pub(crate) struct BeginFields {
    /// The seal.
    pub(crate) seal: Seal,
    /// The displaced text, and whether it was joined to the line before (`joined=`) rather than
    /// whole lines (`was=`); `None` for a pure insertion.
    pub(crate) displaced: Option<(String, bool)>,
}

/// Reads the fields of an opening marker: the seal, then at most one attribute, whose JSON runs
/// to the line end (and may itself contain ` was=`). The error is the reason, for people.
pub(crate) fn begin_fields(fields: &str) -> Result<BeginFields, &'static str> {
    let json =
        |value: &str| serde_json::from_str::<String>(value).map_err(|_| "the displaced text in this marker is damaged");
    let (token, attribute) = fields.split_once(' ').unwrap_or((fields, ""));
    let displaced = if attribute.is_empty() {
        None
    } else if let Some(was) = attribute.strip_prefix("was=") {
        Some((json(was)?, false))
    } else if let Some(joined) = attribute.strip_prefix("joined=") {
        Some((json(joined)?, true))
    } else {
        return Err("this marker has an unknown attribute");
    };
    let seal = Seal::read(token).ok_or("the seal of this marker is damaged")?;
    Ok(BeginFields { seal, displaced })
}

/// Reads the fields of a closing marker: there are none.
pub(crate) fn end_fields(fields: &str) -> Result<(), &'static str> {
    if fields.is_empty() {
        Ok(())
    } else {
        Err("this closing marker is damaged")
    }
}

/// What an inline marker says after its id.
#[derive(Clone, Debug)]
pub(crate) struct InlineFields {
    /// The seal.
    pub(crate) seal: Seal,
    /// The byte column (0-based) of the change in the next line.
    pub(crate) column: usize,
    /// The length of the changed text.
    pub(crate) len: usize,
    /// The text the change displaced.
    pub(crate) was: String,
}

/// Reads the fields of an inline marker, `SEAL at=N len=N was=JSON` in this order (the JSON
/// runs to the line end). The error says what is damaged.
pub(crate) fn inline_fields(fields: &str) -> Result<InlineFields, String> {
    let mut words = fields.splitn(4, ' ');
    let mut next = |key: &str| {
        words
            .next()
            .and_then(|word| word.strip_prefix(key))
            .ok_or_else(|| format!("no `{key}`"))
    };
    let (token, column, len, was) = (next("")?, next("at=")?, next("len=")?, next("was=")?);
    let seal = Seal::read(token).ok_or("bad seal")?;
    let column: usize = column.parse().map_err(|_| "bad column")?;
    let len: usize = len.parse().map_err(|_| "bad length")?;
    let was: String = serde_json::from_str(was).map_err(|_| "bad `was=`")?;
    Ok(InlineFields { seal, column, len, was })
}

/// What a block's opening marker says it displaced: `(attribute, text)` with the attribute
/// `"was"` or `"joined"`; `None` for a pure insertion.
pub(crate) type Attribute<'a> = Option<(&'static str, &'a str)>;

/// The opening marker line of a block, with its line break.
pub(crate) fn begin_line(
    indent: &str,
    recipe: &str,
    hook: &str,
    seal: &str,
    attribute: Attribute<'_>,
    newline: &str,
) -> String {
    let attribute = attribute.map_or(String::new(), |(key, text)| format!(" {key}={}", json_string(text)));
    format!("{indent}{BEGIN}{recipe}/{hook} {seal}{attribute}{newline}")
}

/// The closing marker line of a block, without a line break.
pub(crate) fn end_line(indent: &str, recipe: &str, hook: &str) -> String {
    format!("{indent}{END}{recipe}/{hook}")
}

/// The marker line of an inline change, with its line break: `len` bytes at byte `column` of the
/// next line, which held `was` there.
pub(crate) fn inline_line(
    indent: &str,
    recipe: &str,
    hook: &str,
    seal: &str,
    (column, len): (usize, usize),
    was: &str,
    newline: &str,
) -> String {
    let was = json_string(was);
    format!("{indent}{INLINE}{recipe}/{hook} {seal} at={column} len={len} was={was}{newline}")
}

fn json_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEALED: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn ids(line: &str) -> Option<(MarkerKind, &str, &str, &str)> {
        parse_line(line).map(|m| (m.kind, m.recipe, m.hook, m.fields))
    }

    #[test]
    fn marker_lines_need_valid_ids() {
        assert_eq!(
            ids("    # ~~~ pysplice r/h sha256:00 at=1"),
            Some((MarkerKind::Inline, "r", "h", "sha256:00 at=1"))
        );
        assert!(parse_line("# >>> pysplice r/h\u{1b}[2J x").is_none());
        assert!(parse_line("# >>> pysplice r/h/x y").is_none());
        assert!(parse_line("# >>> pysplice rh y").is_none());
        assert!(parse_line("# >>> pysplice nohook").is_none());
        assert!(parse_line("# >>> pysplice /h").is_none());
    }

    #[test]
    fn indentation_is_pythons_blanks() {
        for line in [
            "\t# <<< pysplice r/h",
            "  \t # <<< pysplice r/h",
            "\x0c    # <<< pysplice r/h",
        ] {
            assert_eq!(ids(line), Some((MarkerKind::End, "r", "h", "")), "{line:?}");
        }
        // Not Python indentation (and not valid Python before code): no marker.
        assert!(parse_line("\u{a0}# <<< pysplice r/h").is_none());
        assert!(parse_line("\u{2003}# <<< pysplice r/h").is_none());
    }

    #[test]
    fn line_breaks_and_trailing_blanks_are_ignored() {
        for line in [
            "# <<< pysplice r/h\n",
            "# <<< pysplice r/h\r\n",
            "# <<< pysplice r/h\r",
            "# <<< pysplice r/h  \t\r\n",
            "\u{feff}# <<< pysplice r/h",
        ] {
            assert_eq!(ids(line), Some((MarkerKind::End, "r", "h", "")), "{line:?}");
        }
        assert_eq!(
            ids(&format!("    # >>> pysplice r/h {SEALED} was=\"x\" \r\n")),
            Some((MarkerKind::Begin, "r", "h", format!("{SEALED} was=\"x\"").as_str()))
        );
        // A trailing Unicode blank is part of the id, which then is none.
        assert!(parse_line("# <<< pysplice r/h\u{a0}").is_none());
    }

    #[test]
    fn a_marker_is_a_whole_line() {
        assert!(parse_line("x = 1  # >>> pysplice r/h").is_none());
        assert!(parse_line("'# >>> pysplice r/h'").is_none());
        assert!(parse_line("#>>> pysplice r/h").is_none());
        assert!(parse_line("# >>>  pysplice r/h").is_none());
    }

    #[test]
    fn lines_inside_string_literals_are_no_markers() {
        let text = "s = \"\"\"\n# <<< pysplice r/h\n\"\"\"\nt = 'a\\\n# <<< pysplice r/h'\n# <<< pysplice r/h\r\n";
        let file = SourceFile::new("m.py", text);
        let lines: Vec<usize> = marker_lines(&file).iter().map(|f| f.line).collect();
        assert_eq!(lines, [6]);
        assert!(carries(text, "r"));
        assert!(!carries("s = '''\n# <<< pysplice r/h\n'''\n", "r"));
        assert!(!carries(text, "q"));
    }

    #[test]
    fn cr_only_files_have_marker_lines() {
        let text = "x = 1\r# >>> pysplice r/h 0123abcd\ry = 2\r# <<< pysplice r/h\r";
        let file = SourceFile::new("m.py", text);
        let kinds: Vec<MarkerKind> = marker_lines(&file).iter().map(|f| f.marker.kind).collect();
        assert_eq!(kinds, [MarkerKind::Begin, MarkerKind::End]);
    }

    #[test]
    fn seals_are_current_or_legacy() {
        assert!(matches!(Seal::read(SEALED), Some(Seal::Current(_))));
        assert!(matches!(Seal::read("0123abcd"), Some(Seal::Legacy(_))));
        for bad in ["0123ABCD", "0123abc", "0123abcde", "sha256:00", "sha256:0123abcd", ""] {
            assert!(Seal::read(bad).is_none(), "{bad}");
        }
        assert_eq!(seal_token(&[0, 0xab]), "sha256:00ab");
    }

    #[test]
    fn opening_fields_carry_one_attribute() {
        let read = |fields: &str| begin_fields(fields).map(|f| (f.seal.token().to_string(), f.displaced));
        assert_eq!(read("0123abcd"), Ok(("0123abcd".into(), None)));
        assert_eq!(
            read(&format!("{SEALED} was=\"a was=b\"")),
            Ok((SEALED.into(), Some(("a was=b".into(), false))))
        );
        assert_eq!(
            read("0123abcd joined=\"x\""),
            Ok(("0123abcd".into(), Some(("x".into(), true))))
        );
        assert_eq!(
            read("0123abcd other=\"x\""),
            Err("this marker has an unknown attribute")
        );
        assert_eq!(
            read("0123abcd was=\"x"),
            Err("the displaced text in this marker is damaged")
        );
        assert_eq!(read("0123abc"), Err("the seal of this marker is damaged"));
        assert_eq!(end_fields(""), Ok(()));
        assert!(end_fields("x").is_err());
    }

    #[test]
    fn inline_fields_come_in_order() {
        let fields = inline_fields("0123abcd at=4 len=2 was=\"x y\"").unwrap();
        assert_eq!((fields.column, fields.len, fields.was.as_str()), (4, 2, "x y"));
        assert_eq!(inline_fields("0123abcd len=2 at=4 was=\"x\"").unwrap_err(), "no `at=`");
        assert_eq!(
            inline_fields("0123abcd at=x len=2 was=\"x\"").unwrap_err(),
            "bad column"
        );
        assert_eq!(inline_fields("nope at=1 len=2 was=\"x\"").unwrap_err(), "bad seal");
        assert_eq!(inline_fields("0123abcd at=1 len=2").unwrap_err(), "no `was=`");
    }

    #[test]
    fn written_lines_read_back() {
        let begin = begin_line("\t", "r", "h", SEALED, Some(("was", "a \"b\"")), "\r\n");
        let line = parse_line(&begin).unwrap();
        assert_eq!((line.kind, line.recipe, line.hook), (MarkerKind::Begin, "r", "h"));
        let fields = begin_fields(line.fields).unwrap();
        assert_eq!(fields.displaced, Some(("a \"b\"".into(), false)));
        let end = end_line("    ", "r", "h");
        assert_eq!(parse_line(&end).map(|m| m.kind), Some(MarkerKind::End));
        let inline = inline_line("", "r", "h", SEALED, (4, 6), "return x", "\n");
        let fields = inline_fields(parse_line(&inline).unwrap().fields).unwrap();
        assert_eq!((fields.column, fields.len, fields.was.as_str()), (4, 6, "return x"));
        for line in [&begin, &end, &inline] {
            assert!(looks_like_marker(line), "{line}");
        }
    }

    #[test]
    fn joined_openers_are_told_by_their_attribute() {
        // A replaced line ending in ` joined=` puts ` joined="` on its marker line; placement
        // once took that for an expanded one-line suite.
        let was = begin_line("", "r", "h", SEALED, Some(("was", "x = 1  # joined=")), "\n");
        assert!(was.contains(" joined=\""));
        assert!(!parse_line(&was).unwrap().opens_joined());
        let joined = begin_line("", "r", "h", SEALED, Some(("joined", "return x")), "\n");
        assert!(parse_line(&joined).unwrap().opens_joined());
        assert!(!parse_line("# <<< pysplice r/h").unwrap().opens_joined());
    }

    #[test]
    fn marker_like_text_is_recognised_loosely() {
        for line in [
            "# >>> pysplice r/h",
            "  #>>>pysplice",
            "## <<<  pysplice x",
            "\t# ~~~ pysplice",
        ] {
            assert!(looks_like_marker(line), "{line}");
        }
        for line in [
            "x = 1  # >>> pysplice",
            "# >> pysplice",
            "# >>> other",
            "'# >>> pysplice'",
        ] {
            assert!(!looks_like_marker(line), "{line}");
        }
        assert_eq!(marker_like_offset("code = \"x\\n#<<<  pysplice r/h\""), Some(12));
        assert_eq!(marker_like_offset("pysplice >>"), None);
    }
}
