//! Code templates: `{name}` is replaced by a recipe variable or a built-in (`{value}`,
//! `{param.N}`); `{{` and `}}` are literal braces. A placeholder is a Python name or `param.N`
//! in braces; any other `{...}` (`{}`, `{x: 1}`, `{a, b}`, `{0}`, `{x!r}`) is left as written.
//! A placeholder that names nothing is a spec error (see [`Template::placeholders`]): a set of
//! one name or an f-string field is written with doubled braces, `{{x}}`.
//!
//! Rendering is bounded: [`Template::rendered_len`] adds up the length first (with checked
//! arithmetic), and [`Template::render`] refuses text over [`MAX_RENDERED_BYTES`] before it
//! allocates any, so a large variable used many times is an error, never an exhausted memory.

use std::collections::BTreeMap;
use std::fmt;

/// The most bytes one template may render to: 16 MiB, the limit of a file pysplice reads and
/// writes ([`crate::files::MAX_FILE_BYTES`]); longer code could never be written into one.
pub const MAX_RENDERED_BYTES: usize = 16 * 1024 * 1024;

/// A rendering refused by [`Template::render`]: the text would be longer than the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooLong {
    /// The length the text would have; `None` when it does not even fit a `usize`.
    pub bytes: Option<usize>,
    /// The limit it is over.
    pub limit: usize,
}

impl fmt::Display for TooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.bytes {
            Some(bytes) => write!(f, "{bytes} bytes, more than the limit of {} bytes", self.limit),
            None => write!(
                f,
                "more bytes than a computer can count, over the limit of {} bytes",
                self.limit
            ),
        }
    }
}

/// A template with `{name}` placeholders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    text: String,
}

