//! Code templates: `{name}` is replaced by a recipe variable or a built-in (`{value}`,
//! `{param.N}`, `{param.args}`, `{param.kwargs}`), `{$NAME}` by what the hook's pattern captured
//! as `$NAME` (its source text; `{$NAME!r}` the same text as a Python string literal); `{{` and
//! `}}` are literal braces. A placeholder is a Python name, `param.N`, `param.args`,
//! `param.kwargs`, `$NAME` or `$NAME!r` in braces; any other `{...}` (`{}`, `{x: 1}`, `{a, b}`,
//! `{0}`, `{x!r}`) is left as written. `$` is no Python token, so `{$NAME}` never clashes with
//! code. A placeholder that names nothing is a spec error (see [`Template::placeholders`]): a set
//! of one name or an f-string field is written with doubled braces, `{{x}}`.
//!
//! A capture of one expression keeps its meaning where it goes: `(1 + 2)` captured (its text
//! `1 + 2`, brackets being no part of a node) and used as `{$X} * 2` is inserted as
//! `(1 + 2) * 2`, while `print({$X})` stays `print(1 + 2)`. The code is parsed with the capture
//! as written; where no node of the capture's kind spans it exactly, the code around it would
//! bind into it, and it is parenthesized (see [`Template::render`]). Sequences (`$$$ARGS`) and
//! identifiers are always inserted as written, and so is a capture inside a comment.
//!
//! A capture inside a string literal of the code is escaped for that literal by default, so
//! that the literal holds the captured source text and nothing of it can end the literal
//! ([`StringCapture`]: `capture-in-string` chooses between escaping and refusing).
//!
//! Rendering is bounded: [`Template::rendered_len`] adds up the length first (with checked
//! arithmetic), and [`Template::render`] refuses text over [`MAX_RENDERED_BYTES`] before it
//! allocates any, so a large variable used many times is an error, never an exhausted memory.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::ops::Range;

pub use crate::pattern::{Capture, Captures};

use serde::Deserialize;

use crate::parse::parse_snippet;
use crate::syntax::Node;

pub(crate) mod lexical;

use lexical::{region_at, regions, Literal, Region};

pub(crate) use crate::limits::MAX_RENDERED_BYTES;

pub(crate) use crate::limits::TooLong;

/// A template with `{name}` placeholders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    text: String,
}

/// What becomes of a capture (`{$NAME}`) that lands inside a string literal of the hook's code
/// (`capture-in-string` in a `[[hook]]` table, `HookBuilder::capture_in_string` in code). The
/// capture is source text: as written, a quote, a backslash or a line break in it would end or
/// change the literal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum StringCapture {
    /// Escaped for the literal it lands in (the default), which then holds the captured text as
    /// it is: backslashes, the literal's quote, line breaks and control characters escaped,
    /// braces doubled in an f-string, a non-ASCII character as its UTF-8 bytes in a bytes
    /// literal. A raw literal escapes nothing: where it cannot hold the text as written (a
    /// backslash, its quote, a line break, a brace of an f-string), the hook is refused there.
    #[default]
    Escape,
    /// Refused wherever the captured text is not what the literal holds as written (it would
    /// need escaping): a required hook fails there, an optional one is skipped.
    Refuse,
}

/// Built-in values available while rendering a template at one place in a file.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bindings<'a> {
    /// `{value}`: the source text of a returned expression (wrap-returns).
    pub value: Option<&'a str>,
    /// `{param.N}`, `{param.args}`, `{param.kwargs}`: the target function's parameters.
    pub params: &'a Parameters,
    /// `{$NAME}`: what the hook's pattern captured where the code goes.
    pub captures: &'a Captures,
    /// What a capture inside a string literal of the code becomes.
    pub in_strings: StringCapture,
}

/// The parameters of a hook's target function, as `{param.N}` counts them: `param.0` is the
/// parameter the call binds (`self` of a method, `cls` of a `@classmethod`; none for a
/// `@staticmethod` or a function), `param.1` onwards the named parameters after it in order
/// (positional-only, regular, keyword-only), so `{param.1}` is always the first argument a
/// caller passes. `*args` and `**kwargs` are never counted: they are `{param.args}` and
/// `{param.kwargs}`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Parameters {
    /// `{param.0}`: the bound parameter, if the target has one.
    pub bound: Option<String>,
    /// `{param.1}`, `{param.2}`, ...: the named parameters after the bound one.
    pub named: Vec<String>,
    /// `{param.args}`: the name of the `*args` parameter.
    pub args: Option<String>,
    /// `{param.kwargs}`: the name of the `**kwargs` parameter.
    pub kwargs: Option<String>,
}

impl Parameters {
    /// The name `{param.KEY}` stands for (`KEY`: digits, `args` or `kwargs`), if the target has it.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&str> {
        match key {
            "args" => self.args.as_deref(),
            "kwargs" => self.kwargs.as_deref(),
            "0" => self.bound.as_deref(),
            digits => {
                let n: usize = digits.parse().ok()?;
                self.named.get(n.checked_sub(1)?).map(String::as_str)
            }
        }
    }
}

