//! The text of one Python file: its bytes, its style and its line index.
//!
//! Offsets are byte offsets into the text everywhere inside the crate. Positions shown to people
//! are 1-based lines and columns, in UTF-8 bytes or in UTF-16 code units (what LSP clients count).

mod literals;

use std::ops::Range;

use crate::location::Location;

pub(crate) use literals::{file_lines_inside_strings, lines_inside_strings, newlines_inside_literals};

/// Why bytes are not the text of a source file ([`SourceFile::decode`]); the crate's
/// [`ErrorKind::Syntax`](crate::ErrorKind::Syntax) or [`ErrorKind::NotUtf8`](crate::ErrorKind::NotUtf8)
/// once it becomes a [`crate::Error`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DecodeError {
    /// A PEP 263 coding declaration names another encoding than UTF-8 (CPython's `SyntaxError`);
    /// the location is the declaration.
    #[error("{location}: invalid Python: {message}")]
    Encoding {
        /// The message, as CPython's.
        message: String,
        /// Where the declaration is.
        location: Location,
    },
    /// The bytes are not UTF-8; the location is the first invalid byte.
    #[error("{location}: the file is not valid UTF-8 (byte {byte:#04x}); Python source must be UTF-8 encoded")]
    NotUtf8 {
        /// The first invalid byte.
        byte: u8,
        /// Where it is.
        location: Location,
    },
}

/// The line ending a file uses. Python breaks lines on `\n`, `\r\n` and `\r` only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
pub enum Newline {
    /// `\n`
    Lf,
    /// `\r\n`
    CrLf,
    /// `\r`
    Cr,
}

impl Newline {
    /// The characters of this line ending.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Newline::Lf => "\n",
            Newline::CrLf => "\r\n",
            Newline::Cr => "\r",
        }
    }
}

/// How a file is written: indentation unit, line ending, byte order mark. Derived once per file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Style {
    indent_unit: String,
    newline: Newline,
    bom: bool,
}

impl Style {
    /// Derives the style of `text`: the newline from its first line break, the indentation unit
    /// from the first indented line that follows a line ending in `:` (four spaces by default).
    #[must_use]
    pub fn detect(text: &str) -> Style {
        let newline = match text.find(['\n', '\r']) {
            Some(i) if text[i..].starts_with("\r\n") => Newline::CrLf,
            Some(i) if text.as_bytes()[i] == b'\r' => Newline::Cr,
            _ => Newline::Lf,
        };
        Style {
            indent_unit: detect_indent_unit(text),
            newline,
            bom: text.starts_with('\u{feff}'),
        }
    }

    /// One level of indentation, as the file writes it (`"    "`, `"  "`, `"\t"`).
    #[must_use]
    pub fn indent_unit(&self) -> &str {
        &self.indent_unit
    }

    /// The file's line ending.
    #[must_use]
    pub fn newline(&self) -> Newline {
        self.newline
    }

    /// Whether the file starts with a UTF-8 byte order mark.
    #[must_use]
    pub fn has_bom(&self) -> bool {
        self.bom
    }
}

/// The indentation added by the first block opener (`...:` at the end of a line). Comment lines,
/// blank lines and continuation lines inside brackets are poor guides, so they are passed over.
fn detect_indent_unit(text: &str) -> String {
    let mut opener_indent: Option<&str> = None;
    for line in text.split(['\n', '\r']) {
        let trimmed = line.trim_start_matches([' ', '\t', '\x0c']);
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let indent = &line[..line.len() - trimmed.len()];
        if let Some(outer) = opener_indent {
            if indent.len() > outer.len() && indent.starts_with(outer) {
                let unit = &indent[outer.len()..];
                // Only all spaces or all tabs make a unit (a form feed, or a line inside a
                // string that merely looks like a block, does not).
                if unit.bytes().all(|b| b == b' ') || unit.bytes().all(|b| b == b'\t') {
                    return unit.to_string();
                }
                return "    ".to_string();
            }
        }
        let code = trimmed.split(" #").next().unwrap_or(trimmed).trim_end();
        opener_indent = code.ends_with(':').then_some(indent);
    }
    "    ".to_string()
}

/// A 1-based line and column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
pub struct LineColumn {
    /// 1-based line number.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
}

