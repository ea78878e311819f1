//! Code templates: `{name}` is replaced by a recipe variable or a built-in (`{value}`,
//! `{param.N}`); `{{` and `}}` are literal braces. A placeholder is a Python name or `param.N`
//! in braces; any other `{...}` (`{}`, `{x: 1}`, `{a, b}`, `{0}`, `{x!r}`) is left as written.
//! A placeholder that names nothing is a spec error (see [`Template::placeholders`]): a set of
//! one name or an f-string field is written with doubled braces, `{{x}}`.

use std::collections::BTreeMap;

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

    /// Renders the template. Unknown names stay as written (`{x}` in Python code is a set).
    #[must_use]
    pub fn render(&self, vars: &BTreeMap<String, String>, bindings: &Bindings<'_>) -> String {
        let text = &self.text;
        let mut out = String::with_capacity(text.len());
        let mut i = 0;
        while i < text.len() {
            let rest = &text[i..];
            if rest.starts_with("{{") {
                out.push('{');
                i += 2;
            } else if rest.starts_with("}}") {
                out.push('}');
                i += 2;
            } else if rest.starts_with('{') {
                let end = rest.find('}').filter(|&end| is_placeholder_name(&rest[1..end]));
                match end.and_then(|end| lookup(&rest[1..end], vars, bindings).map(|v| (end, v))) {
                    Some((end, value)) => {
                        out.push_str(&value);
                        i += end + 1;
                    }
                    None => {
                        out.push('{');
                        i += 1;
                    }
                }
            } else {
                let next = rest.find(['{', '}']).map_or(rest.len(), |n| n.max(1));
                let next = if rest.starts_with('}') { 1 } else { next };
                out.push_str(&rest[..next]);
                i += next;
            }
        }
        out
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
        };
        let probed = render(PROBE);
        let parts: Vec<&str> = probed.split(PROBE).collect();
        let slots = parts.len() - 1;
        let fixed: usize = parts.iter().map(|p| p.len()).sum();
        if slots == 0 || fixed == 0 || text.len() < fixed || (text.len() - fixed) % slots != 0 {
            return None;
        }
        let start = parts[0].len();
        let value = text.get(start..start + (text.len() - fixed) / slots)?;
        (render(value) == text).then(|| value.to_string())
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

fn lookup(name: &str, vars: &BTreeMap<String, String>, bindings: &Bindings<'_>) -> Option<String> {
    if name == "value" {
        return Some(bindings.value.unwrap_or("None").to_string());
    }
    if let Some(n) = name.strip_prefix("param.") {
        let n: usize = n.parse().ok()?;
        return bindings.params.get(n).cloned();
    }
    vars.get(name).cloned()
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
            t.render(&vars, &b),
            "f((a, b), input_ids, os.environ['DUMP'], {1}, {x: 1}, f'{y}')"
        );
        assert_eq!(t.param_indices(), [1]);
        assert!(t.mentions("value"));
        assert_eq!(Template::new("{param.9}").render(&vars, &b), "{param.9}");
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
        let rendered = t.render(&vars, &b);
        assert_eq!(t.unrender(&vars, &params, &rendered).as_deref(), Some("(a + b)"));
        assert_eq!(t.unrender(&vars, &params, "(a + b)"), None);
        assert_eq!(t.unrender(&vars, &params, &rendered.replace("ids", "idz")), None);
    }
}