impl Template {
    /// A template of `text`.
    #[must_use]
    pub fn new(text: impl Into<String>) -> Template {
        Template { text: text.into() }
    }

    /// The template as written.
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the template mentions `{name}`.
    #[must_use]
    pub fn mentions(&self, name: &str) -> bool {
        self.text.contains(&format!("{{{name}}}"))
    }

    /// Every `{name}` placeholder with its byte offset in the template text, in order. Escaped
    /// braces (`{{`, `}}`) and other `{...}` are not placeholders.
    #[must_use]
    pub fn placeholders(&self) -> Vec<(usize, &str)> {
        let text = &self.text;
        let mut out = Vec::new();
        let mut i = 0;
        while i < text.len() {
            let rest = &text[i..];
            if rest.starts_with("{{") || rest.starts_with("}}") {
                i += 2;
                continue;
            }
            if rest.starts_with('{') {
                if let Some(end) = rest.find('}').filter(|&end| is_placeholder_name(&rest[1..end])) {
                    out.push((i, &rest[1..end]));
                    i += end + 1;
                    continue;
                }
            }
            i += rest.chars().next().map_or(1, char::len_utf8);
        }
        out
    }

    /// The keys of the `{param.KEY}` placeholders the template uses (`1`, `args`...), in order.
    #[must_use]
    pub fn param_keys(&self) -> Vec<&str> {
        self.placeholders()
            .into_iter()
            .filter_map(|(_, name)| name.strip_prefix("param."))
            .collect()
    }

    /// The capture names of the `{$NAME}` and `{$NAME!r}` placeholders (`NAME`), in order.
    #[must_use]
    pub fn capture_names(&self) -> Vec<&str> {
        self.placeholders()
            .into_iter()
            .filter_map(|(_, name)| name.strip_prefix('$'))
            .map(|name| name.strip_suffix("!r").unwrap_or(name))
            .collect()
    }

    /// How long the rendered text would be with every capture as written, without rendering it;
    /// `None` when the length overflows `usize`. [`Template::render`] adds two bytes for each
    /// capture it parenthesizes.
    #[must_use]
    pub(crate) fn rendered_len(&self, vars: &BTreeMap<String, String>, bindings: &Bindings<'_>) -> Option<usize> {
        let mut len = 0usize;
        let mut overflow = false;
        // A string literal's length is counted once per capture, however often it is used.
        let mut literal_lens: Vec<(*const u8, usize)> = Vec::new();
        self.pieces(vars, bindings, &mut |piece| {
            let n = match piece {
                Piece::Text(text) => text.len(),
                Piece::Capture(_, capture) => capture.text.len(),
                Piece::Literal(text) => {
                    let key = text.as_ptr();
                    match literal_lens.iter().find(|(k, _)| *k == key) {
                        Some(&(_, n)) => n,
                        None => {
                            let n = literal_len(text);
                            literal_lens.push((key, n));
                            n
                        }
                    }
                }
            };
            match len.checked_add(n) {
                Some(total) => len = total,
                None => overflow = true,
            }
        });
        (!overflow).then_some(len)
    }

    /// Renders the template. Unknown names stay as written (`{x}` in Python code is a set). A
    /// capture of an expression is parenthesized where the code around it would otherwise bind
    /// into it (see [`crate::template`]); when the code does not parse, every capture stays as
    /// written.
    ///
    /// # Errors
    /// [`TooLong`] when the text would be longer than [`MAX_RENDERED_BYTES`] (measured before
    /// anything is allocated).
    pub(crate) fn render(&self, vars: &BTreeMap<String, String>, bindings: &Bindings<'_>) -> Result<String, TooLong> {
        self.render_within(vars, bindings, MAX_RENDERED_BYTES)
    }

    /// [`Template::render`] with another limit than [`MAX_RENDERED_BYTES`].
    ///
    /// # Errors
    /// [`TooLong`] when the text would be longer than `limit` bytes.
    pub(crate) fn render_within(
        &self,
        vars: &BTreeMap<String, String>,
        bindings: &Bindings<'_>,
        limit: usize,
    ) -> Result<String, TooLong> {
        let bytes = self.rendered_len(vars, bindings);
        let len = bytes.filter(|&n| n <= limit).ok_or(TooLong { bytes, limit })?;
        let escaped = match bindings.in_strings {
            StringCapture::Escape => self.escaped(vars, bindings),
            StringCapture::Refuse => Vec::new(),
        };
        // Each escaped capture in place of its text as written (at most four times as long).
        let len = escaped.iter().flatten().fold(len, |n, (text, written)| {
            n.saturating_add(text.len()).saturating_sub(*written)
        });
        let wrap = self.parenthesized(vars, bindings, len);
        let len = len.saturating_add(2 * wrap.iter().filter(|&&w| w).count());
        if len > limit {
            return Err(TooLong {
                bytes: Some(len),
                limit,
            });
        }
        let insert = Insert::Final {
            wrap: &wrap,
            escaped: &escaped,
        };
        Ok(self.write(vars, bindings, len, &insert).0)
    }