/// Byte offsets of line starts, for turning offsets into lines and columns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    /// Indexes `text`, breaking lines on `\n`, `\r\n` and `\r`. O(n).
    #[must_use]
    pub fn new(text: &str) -> LineIndex {
        let bytes = text.as_bytes();
        let mut starts = vec![0];
        // The `\n` of a `\r\n`, already counted with its `\r`.
        let mut joined = None;
        for i in memchr::memchr2_iter(b'\n', b'\r', bytes) {
            if joined == Some(i) {
                continue;
            }
            if bytes[i] == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
                joined = Some(i + 1);
                starts.push(i + 2);
            } else {
                starts.push(i + 1);
            }
        }
        LineIndex { starts }
    }

    /// The byte offsets where lines start (the first is 0; the text's end when it ends with a
    /// line break).
    pub(crate) fn into_starts(self) -> Vec<usize> {
        self.starts
    }

    /// The number of lines (a final line without a line break counts; an empty text has one).
    #[must_use]
    pub fn line_count(&self) -> usize {
        self.starts.len()
    }

    /// The 1-based line holding byte `offset` (offsets past the end map to the last line). O(log n).
    #[must_use]
    pub fn line_of(&self, offset: usize) -> usize {
        self.starts.partition_point(|&start| start <= offset).max(1)
    }

    /// The byte offset where 1-based `line` starts, if the text has that line.
    #[must_use]
    pub fn line_start(&self, line: usize) -> Option<usize> {
        line.checked_sub(1).and_then(|i| self.starts.get(i).copied())
    }
}

/// One Python file in memory: its name (for messages), text, style and line index.
#[derive(Clone, Debug)]
pub struct SourceFile {
    name: String,
    text: String,
    style: Style,
    lines: LineIndex,
}

impl SourceFile {
    /// Wraps `text` read from `name` (the name is used in messages only).
    ///
    /// ```
    /// let file = pysplice::SourceFile::new("m.py", "x = 1\r\ny = 'é'\r\n");
    /// assert_eq!(file.style().newline(), pysplice::Newline::CrLf);
    /// assert_eq!(file.position(13).line, 2);
    /// ```
    #[must_use]
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> SourceFile {
        let text = text.into();
        SourceFile {
            name: name.into(),
            style: Style::detect(&text),
            lines: LineIndex::new(&text),
            text,
        }
    }

    /// Decodes `bytes` as UTF-8 (the work of the public [`SourceFile::from_bytes`]).
    ///
    /// # Errors
    /// [`DecodeError::Encoding`] naming the declaration when it declares another encoding (or,
    /// after a UTF-8 byte order mark, anything but UTF-8, as CPython says),
    /// [`DecodeError::NotUtf8`] when the bytes are not valid UTF-8.
    pub(crate) fn decode(name: String, bytes: Vec<u8>) -> Result<SourceFile, DecodeError> {
        if let Some(declared) = coding_declaration(&bytes) {
            if !is_utf8_name(&declared.name) {
                let bom = bytes.starts_with(b"\xef\xbb\xbf");
                let message = if bom {
                    format!("encoding problem: {} with BOM", declared.name)
                } else {
                    format!(
                        "declared encoding {} is not supported; pysplice reads and writes UTF-8 only",
                        declared.name
                    )
                };
                return Err(DecodeError::Encoding {
                    message,
                    location: Location::new(name, declared.line, declared.column),
                });
            }
        }
        match String::from_utf8(bytes) {
            Ok(text) => Ok(SourceFile::new(name, text)),
            Err(err) => {
                let valid = err.utf8_error().valid_up_to();
                let bytes = err.into_bytes();
                // Lines and columns of the valid prefix are exact; the bad byte starts right after it.
                let prefix = String::from_utf8_lossy(&bytes[..valid]).into_owned();
                let probe = SourceFile::new(name.clone(), prefix);
                let at = probe.position(valid);
                Err(DecodeError::NotUtf8 {
                    byte: bytes[valid],
                    location: Location::new(name, at.line, at.column),
                })
            }
        }
    }

    /// The name given when the file was made.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The whole text, BOM included.
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The file's indentation, newline and BOM.
    #[must_use]
    pub fn style(&self) -> &Style {
        &self.style
    }

    /// The line index of the text.
    #[must_use]
    pub fn lines(&self) -> &LineIndex {
        &self.lines
    }

    /// The text of a byte range, or `""` when the range is not on character boundaries.
    #[must_use]
    pub fn slice(&self, range: Range<usize>) -> &str {
        self.text.get(range).unwrap_or("")
    }

    /// Where line 1's columns start: after the BOM, which neither CPython nor editors count.
    fn first_column_offset(&self, line: usize) -> usize {
        if line == 1 && self.style.bom {
            '\u{feff}'.len_utf8()
        } else {
            self.lines.line_start(line).unwrap_or(0)
        }
    }

    /// Where the code of 1-based `line` starts: the line start, after the BOM on line 1.
    #[must_use]
    pub fn code_start(&self, line: usize) -> usize {
        self.first_column_offset(line)
    }