/// Built-in values available while rendering a template at one place in a file.
#[derive(Clone, Debug, Default)]
pub struct Bindings<'a> {
    /// `{value}`: the source text of a returned expression (wrap-returns).
    pub value: Option<&'a str>,
    /// `{param.N}`: parameter names of the target function, in order (`self` is `param.0`).
    pub params: &'a [String],
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

    /// The `{param.N}` indices the template uses.
    #[must_use]
    pub fn param_indices(&self) -> Vec<usize> {
        let mut out = Vec::new();
        let mut rest = self.text.as_str();
        while let Some(i) = rest.find("{param.") {
            rest = &rest[i + 7..];
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if rest[digits.len()..].starts_with('}') {
                if let Ok(n) = digits.parse() {
                    out.push(n);
                }
            }
        }
        out
    }

    /// How long the rendered text would be, without rendering it; `None` when the length
    /// overflows `usize`.
    #[must_use]
    pub fn rendered_len(&self, vars: &BTreeMap<String, String>, bindings: &Bindings<'_>) -> Option<usize> {
        let mut len = 0usize;
        let mut overflow = false;
        self.pieces(vars, bindings, &mut |piece| match len.checked_add(piece.len()) {
            Some(n) => len = n,
            None => overflow = true,
        });
        (!overflow).then_some(len)
    }

    /// Renders the template. Unknown names stay as written (`{x}` in Python code is a set).
    ///
    /// # Errors
    /// [`TooLong`] when the text would be longer than [`MAX_RENDERED_BYTES`] (measured before
    /// anything is allocated).
    pub fn render(&self, vars: &BTreeMap<String, String>, bindings: &Bindings<'_>) -> Result<String, TooLong> {
        self.render_within(vars, bindings, MAX_RENDERED_BYTES)
    }

    /// [`Template::render`] with another limit than [`MAX_RENDERED_BYTES`].
    ///
    /// # Errors
    /// [`TooLong`] when the text would be longer than `limit` bytes.
    pub fn render_within(
        &self,
        vars: &BTreeMap<String, String>,
        bindings: &Bindings<'_>,
        limit: usize,
    ) -> Result<String, TooLong> {
        let bytes = self.rendered_len(vars, bindings);
        let len = bytes.filter(|&n| n <= limit).ok_or(TooLong { bytes, limit })?;
        let mut out = String::with_capacity(len);
        self.pieces(vars, bindings, &mut |piece| out.push_str(piece));
        Ok(out)
    }

    /// Calls `emit` with the rendered text piece by piece: literal runs, unescaped braces and
    /// the values of placeholders (never rendered again: a variable's value is taken as written).
    fn pieces<'s>(
        &'s self,
        vars: &'s BTreeMap<String, String>,
        bindings: &Bindings<'s>,
        emit: &mut dyn FnMut(&'s str),
    ) {
        let text = &self.text;
        let mut i = 0;
        while i < text.len() {
            let rest = &text[i..];
            if rest.starts_with("{{") {
                emit("{");
                i += 2;
            } else if rest.starts_with("}}") {
                emit("}");
                i += 2;
            } else if rest.starts_with('{') {
                let end = rest.find('}').filter(|&end| is_placeholder_name(&rest[1..end]));
                match end.and_then(|end| lookup(&rest[1..end], vars, bindings).map(|v| (end, v))) {
                    Some((end, value)) => {
                        emit(value);
                        i += end + 1;
                    }
                    None => {
                        emit("{");
                        i += 1;
                    }
                }
            } else {
                let next = rest.find(['{', '}']).map_or(rest.len(), |n| n.max(1));
                let next = if rest.starts_with('}') { 1 } else { next };
                emit(&rest[..next]);
                i += next;
            }
        }
    }

    /// Whether `text` is this template rendered with some `{value}` (and these vars and
    /// parameters): that value, if so. Recognises a change made earlier whose marker is gone.
    /// `None` for a template that adds nothing around `{value}`, which any text would fit.
    #[must_use]
    pub fn unrender(&self, vars: &BTreeMap<String, String>, params: &[String], text: &str) -> Option<String> {
        const PROBE: &str = "\u{0}";
        let render = |value: &str| {
            self.render(
                vars,
                &Bindings {
                    value: Some(value),
                    params,
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

/// A Python name, or `param.` and digits.
fn is_placeholder_name(name: &str) -> bool {
    let is_name = |n: &str| {
        n.chars().next().is_some_and(|c| c == '_' || c.is_alphabetic())
            && n.chars().all(|c| c == '_' || c.is_alphanumeric())
    };
    match name.strip_prefix("param.") {
        Some(digits) => !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()),
        None => is_name(name),
    }
}

fn lookup<'s>(name: &str, vars: &'s BTreeMap<String, String>, bindings: &Bindings<'s>) -> Option<&'s str> {
    if name == "value" {
        return Some(bindings.value.unwrap_or("None"));
    }
    if let Some(n) = name.strip_prefix("param.") {
        let n: usize = n.parse().ok()?;
        return bindings.params.get(n).map(String::as_str);
    }
    vars.get(name).map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_vars_builtins_and_escapes() {
        let vars = BTreeMap::from([("env".to_string(), "DUMP".to_string())]);
        let params = ["self".to_string(), "input_ids".to_string()];
        let t = Template::new("f({value}, {param.1}, os.environ['{env}'], {{1}}, {x: 1}, f'{y}')");
        let b = Bindings {
            value: Some("(a, b)"),
            params: &params,
        };
        assert_eq!(
            t.render(&vars, &b).unwrap(),
            "f((a, b), input_ids, os.environ['DUMP'], {1}, {x: 1}, f'{y}')"
        );
        assert_eq!(t.param_indices(), [1]);
        assert!(t.mentions("value"));
        assert_eq!(Template::new("{param.9}").render(&vars, &b).unwrap(), "{param.9}");
    }

    #[test]
    fn placeholders_are_names_and_params_only() {
        let t = Template::new("{a} {{b}} {c.d} {0} {x: 1} {param.2} {param.x} {_e1} {}");
        let names: Vec<&str> = t.placeholders().into_iter().map(|(_, n)| n).collect();
        assert_eq!(names, ["a", "param.2", "_e1"]);
        assert_eq!(t.placeholders()[0].0, 0);
    }

    #[test]
    fn unrender_finds_the_value_of_a_rendered_template() {
        let vars = BTreeMap::from([("env".to_string(), "E".to_string())]);
        let params = ["self".to_string(), "ids".to_string()];
        let t = Template::new("{value} if not os.environ.get('{env}') else dump(self, {param.1}, {value})");
        let b = Bindings {
            value: Some("(a + b)"),
            params: &params,
        };
        let rendered = t.render(&vars, &b).unwrap();
        assert_eq!(t.unrender(&vars, &params, &rendered).as_deref(), Some("(a + b)"));
        assert_eq!(t.unrender(&vars, &params, "(a + b)"), None);
        assert_eq!(t.unrender(&vars, &params, &rendered.replace("ids", "idz")), None);
    }

    #[test]
    fn the_length_is_known_before_rendering_and_bounded() {
        let big = "x".repeat(1000);
        let vars = BTreeMap::from([("big".to_string(), big)]);
        let t = Template::new("{big}{big} {{}}{value}");
        let b = Bindings {
            value: Some("v"),
            params: &[],
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