    /// For each capture, in order of its placeholder: where it lands inside a string literal
    /// and its text is not what that literal holds as written, the text escaped for it and the
    /// length of the text as written; `None` elsewhere, and where the literal cannot escape it
    /// (a raw string: see [`Template::refused_in_string`]).
    fn escaped(&self, vars: &BTreeMap<String, String>, bindings: &Bindings<'_>) -> Vec<Option<(String, usize)>> {
        let mut texts: Vec<&str> = Vec::new();
        self.pieces(vars, bindings, &mut |piece| {
            if let Piece::Capture(_, capture) = piece {
                texts.push(&capture.text);
            }
        });
        let literals = self.string_literals(vars, bindings, texts.len());
        texts
            .iter()
            .zip(literals)
            .map(|(text, literal)| {
                let escaped = escape_in(text, literal?)?;
                (escaped != *text).then_some((escaped, text.len()))
            })
            .collect()
    }

    /// For each of the `count` captures, in order of its placeholder, the string literal of the
    /// code it lands in, if any: found with each capture written as a name, which changes no
    /// literal around it.
    fn string_literals(
        &self,
        vars: &BTreeMap<String, String>,
        bindings: &Bindings<'_>,
        count: usize,
    ) -> Vec<Option<Literal>> {
        if count == 0 {
            return Vec::new();
        }
        let (named, spans) = self.write(vars, bindings, 0, &Insert::Named);
        let found = regions(&named);
        spans
            .iter()
            .map(|span| match region_at(&found, span.start) {
                Some(Region::String(literal)) => Some(literal),
                _ => None,
            })
            .collect()
    }

    /// The name of the first capture that lands inside a string literal of the code where the
    /// hook cannot place it: with [`StringCapture::Refuse`], one whose text the literal would
    /// not hold as written; with [`StringCapture::Escape`], one in a raw literal that cannot
    /// hold it as written (raw strings escape nothing).
    #[must_use]
    pub(crate) fn refused_in_string(&self, vars: &BTreeMap<String, String>, bindings: &Bindings<'_>) -> Option<String> {
        let mut captures: Vec<(&str, &str)> = Vec::new();
        self.pieces(vars, bindings, &mut |piece| {
            if let Piece::Capture(name, capture) = piece {
                captures.push((name, &capture.text));
            }
        });
        let literals = self.string_literals(vars, bindings, captures.len());
        captures.iter().zip(literals).find_map(|((name, text), literal)| {
            let literal = literal?;
            let refused = match (bindings.in_strings, escape_in(text, literal)) {
                (_, None) => true,
                (StringCapture::Refuse, Some(escaped)) => escaped != *text,
                (StringCapture::Escape, Some(_)) => false,
            };
            refused.then(|| (*name).to_string())
        })
    }

    /// Which expression captures, in order of their placeholders, go in parentheses: those at
    /// a place of an expression in the code (a name there when each is replaced by one) where the
    /// code with the capture as written has no node of the capture's kind spanning it exactly.
    /// All of them at such places when the code only parses with them in parentheses; none when
    /// it does not parse at all. `len` is the length of the code as written.
    fn parenthesized(&self, vars: &BTreeMap<String, String>, bindings: &Bindings<'_>, len: usize) -> Vec<bool> {
        let mut kinds = Vec::new();
        self.pieces(vars, bindings, &mut |piece| {
            if let Piece::Capture(_, capture) = piece {
                kinds.push(capture.expression);
            }
        });
        let mut wrap = vec![false; kinds.len()];
        if kinds.iter().all(Option::is_none) {
            return wrap;
        }
        let (probed, _) = self.write(vars, bindings, len, &Insert::Probe);
        let Ok(probed) = parse_snippet("<code>", &probed) else {
            return wrap;
        };
        for stmt in &probed {
            stmt.walk(&mut |node| {
                if let Some(i) = node.as_name().and_then(probe_index) {
                    if let Some(slot) = wrap.get_mut(i) {
                        *slot = true;
                    }
                }
                true
            });
        }
        if !wrap.contains(&true) {
            return wrap;
        }
        let (text, spans) = self.write(vars, bindings, len, &Insert::AsWritten);
        if let Ok(parsed) = parse_snippet("<code>", &text) {
            for ((slot, span), kind) in wrap.iter_mut().zip(&spans).zip(&kinds) {
                *slot &= !parsed.iter().any(|stmt| spans_exactly(stmt, span, *kind));
            }
        }
        wrap
    }