    /// 1-based line and 1-based column counted in UTF-8 bytes of the byte `offset` (clamped to the
    /// text). A BOM is not counted.
    #[must_use]
    pub fn position(&self, offset: usize) -> LineColumn {
        let offset = offset.min(self.text.len());
        let line = self.lines.line_of(offset);
        let start = self.first_column_offset(line);
        LineColumn {
            line,
            column: offset.saturating_sub(start) + 1,
        }
    }

    /// 1-based line and 1-based column counted in UTF-16 code units, as editors count (a BOM is
    /// not counted).
    #[must_use]
    pub fn position_utf16(&self, offset: usize) -> LineColumn {
        let offset = floor_char_boundary(&self.text, offset.min(self.text.len()));
        let line = self.lines.line_of(offset);
        let start = self.first_column_offset(line).min(offset);
        let units: usize = self.text[start..offset].chars().map(char::len_utf16).sum();
        LineColumn {
            line,
            column: units + 1,
        }
    }

    /// The byte offset of a 1-based line and 1-based UTF-16 column (clamped to the line).
    #[must_use]
    pub fn offset_of_utf16(&self, at: LineColumn) -> usize {
        if self.lines.line_start(at.line).is_none() {
            return self.text.len();
        }
        let start = self.first_column_offset(at.line);
        let end = self.lines.line_start(at.line + 1).unwrap_or(self.text.len());
        let mut units = 0;
        for (i, ch) in self.text[start..end].char_indices() {
            if units + 1 >= at.column || ch == '\n' || ch == '\r' {
                return start + i;
            }
            units += ch.len_utf16();
        }
        end
    }

    /// A [`Location`] (file, line, column) for the byte `offset`.
    #[must_use]
    pub fn location(&self, offset: usize) -> Location {
        let at = self.position(offset);
        Location::new(self.name.clone(), at.line, at.column)
    }

    /// The byte range of 1-based `line`, without its line break.
    #[must_use]
    pub fn line_range(&self, line: usize) -> Range<usize> {
        let start = self.lines.line_start(line).unwrap_or(self.text.len());
        let mut end = self.lines.line_start(line + 1).unwrap_or(self.text.len());
        let bytes = self.text.as_bytes();
        while end > start && matches!(bytes[end - 1], b'\n' | b'\r') {
            end -= 1;
        }
        start..end
    }
}

/// A PEP 263 coding declaration: the encoding's name as written, and where it is (1-based line,
/// 1-based byte column, not counting a byte order mark).
#[derive(Debug, PartialEq, Eq)]
struct Declaration {
    name: String,
    line: usize,
    column: usize,
}

/// The coding declaration of a file, as CPython finds it: a comment on line 1, or on line 2 when
/// line 1 is a comment or blank, matching `^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)`.
fn coding_declaration(bytes: &[u8]) -> Option<Declaration> {
    let body = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    let mut lines = body.split(|&b| b == b'\n' || b == b'\r');
    for line in 1..=2 {
        let text = lines.next()?;
        let code = text.trim_ascii_start();
        if !code.starts_with(b"#") {
            // Only a comment or blank line 1 lets line 2 declare.
            if code.is_empty() {
                continue;
            }
            return None;
        }
        if let Some((column, name)) = declared_name(text) {
            return Some(Declaration { name, line, column });
        }
    }
    None
}

/// The name in `coding[:=] NAME` on a comment line, with its 1-based column.
fn declared_name(line: &[u8]) -> Option<(usize, String)> {
    let mut from = 0;
    while let Some(found) = line[from..].windows(6).position(|w| w == b"coding") {
        let after = from + found + 6;
        from = after;
        if !matches!(line.get(after), Some(b':' | b'=')) {
            continue;
        }
        let mut start = after + 1;
        while matches!(line.get(start), Some(b' ' | b'\t')) {
            start += 1;
        }
        let len = line[start..]
            .iter()
            .take_while(|&&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            .count();
        if len > 0 {
            return Some((
                start + 1,
                String::from_utf8_lossy(&line[start..start + len]).into_owned(),
            ));
        }
    }
    None
}

/// Whether a declared encoding is UTF-8 under one of the names Python knows it by.
fn is_utf8_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase().replace('_', "-");
    matches!(name.as_str(), "utf-8" | "utf8" | "u8" | "utf" | "cp65001") || name.starts_with("utf-8-")
}