    /// The rendered text, `capacity` bytes reserved, each capture of an expression written as
    /// `insert` says; with where each `{$NAME}`'s own text lies in it, in order.
    fn write(
        &self,
        vars: &BTreeMap<String, String>,
        bindings: &Bindings<'_>,
        capacity: usize,
        insert: &Insert<'_>,
    ) -> (String, Vec<Range<usize>>) {
        let mut out = String::with_capacity(capacity);
        let mut spans = Vec::new();
        self.pieces(vars, bindings, &mut |piece| match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Literal(text) => push_literal(&mut out, text),
            Piece::Capture(_, capture) => {
                let i = spans.len();
                let wrapped = matches!(insert, Insert::Final { wrap, .. } if wrap.get(i) == Some(&true));
                if wrapped {
                    out.push('(');
                }
                let start = out.len();
                match insert {
                    Insert::Probe if capture.expression.is_some() => {
                        let _ = write!(out, "{PROBE_PREFIX}{i}__");
                    }
                    Insert::Named => {
                        let _ = write!(out, "{PROBE_PREFIX}{i}__");
                    }
                    Insert::Final { escaped, .. } => match escaped.get(i) {
                        Some(Some((text, _))) => out.push_str(text),
                        _ => out.push_str(&capture.text),
                    },
                    _ => out.push_str(&capture.text),
                }
                spans.push(start..out.len());
                if wrapped {
                    out.push(')');
                }
            }
        });
        (out, spans)
    }

    /// The text rendered with every capture as written, and where each `{$NAME}` (not
    /// `{$NAME!r}`) went in it, with its name: to tell where in the code a capture lands.
    pub(crate) fn capture_spans<'s>(
        &'s self,
        vars: &BTreeMap<String, String>,
        bindings: &Bindings<'_>,
    ) -> (String, Vec<(Range<usize>, &'s str)>) {
        let mut names = Vec::new();
        self.pieces(vars, bindings, &mut |piece| {
            if let Piece::Capture(name, _) = piece {
                names.push(name);
            }
        });
        let len = self.rendered_len(vars, bindings).unwrap_or(0);
        let (text, spans) = self.write(vars, bindings, len.min(MAX_RENDERED_BYTES), &Insert::AsWritten);
        (text, spans.into_iter().zip(names).collect())
    }

    /// Calls `emit` with the rendered text piece by piece: literal runs, unescaped braces and
    /// the values of placeholders (never rendered again: a variable's value is taken as written).
    fn pieces<'t: 's, 's>(
        &'t self,
        vars: &'s BTreeMap<String, String>,
        bindings: &Bindings<'s>,
        emit: &mut dyn FnMut(Piece<'t, 's>),
    ) {
        let text_of = |text| Piece::Text(text);
        let text = &self.text;
        let mut i = 0;
        while i < text.len() {
            let rest = &text[i..];
            if rest.starts_with("{{") {
                emit(text_of("{"));
                i += 2;
            } else if rest.starts_with("}}") {
                emit(text_of("}"));
                i += 2;
            } else if rest.starts_with('{') {
                let end = rest.find('}').filter(|&end| is_placeholder_name(&rest[1..end]));
                match end.and_then(|end| lookup(&rest[1..end], vars, bindings).map(|v| (end, v))) {
                    Some((end, Value::Text(value))) => {
                        emit(text_of(value));
                        i += end + 1;
                    }
                    Some((end, Value::Literal(value))) => {
                        emit(Piece::Literal(value));
                        i += end + 1;
                    }
                    Some((end, Value::Capture(capture))) => {
                        emit(Piece::Capture(&text[i + 2..i + end], capture));
                        i += end + 1;
                    }
                    None => {
                        emit(text_of("{"));
                        i += 1;
                    }
                }
            } else {
                let next = rest.find(['{', '}']).map_or(rest.len(), |n| n.max(1));
                let next = if rest.starts_with('}') { 1 } else { next };
                emit(text_of(&rest[..next]));
                i += next;
            }
        }
    }

    /// Whether `text` is this template rendered with some `{value}` (and these vars and
    /// parameters): that value, if so. Recognises a change made earlier whose marker is gone.
    /// `None` for a template that adds nothing around `{value}`, which any text would fit.
    #[must_use]
    pub(crate) fn unrender(
        &self,
        vars: &BTreeMap<String, String>,
        bindings: &Bindings<'_>,
        text: &str,
    ) -> Option<String> {
        const PROBE: &str = "\u{0}";
        let render = |value: &str| {
            self.render(
                vars,
                &Bindings {
                    value: Some(value),
                    ..*bindings
                },
            )
            .ok()
        };
        let probed = render(PROBE)?;
        let parts: Vec<&str> = probed.split(PROBE).collect();
        let slots = parts.len() - 1;
        let fixed: usize = parts.iter().map(|p| p.len()).sum();
        if slots == 0 || fixed == 0 || text.len() < fixed || (text.len() - fixed) % slots != 0 {
            return None;
        }
        let start = parts[0].len();
        let value = text.get(start..start + (text.len() - fixed) / slots)?;
        (render(value)? == text).then(|| value.to_string())
    }
}