/// The largest char boundary at or before `offset`.
pub(crate) fn floor_char_boundary(text: &str, mut offset: usize) -> usize {
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn style_detects_newlines_indent_and_bom() {
        let style = Style::detect("\u{feff}class A:\r\n\tdef f(self):\r\n\t\tpass\r\n");
        assert_eq!(style.newline(), Newline::CrLf);
        assert_eq!(style.indent_unit(), "\t");
        assert!(style.has_bom());
        assert_eq!(Style::detect("x\ry\r").newline(), Newline::Cr);
        assert_eq!(Style::detect("if x:\n  # c\n  y\n").indent_unit(), "  ");
        assert_eq!(Style::detect("x = 1\n").indent_unit(), "    ");
        assert_eq!(
            Style::detect("\"\"\"\ndef f():\n  \x0c\x0cx\"\"\"\n").indent_unit(),
            "    "
        );
    }

    #[test]
    fn line_index_breaks_only_on_python_newlines() {
        let index = LineIndex::new("a\nb\r\nc\rd\x0ce\u{2028}f");
        assert_eq!(index.line_count(), 4);
        assert_eq!(index.line_of(0), 1);
        assert_eq!(index.line_of(2), 2);
        assert_eq!(index.line_of(5), 3);
        assert_eq!(index.line_of(7), 4);
        assert_eq!(index.line_start(4), Some(7));
        assert_eq!(index.line_start(5), None);
    }

    #[test]
    fn utf16_columns_differ_from_byte_columns() {
        let file = SourceFile::new("m.py", "s = 'é😀'; x = 1\n");
        let x = file.text().find("x =").unwrap();
        assert_eq!(file.position(x), LineColumn { line: 1, column: 15 });
        assert_eq!(file.position_utf16(x), LineColumn { line: 1, column: 12 });
        assert_eq!(file.offset_of_utf16(LineColumn { line: 1, column: 12 }), x);
    }

    #[test]
    fn bom_is_not_counted_in_columns() {
        let file = SourceFile::new("b.py", "\u{feff}class A: pass\n");
        assert_eq!(file.position(3), LineColumn { line: 1, column: 1 });
        assert_eq!(file.position_utf16(9), LineColumn { line: 1, column: 7 });
        assert_eq!(file.offset_of_utf16(LineColumn { line: 1, column: 7 }), 9);
    }

    fn declared(bytes: &[u8]) -> Result<SourceFile, String> {
        SourceFile::from_bytes("enc.py", bytes.to_vec()).map_err(|err| err.to_string())
    }

    #[test]
    fn coding_declarations_must_name_utf8() {
        for ok in [
            &b"# -*- coding: utf-8 -*-\nx = '\xc3\xa9'\n"[..],
            b"#!/usr/bin/env python\n# vim: set fileencoding=UTF_8 :\nx = 1\n",
            b"\xef\xbb\xbf# coding: utf-8\nx = 1\n",
            b"# coding=utf8\n",
            b"# coding: utf-8-sig\n",
            // Line 2 declares only under a comment or blank line 1.
            b"x = 1\n# coding: latin-1\n",
            b"# first\n# second\n# coding: latin-1\n",
            // Not a comment: a string that mentions a coding.
            b"s = '# coding: latin-1'\n",
            b"# encoding: \n",
        ] {
            assert!(declared(ok).is_ok(), "{}", String::from_utf8_lossy(ok));
        }
        assert_eq!(
            declared(b"# -*- coding: latin-1 -*-\nx = '\xe9'\n").unwrap_err(),
            "enc.py:1:15: invalid Python: declared encoding latin-1 is not supported; \
             pysplice reads and writes UTF-8 only"
        );
        assert_eq!(
            declared(b"#!/usr/bin/python\n  # vim: fileencoding=cp1252\nx = 1\n").unwrap_err(),
            "enc.py:2:23: invalid Python: declared encoding cp1252 is not supported; \
             pysplice reads and writes UTF-8 only"
        );
        assert_eq!(
            declared(b"\n# coding: ascii\r\nx = 1\r\n").unwrap_err(),
            "enc.py:2:11: invalid Python: declared encoding ascii is not supported; \
             pysplice reads and writes UTF-8 only"
        );
        assert_eq!(
            declared(b"\xef\xbb\xbf# coding: latin-1\nx = 1\n").unwrap_err(),
            "enc.py:1:11: invalid Python: encoding problem: latin-1 with BOM"
        );
    }

    #[test]
    fn non_utf8_bytes_are_reported_with_their_position() {
        let err = SourceFile::from_bytes("bad.py", b"x = 1\ny = '\xff'\n".to_vec()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "bad.py:2:6: the file is not valid UTF-8 (byte 0xff); Python source must be UTF-8 encoded"
        );
    }
}