/// A Python name; `param.` and digits, `args` or `kwargs`; `$` and a metavariable name
/// (letters, digits, `_`; not `_` alone), optionally followed by `!r`.
fn is_placeholder_name(name: &str) -> bool {
    let is_name = |n: &str| {
        n.chars().next().is_some_and(|c| c == '_' || c.is_alphabetic())
            && n.chars().all(|c| c == '_' || c.is_alphanumeric())
    };
    if let Some(capture) = name.strip_prefix('$') {
        let capture = capture.strip_suffix("!r").unwrap_or(capture);
        return is_capture_name(capture);
    }
    match name.strip_prefix("param.") {
        Some("args" | "kwargs") => true,
        Some(digits) => !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()),
        None => is_name(name),
    }
}

/// Whether `name` can follow `$` as a named metavariable of a pattern.
fn is_capture_name(name: &str) -> bool {
    !name.is_empty() && name != "_" && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// A piece of rendered text: as it is, to be written as a Python string literal, or what
/// `{$NAME}` stands for (with the name; an expression as written or in parentheses).
#[derive(Clone, Copy)]
enum Piece<'t, 's> {
    Text(&'s str),
    Literal(&'s str),
    Capture(&'t str, &'s Capture),
}

/// What a placeholder is replaced by: text as it is, as a Python string literal, or a capture.
enum Value<'s> {
    Text(&'s str),
    Literal(&'s str),
    Capture(&'s Capture),
}

/// How [`Template::write`] writes the captures.
enum Insert<'a> {
    /// Each capture of an expression as a name of its own, [`PROBE_PREFIX`] and its index, to
    /// find where each goes.
    Probe,
    /// Every capture as such a name, to find the string literals they land in.
    Named,
    /// Each as written.
    AsWritten,
    /// Those marked `true` in `wrap` in parentheses, those with an escaped text as that text,
    /// in order.
    Final {
        wrap: &'a [bool],
        escaped: &'a [Option<(String, usize)>],
    },
}

/// The names that stand for captures of expressions while finding their places.
const PROBE_PREFIX: &str = "__pysplice_capture_";

/// The index of a probe name written for [`Insert::Probe`].
fn probe_index(name: &str) -> Option<usize> {
    let digits = name.strip_prefix(PROBE_PREFIX)?.strip_suffix("__")?;
    digits
        .bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| digits.parse().ok())?
}

/// Whether a node of `kind` under `root` spans exactly `span` (list nodes are no expressions).
fn spans_exactly(root: &Node, span: &Range<usize>, kind: Option<&str>) -> bool {
    let mut found = false;
    root.walk(&mut |node| {
        found |= node.range() == *span && Some(node.kind()) == kind;
        !found
    });
    found
}

fn lookup<'s>(name: &str, vars: &'s BTreeMap<String, String>, bindings: &Bindings<'s>) -> Option<Value<'s>> {
    if name == "value" {
        return Some(Value::Text(bindings.value.unwrap_or("None")));
    }
    if let Some(capture) = name.strip_prefix('$') {
        return match capture.strip_suffix("!r") {
            Some(capture) => bindings.captures.get(capture).map(|c| Value::Literal(&c.text)),
            None => bindings.captures.get(capture).map(Value::Capture),
        };
    }
    if let Some(key) = name.strip_prefix("param.") {
        return bindings.params.get(key).map(Value::Text);
    }
    vars.get(name).map(|v| Value::Text(v))
}

/// `text` as a Python string literal, appended to `out`: in single quotes, with backslashes,
/// quotes, line breaks and other control characters escaped, so it is one line that evaluates to
/// `text`.
fn push_literal(out: &mut String, text: &str) {
    out.push('\'');
    for c in text.chars() {
        match escape(c) {
            Escape::Short(short) => out.push_str(short),
            Escape::Unicode => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            Escape::None => out.push(c),
        }
    }
    out.push('\'');
}

/// The length of `text` as [`push_literal`] writes it, without writing it.
fn literal_len(text: &str) -> usize {
    text.chars().fold(2usize, |n, c| {
        n.saturating_add(match escape(c) {
            Escape::Short(short) => short.len(),
            // `\uXXXX`: control characters are all below U+10000.
            Escape::Unicode => 6,
            Escape::None => c.len_utf8(),
        })
    })
}

/// `text` as `literal` holds it: inside it, the literal's value has `text` where it stands
/// (for a bytes literal, its UTF-8 bytes), and nothing of it ends the literal or opens a field;
/// `None` for a raw literal that cannot hold it as written.
fn escape_in(text: &str, literal: Literal) -> Option<String> {
    let quote = char::from(literal.quote);
    if literal.raw {
        let holds = !text.chars().any(|c| {
            c == '\\'
                || c == quote
                || (!literal.triple && matches!(c, '\n' | '\r'))
                || (literal.f && matches!(c, '{' | '}'))
        });
        return holds.then(|| text.to_string());
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            '{' | '}' if literal.f => {
                out.push(c);
                out.push(c);
            }
            // Control characters are all below U+0100: `\xNN` in a str and in bytes alike.
            c if c.is_control() => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c if literal.bytes && !c.is_ascii() => {
                let mut utf8 = [0; 4];
                for byte in c.encode_utf8(&mut utf8).bytes() {
                    let _ = write!(out, "\\x{byte:02x}");
                }
            }
            c => out.push(c),
        }
    }
    Some(out)
}

/// How one character is written inside a single-quoted Python string literal.
enum Escape {
    Short(&'static str),
    Unicode,
    None,
}

fn escape(c: char) -> Escape {
    match c {
        '\\' => Escape::Short("\\\\"),
        '\'' => Escape::Short("\\'"),
        '\n' => Escape::Short("\\n"),
        '\r' => Escape::Short("\\r"),
        '\t' => Escape::Short("\\t"),
        c if c.is_control() => Escape::Unicode,
        _ => Escape::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn method(named: &[&str]) -> Parameters {
        Parameters {
            bound: Some("self".into()),
            named: named.iter().map(|n| (*n).to_string()).collect(),
            args: None,
            kwargs: None,
        }
    }

    #[test]
    fn renders_vars_builtins_and_escapes() {
        let vars = BTreeMap::from([("env".to_string(), "DUMP".to_string())]);
        let params = method(&["input_ids"]);
        let t = Template::new("f({value}, {param.1}, {param.0}, os.environ['{env}'], {{1}}, {x: 1}, f'{y}')");
        let b = Bindings {
            value: Some("(a, b)"),
            params: &params,
            captures: &Captures::new(),
            in_strings: StringCapture::Escape,
        };
        assert_eq!(
            t.render(&vars, &b).unwrap(),
            "f((a, b), input_ids, self, os.environ['DUMP'], {1}, {x: 1}, f'{y}')"
        );
        assert_eq!(t.param_keys(), ["1", "0"]);
        assert!(t.mentions("value"));
        assert_eq!(Template::new("{param.9}").render(&vars, &b).unwrap(), "{param.9}");
    }

    #[test]
    fn captures_render_as_text_or_as_a_string_literal() {
        let captures = Captures::from([
            ("ATTR".to_string(), Capture::text("norm")),
            ("ARGS".to_string(), Capture::text("dim, eps=1e-6")),
            ("S".to_string(), Capture::text("'it''s'\n\\\u{0}")),
        ]);
        let params = Parameters::default();
        let b = Bindings {
            value: None,
            params: &params,
            captures: &captures,
            in_strings: StringCapture::Escape,
        };
        let t = Template::new("print('set', {$ATTR!r}, self.{$ATTR}, ({$ARGS}), {$S!r}, {$GONE}, {$})");
        assert_eq!(
            t.render(&BTreeMap::new(), &b).unwrap(),
            "print('set', 'norm', self.norm, (dim, eps=1e-6), '\\'it\\'\\'s\\'\\n\\\\\\u0000', {$GONE}, {$})"
        );
        assert_eq!(t.capture_names(), ["ATTR", "ATTR", "ARGS", "S", "GONE"]);
        assert_eq!(
            t.rendered_len(&BTreeMap::new(), &b),
            Some(t.render(&BTreeMap::new(), &b).unwrap().len())
        );
        // A large capture as a literal many times: its length counted once, refused unbuilt.
        let big = Captures::from([("B".to_string(), Capture::text("\n".repeat(1 << 20)))]);
        let b = Bindings { captures: &big, ..b };
        let t = Template::new("{$B!r}".repeat(10));
        assert_eq!(
            t.render(&BTreeMap::new(), &b).unwrap_err().bytes,
            Some(10 * ((2 << 20) + 2))
        );
    }

    /// `template` rendered with `$T` captured as `text`, captures in strings as `choice` says:
    /// the code, or the capture refused.
    fn in_string(template: &str, text: &str, choice: StringCapture) -> Result<String, String> {
        let captures = Captures::from([("T".to_string(), Capture::text(text))]);
        let params = Parameters::default();
        let b = Bindings {
            value: None,
            params: &params,
            captures: &captures,
            in_strings: choice,
        };
        let t = Template::new(template);
        match t.refused_in_string(&BTreeMap::new(), &b) {
            Some(name) => Err(name),
            None => Ok(t.render(&BTreeMap::new(), &b).unwrap()),
        }
    }

    #[test]
    fn a_capture_in_a_string_literal_is_escaped_for_that_literal() {
        let escape = |template, text| in_string(template, text, StringCapture::Escape).unwrap();
        let cases = [
            // (template, captured text, rendered)
            (r"print('got {$T}')", r"f('a')", r"print('got f(\'a\')')"),
            (
                r#"print("got {$T}")"#,
                r#"f('a', "b")"#,
                r#"print("got f('a', \"b\")")"#,
            ),
            ("print('{$T}')", "a\\n\nb\t\u{1}", r"print('a\\n\nb\t\x01')"),
            (r"print('''{$T}''')", r"x = '''y'''", r"print('''x = \'\'\'y\'\'\'''')"),
            (
                r"print(f'{$T} is {{v}}')",
                r"{k: 1}['k']",
                r"print(f'{{k: 1}}[\'k\'] is {v}')",
            ),
            (r"print(b'{$T}')", "'\u{e9}'", r"print(b'\'\xc3\xa9\'')"),
            // Outside a literal, in an f-string's field, in a raw literal that holds it: as written.
            (r"print({$T}, '{$T}')", "a + b", r"print(a + b, 'a + b')"),
            (r"print(f'{ {$T} }')", r#"d["k"]"#, r#"print(f'{ d["k"] }')"#),
            (r"print(r'{$T}')", "a.b", r"print(r'a.b')"),
        ];
        for (template, text, rendered) in cases {
            assert_eq!(escape(template, text), rendered, "{template} with {text}");
        }
        // The length is known before rendering, escapes included.
        let captures = Captures::from([("T".to_string(), Capture::text("'".repeat(40)))]);
        let params = Parameters::default();
        let b = Bindings {
            value: None,
            params: &params,
            captures: &captures,
            in_strings: StringCapture::Escape,
        };
        let t = Template::new("s = '{$T}'");
        assert_eq!(t.render_within(&BTreeMap::new(), &b, 86).unwrap().len(), 86);
        assert_eq!(t.render_within(&BTreeMap::new(), &b, 85).unwrap_err().bytes, Some(86));
    }

    #[test]
    fn a_capture_a_literal_cannot_hold_as_written_is_refused_as_the_hook_says() {
        let refuse = |template, text| in_string(template, text, StringCapture::Refuse);
        assert_eq!(refuse(r"print('got {$T}')", r"f('a')"), Err("T".to_string()));
        assert_eq!(
            refuse(r#"print("got {$T}")"#, r"f('a')"),
            Ok(r#"print("got f('a')")"#.to_string())
        );
        assert_eq!(refuse(r"print({$T})", r"f('a')"), Ok(r"print(f('a'))".to_string()));
        assert_eq!(refuse(r"print(f'<{$T}>')", "d"), Ok(r"print(f'<d>')".to_string()));
        assert_eq!(refuse(r"print(f'<{$T}>')", "{}"), Err("T".to_string()));
        // A raw literal escapes nothing: refused whatever the choice, where it cannot hold the text.
        for choice in [StringCapture::Escape, StringCapture::Refuse] {
            assert_eq!(in_string(r"print(r'{$T}')", r"f('a')", choice), Err("T".to_string()));
            assert_eq!(in_string(r"print(r'{$T}')", r"a\b", choice), Err("T".to_string()));
            assert_eq!(
                in_string(r"print(r'''{$T}''')", "a\nb", choice),
                Ok("print(r'''a\nb''')".to_string())
            );
        }
    }

    /// `template` rendered with `$X` an expression of `kind` written `text`, and `$S` a sequence.
    fn with_capture(template: &str, text: &str, kind: &'static str) -> String {
        let captures = Captures::from([
            ("X".to_string(), Capture::expression(text, kind)),
            ("S".to_string(), Capture::text("a, b")),
        ]);
        let params = Parameters::default();
        let b = Bindings {
            value: None,
            params: &params,
            captures: &captures,
            in_strings: StringCapture::Escape,
        };
        Template::new(template).render(&BTreeMap::new(), &b).unwrap()
    }

    #[test]
    fn an_expression_capture_is_parenthesized_where_the_code_would_bind_into_it() {
        let cases = [
            // (template, capture, kind, rendered)
            ("y = {$X} * 2", "1 + 2", "BinOp", "y = (1 + 2) * 2"),
            ("y = 2 * {$X}", "1 + 2", "BinOp", "y = 2 * (1 + 2)"),
            ("y = 2 + {$X}", "1 * 2", "BinOp", "y = 2 + 1 * 2"),
            ("y = {$X} * 2", "a.b(c)", "Call", "y = a.b(c) * 2"),
            // Left-associative: the right operand of one precedence needs them, the left not.
            ("y = a - {$X}", "b - c", "BinOp", "y = a - (b - c)"),
            ("y = {$X} - a", "b - c", "BinOp", "y = b - c - a"),
            ("y = {$X} ** 2", "-a", "UnaryOp", "y = (-a) ** 2"),
            ("y = 2 ** {$X}", "-a", "UnaryOp", "y = 2 ** -a"),
            ("y = {$X}.real", "1", "Constant", "y = (1).real"),
            ("y = {$X} < c", "a < b", "Compare", "y = (a < b) < c"),
            ("y = not {$X}", "a == b", "Compare", "y = not a == b"),
            (
                "y = {$X} if c else d",
                "a if b else e",
                "IfExp",
                "y = (a if b else e) if c else d",
            ),
            ("y = {$X}()", "lambda: 1", "Lambda", "y = (lambda: 1)()"),
            ("f({$X})", "a, b", "Tuple", "f((a, b))"),
            ("f({$X}, 1)", "a + b", "BinOp", "f(a + b, 1)"),
            ("y = [{$X}]", "a + b", "BinOp", "y = [a + b]"),
            ("y = {$X}", "a, b", "Tuple", "y = a, b"),
            // Each occurrence on its own.
            (
                "y = {$X} * {$X} + {$X}",
                "a or b",
                "BoolOp",
                "y = (a or b) * (a or b) + (a or b)",
            ),
            // In a string or a comment, the text as written.
            (
                "y = '{$X} * 2'  # {$X} * 2",
                "1 + 2",
                "BinOp",
                "y = '1 + 2 * 2'  # 1 + 2 * 2",
            ),
            // Code that does not parse either way is left as written.
            ("y = {$X} * (", "1 + 2", "BinOp", "y = 1 + 2 * ("),
            // A sequence is never parenthesized.
            ("f({$S})", "x", "Name", "f(a, b)"),
        ];
        for (template, text, kind, rendered) in cases {
            assert_eq!(with_capture(template, text, kind), rendered, "{template} with {text}");
        }
    }

    #[test]
    fn parentheses_count_against_the_limit() {
        let captures = Captures::from([("X".to_string(), Capture::expression("a + b", "BinOp"))]);
        let params = Parameters::default();
        let b = Bindings {
            value: None,
            params: &params,
            captures: &captures,
            in_strings: StringCapture::Escape,
        };
        let t = Template::new("{$X} * 2");
        assert_eq!(t.rendered_len(&BTreeMap::new(), &b), Some(9));
        assert_eq!(t.render_within(&BTreeMap::new(), &b, 11).unwrap(), "(a + b) * 2");
        assert_eq!(
            t.render_within(&BTreeMap::new(), &b, 10),
            Err(TooLong {
                bytes: Some(11),
                limit: 10
            })
        );
    }

    #[test]
    fn parameters_count_from_the_bound_one() {
        let params = Parameters {
            bound: None,
            named: vec!["a".into(), "b".into()],
            args: Some("rest".into()),
            kwargs: Some("kw".into()),
        };
        assert_eq!(params.get("0"), None);
        assert_eq!(params.get("1"), Some("a"));
        assert_eq!(params.get("2"), Some("b"));
        assert_eq!(params.get("3"), None);
        assert_eq!((params.get("args"), params.get("kwargs")), (Some("rest"), Some("kw")));
        assert_eq!(params.get("99999999999999999999999"), None);
    }

    #[test]
    fn placeholders_are_names_params_and_captures_only() {
        let t = Template::new(
            "{a} {{b}} {c.d} {0} {x: 1} {param.2} {param.x} {param.args} {_e1} {} {$A} {$A!r} {$_} {$} {$a-b} {$B!s}",
        );
        let names: Vec<&str> = t.placeholders().into_iter().map(|(_, n)| n).collect();
        assert_eq!(names, ["a", "param.2", "param.args", "_e1", "$A", "$A!r"]);
        assert_eq!(t.placeholders()[0].0, 0);
    }

    #[test]
    fn unrender_finds_the_value_of_a_rendered_template() {
        let vars = BTreeMap::from([("env".to_string(), "E".to_string())]);
        let params = method(&["ids"]);
        let captures = Captures::from([("X".to_string(), Capture::expression("h", "Name"))]);
        let t = Template::new("{value} if not os.environ.get('{env}') else dump(self, {param.1}, {$X}, {value})");
        let b = Bindings {
            value: Some("(a + b)"),
            params: &params,
            captures: &captures,
            in_strings: StringCapture::Escape,
        };
        let rendered = t.render(&vars, &b).unwrap();
        assert_eq!(t.unrender(&vars, &b, &rendered).as_deref(), Some("(a + b)"));
        assert_eq!(t.unrender(&vars, &b, "(a + b)"), None);
        assert_eq!(t.unrender(&vars, &b, &rendered.replace("ids", "idz")), None);
    }

    #[test]
    fn the_length_is_known_before_rendering_and_bounded() {
        let big = "x".repeat(1000);
        let vars = BTreeMap::from([("big".to_string(), big)]);
        let t = Template::new("{big}{big} {{}}{value}");
        let params = Parameters::default();
        let b = Bindings {
            value: Some("v"),
            params: &params,
            captures: &Captures::new(),
            in_strings: StringCapture::Escape,
        };
        let len = t.rendered_len(&vars, &b).unwrap();
        assert_eq!(len, 2004);
        assert_eq!(t.render(&vars, &b).unwrap().len(), len);
        assert_eq!(
            t.render_within(&vars, &b, 2003),
            Err(TooLong {
                bytes: Some(2004),
                limit: 2003
            })
        );
        // A megabyte used a thousand times: refused without a gigabyte ever being allocated.
        let vars = BTreeMap::from([("big".to_string(), "x".repeat(1 << 20))]);
        let t = Template::new("{big}".repeat(1000));
        let err = t.render(&vars, &b).unwrap_err();
        assert_eq!(err.bytes, Some(1000 << 20));
        assert_eq!(err.limit, MAX_RENDERED_BYTES);
    }
}
