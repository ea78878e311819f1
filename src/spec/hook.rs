//! One `[[hook]]` table compiled into a [`Hook`]: its target, its placement and code, each
//! checked with a message at the key that is wrong.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::ops::Range;

use crate::error::{Error, ErrorKind, SpecReason};
use crate::locate::Target;
use crate::location::Location;
use crate::marker;
use crate::parse::parse_snippet;
use crate::pattern::Pattern;
use crate::source::SourceFile;
use crate::syntax::{is_identifier, kind};
use crate::template::{Bindings, Capture, Captures, Parameters, StringCapture, Template, MAX_RENDERED_BYTES};

use super::raw::{RawAt, RawHook, RawIn};
use super::{check_id, check_line, key_offset, spec_error, MAX_RECIPE_CODE_BYTES};
use super::{Action, Anchor, ClassSelector, Hook, ImportLine, SpecWarning, SpecWarningKind, StatementSelector};
use crate::template::lexical::{region_at, regions, Region};

/// What compiling a recipe keeps across its hooks: the bytes of rendered code the recipe may
/// still have, and the warnings so far.
pub(super) struct Ledger {
    /// The bytes of rendered code the recipe may still have (each hook's are taken from it).
    pub(super) budget: Cell<usize>,
    /// The warnings of the hooks compiled so far.
    pub(super) warnings: RefCell<Vec<SpecWarning>>,
}

/// Compiles the `[[hook]]` table `raw`, written at `span` of the spec `file`; `ledger`: how
/// many bytes of rendered code the recipe may still have (this hook's are taken from it), and
/// where its warnings go.
pub(super) fn compile_hook(
    file: &SourceFile,
    vars: &BTreeMap<String, String>,
    selectors: &[ClassSelector],
    raw: RawHook,
    span: Range<usize>,
    probe: bool,
    ledger: &Ledger,
) -> Result<Hook, Error> {
    let table = HookTable {
        file,
        vars,
        span,
        id: &raw.id,
        probe,
        budget: &ledger.budget,
        warnings: &ledger.warnings,
        in_strings: raw.capture_in_string.unwrap_or_default(),
    };
    let in_strings = table.in_strings;
    check_id(file, &raw.id, table.at_key("id"), Some(&raw.id))?;
    check_line(file, &raw.summary, table.at_key("summary"), "summary", Some(&raw.id))?;
    table.check_fields(&raw)?;
    let target = table.target(&raw, selectors)?;
    let is_module = target == Target::Module;
    table.check_companions(&raw)?;
    // Before the code: the code may use what `when` captures.
    let when = match &raw.when {
        Some(text) => Some(table.pattern("when", text)?),
        None => None,
    };
    let action = table.action(&raw, is_module, when.as_ref())?;
    if is_module {
        table.check_module_code(&action)?;
    }
    for path in &raw.requires {
        Target::parse(path, file.name()).map_err(|err| table.caused("requires", SpecReason::Value, err))?;
    }
    let location = file.location(table.at_key("id"));
    Ok(Hook {
        id: raw.id,
        summary: raw.summary,
        target,
        action,
        optional: raw.optional,
        when,
        requires: raw.requires,
        capture_in_string: in_strings,
        location,
    })
}

/// A `[[hook]]` table being compiled: where it is written, for messages at its keys.
struct HookTable<'a> {
    file: &'a SourceFile,
    vars: &'a BTreeMap<String, String>,
    span: Range<usize>,
    id: &'a str,
    /// Whether code is parsed to prove it is Python (bundled specs skip it: a test does it).
    probe: bool,
    /// The bytes of rendered code the recipe may still have.
    budget: &'a Cell<usize>,
    /// Where the hook's warnings go.
    warnings: &'a RefCell<Vec<SpecWarning>>,
    /// `capture-in-string`.
    in_strings: StringCapture,
}

impl HookTable<'_> {
    fn at_key(&self, key: &str) -> usize {
        key_offset(self.file, &self.span, key)
    }

    fn fail(&self, key: &str, reason: SpecReason) -> Error {
        spec_error(self.file, self.at_key(key), reason, Some(self.id))
    }

    /// A value with an error of its own (a pattern or code that does not parse, a bad path):
    /// that error is the spec error's source, shown after `reason`.
    fn caused(&self, key: &str, reason: SpecReason, cause: Error) -> Error {
        let kind = ErrorKind::Spec {
            reason,
            cause: Some(Box::new(cause)),
        };
        kind.at(self.file.location(self.at_key(key))).with_hook(self.id)
    }

    fn pattern(&self, key: &str, text: &str) -> Result<Pattern, Error> {
        Pattern::parse(text).map_err(|err| self.caused(key, SpecReason::InvalidPattern { text: text.to_string() }, err))
    }

    /// The template of `key`, checked: known placeholders, no marker-like line, valid Python
    /// (as the value of a `return` when `wrap`). `captures`: the metavariables `{$NAME}` may
    /// name (those of the hook's patterns), `None` when the hook has no pattern.
    /// `identifiers`: those of them that only ever stand for a name.
    fn code(
        &self,
        key: &str,
        text: &str,
        wrap: bool,
        captures: Option<&[String]>,
        identifiers: &[String],
    ) -> Result<Template, Error> {
        let (file, vars, span, id) = (self.file, self.vars, &self.span, self.id);
        let template = Template::new(if wrap { text.trim().to_string() } else { dedent(text) });
        for (_, name) in template.placeholders() {
            let reason = if let Some(capture) = name.strip_prefix('$') {
                let capture = capture.strip_suffix("!r").unwrap_or(capture).to_string();
                match captures {
                    None => Some(SpecReason::CaptureWithoutPattern { name: capture }),
                    Some(bound) if !bound.contains(&capture) => Some(SpecReason::UnboundCapture {
                        name: capture,
                        bound: bound.to_vec(),
                    }),
                    Some(_) => None,
                }
            } else {
                match name {
                    "value" if !wrap => Some(SpecReason::ValueOutsideWrap),
                    "value" => None,
                    _ if name.starts_with("param.") || vars.contains_key(name) => None,
                    _ => Some(SpecReason::UnknownVariable { name: name.to_string() }),
                }
            };
            if let Some(reason) = reason {
                let at = placeholder_offset(file, span, self.at_key(key), name);
                return Err(spec_error(file, at, reason, Some(id)));
            }
        }
        // Placeholder values that are Python names, to prove the code parses with any.
        let params = Parameters {
            bound: Some("__param_0__".into()),
            named: (1..16).map(|i| format!("__param_{i}__")).collect(),
            args: Some("__param_args__".into()),
            kwargs: Some("__param_kwargs__".into()),
        };
        let probes: Captures = captures
            .unwrap_or_default()
            .iter()
            .map(|name| (name.clone(), Capture::text(format!("__capture_{name}__"))))
            .collect();
        let bindings = Bindings {
            value: Some("__value__"),
            params: &params,
            captures: &probes,
            in_strings: self.in_strings,
        };
        self.take_budget(key, template.rendered_len(vars, &bindings))?;
        let rendered = template.render(vars, &bindings).map_err(|too_long| {
            self.oversized(
                key,
                "the code, with its placeholders filled in,",
                too_long.bytes,
                too_long.limit,
            )
        })?;
        if rendered.lines().any(marker::looks_like_marker) {
            let at = marker_offset(file.text(), self.at_key(key)..span.end).unwrap_or(self.at_key(key));
            return Err(spec_error(file, at, SpecReason::MarkerLikeCode, Some(id)));
        }
        self.warn_captures(key, &template, &bindings, identifiers);
        if self.probe {
            let probe = if wrap { format!("return {rendered}") } else { rendered };
            parse_snippet("<code>", &probe).map_err(|err| self.caused(key, SpecReason::CodeUnparsable, err.into()))?;
        }
        Ok(template)
    }

    /// Warns of each `{$NAME}` of `template` (rendered with `bindings`) inside a string literal
    /// of the code where it is not escaped (a raw literal, or `capture-in-string = "refuse"`),
    /// or inside a comment unless it only ever stands for a name (one line): once per name and
    /// place, at the placeholder in the spec.
    fn warn_captures(&self, key: &str, template: &Template, bindings: &Bindings<'_>, identifiers: &[String]) {
        if template.capture_names().is_empty() {
            return;
        }
        let (code, spans) = template.capture_spans(self.vars, bindings);
        let found = regions(&code);
        let mut warnings = self.warnings.borrow_mut();
        let mut seen: Vec<&str> = Vec::new();
        for (span, name) in spans {
            // Which `{$NAME}` of this name it is, to point at that one.
            let nth = seen.iter().filter(|n| **n == name).count();
            seen.push(name);
            let kind = match region_at(&found, span.start) {
                Some(Region::String(literal)) if literal.raw || self.in_strings == StringCapture::Refuse => {
                    SpecWarningKind::CaptureInString { name: name.to_string() }
                }
                Some(Region::Comment) if !identifiers.iter().any(|n| n == name) => {
                    SpecWarningKind::CaptureInComment { name: name.to_string() }
                }
                _ => continue,
            };
            if warnings.iter().any(|w| w.hook == self.id && w.kind == kind) {
                continue;
            }
            let at = nth_placeholder_offset(self.file, &self.span, self.at_key(key), &format!("${name}"), nth);
            let location = if self.file.name().is_empty() {
                Location::nowhere()
            } else {
                self.file.location(at)
            };
            warnings.push(SpecWarning {
                kind,
                location,
                hook: self.id.to_string(),
            });
        }
    }

    /// Takes the `bytes` of one rendered template from the recipe's budget, measured before the
    /// text is built: over [`MAX_RENDERED_BYTES`] for the hook, or over what is left of
    /// [`MAX_RECIPE_CODE_BYTES`] for the recipe, is a spec error at `key`.
    fn take_budget(&self, key: &str, bytes: Option<usize>) -> Result<(), Error> {
        let what = "the code, with its placeholders filled in,";
        let Some(n) = bytes.filter(|&n| n <= MAX_RENDERED_BYTES) else {
            return Err(self.oversized(key, what, bytes, MAX_RENDERED_BYTES));
        };
        let left = self.budget.get();
        if n > left {
            let total = (MAX_RECIPE_CODE_BYTES - left).checked_add(n);
            let what = "the code of the recipe's hooks up to this one, with placeholders filled in,";
            return Err(self.oversized(key, what, total, MAX_RECIPE_CODE_BYTES));
        }
        self.budget.set(left - n);
        Ok(())
    }

    /// A spec error at `key`, caused by code that would be `bytes` long, over `limit`.
    fn oversized(&self, key: &str, what: &str, bytes: Option<usize>, limit: usize) -> Error {
        let at = self.file.location(self.at_key(key));
        let kind = ErrorKind::Oversized {
            what: what.to_string(),
            bytes,
            limit,
        };
        self.caused(key, SpecReason::Value, kind.at(at))
    }

    /// Exactly one placement.
    fn check_fields(&self, raw: &RawHook) -> Result<(), Error> {
        let placements = [
            raw.ensure_imports.is_some(),
            raw.at.is_some(),
            raw.wrap_returns.is_some(),
            raw.replace.is_some(),
            raw.add_forwarder.is_some(),
        ];
        if placements.iter().filter(|&&p| p).count() != 1 {
            return Err(self.fail("id", SpecReason::PlacementCount));
        }
        Ok(())
    }

    /// `in`: a path, a selector, or the module when absent.
    fn target(&self, raw: &RawHook, selectors: &[ClassSelector]) -> Result<Target, Error> {
        Ok(match &raw.target {
            None => Target::Module,
            Some(RawIn::Path(text)) => {
                Target::parse(text, self.file.name()).map_err(|err| self.caused("in", SpecReason::Value, err))?
            }
            Some(RawIn::Select(select)) => {
                if !selectors.iter().any(|s| s.name == select.class) {
                    let known: Vec<String> = selectors.iter().map(|s| s.name.clone()).collect();
                    let class = select.class.clone();
                    return Err(self.fail("in", SpecReason::UnknownSelector { class, known }));
                }
                if let Some(method) = select.method.as_deref().filter(|m| !is_identifier(m)) {
                    let method = method.to_string();
                    return Err(self.fail("in", SpecReason::MethodNotAName { method }));
                }
                Target::Select {
                    selector: select.class.clone(),
                    method: select.method.clone(),
                }
            }
        })
    }

    /// Keys that belong to one placement appear with it only.
    fn check_companions(&self, raw: &RawHook) -> Result<(), Error> {
        let needs_code = raw.at.is_some() || raw.replace.is_some();
        if needs_code != raw.code.is_some() {
            let reason = if needs_code {
                SpecReason::CodeMissing
            } else {
                SpecReason::CodeUnused
            };
            return Err(self.fail("code", reason));
        }
        if raw.code_from.is_some() && !needs_code {
            return Err(self.fail("code-from", SpecReason::CodeUnused));
        }
        if raw.unless_inside.is_some() && raw.wrap_returns.is_none() {
            return Err(self.fail("unless-inside", SpecReason::UnlessInsideAlone));
        }
        if raw.via.is_some() != raw.add_forwarder.is_some() {
            return Err(self.fail("via", SpecReason::ForwarderVia));
        }
        if (raw.nth.is_some() || raw.depth.is_some()) && raw.replace.is_none() {
            return Err(self.fail("nth", SpecReason::NthDepthAlone));
        }
        Ok(())
    }

    /// The placement and its code; `when`: the hook's condition, whose captures code may use.
    fn action(&self, raw: &RawHook, is_module: bool, when: Option<&Pattern>) -> Result<Action, Error> {
        let code = |anchor: Option<&Pattern>| {
            let captures = capturable(anchor, when);
            self.code(
                "code",
                raw.code.as_deref().unwrap_or_default(),
                false,
                captures.as_deref(),
                &identifiers(anchor, when),
            )
        };
        if let Some(imports) = &raw.ensure_imports {
            if !is_module {
                return Err(self.fail("in", SpecReason::ImportsNeedModule));
            }
            let lines = imports
                .iter()
                .map(|text| import_line(text).map_err(|reason| self.fail("ensure-imports", reason)))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Action::EnsureImports(lines))
        } else if let Some(at) = &raw.at {
            let at = self.anchor(at, is_module)?;
            let pattern = match &at {
                Anchor::Before(selector) | Anchor::After(selector) => Some(&selector.pattern),
                _ => None,
            };
            let code = code(pattern)?;
            Ok(Action::Insert { at, code })
        } else if let Some(text) = &raw.wrap_returns {
            if is_module {
                return Err(self.fail("in", SpecReason::WrapNeedsFunction));
            }
            let captures = capturable(None, when);
            let template = self.code(
                "wrap-returns",
                text,
                true,
                captures.as_deref(),
                &identifiers(None, when),
            )?;
            if !template.mentions("value") {
                return Err(self.fail("wrap-returns", SpecReason::WrapNeedsValue));
            }
            let unless_inside = match &raw.unless_inside {
                Some(text) => Some(self.pattern("unless-inside", text)?),
                None => None,
            };
            Ok(Action::WrapReturns {
                template,
                unless_inside,
            })
        } else if let Some(text) = &raw.replace {
            let selector = StatementSelector {
                pattern: self.pattern("replace", text)?,
                nth: raw.nth.unwrap_or_default(),
                depth: raw.depth.unwrap_or_default(),
            };
            let code = code(Some(&selector.pattern))?;
            Ok(Action::Replace { selector, code })
        } else {
            let method = raw.add_forwarder.clone().unwrap_or_default();
            let via = raw.via.clone().unwrap_or_default();
            for name in [&method, &via] {
                if !is_identifier(name) {
                    let name = name.to_string();
                    return Err(self.fail("add-forwarder", SpecReason::ForwarderNotAName { name }));
                }
            }
            if is_module {
                return Err(self.fail("in", SpecReason::ForwarderNeedsClass));
            }
            Ok(Action::AddForwarder { method, via })
        }
    }

    /// `at`: a named anchor or `{ before | after = PATTERN }`.
    fn anchor(&self, at: &RawAt, is_module: bool) -> Result<Anchor, Error> {
        Ok(match at {
            RawAt::Named(name) => match name.as_str() {
                "start" => Anchor::Start,
                "end" => Anchor::End,
                "after-imports" if is_module => Anchor::AfterImports,
                "after-imports" => return Err(self.fail("at", SpecReason::AfterImportsNeedsModule)),
                other => {
                    let anchor = other.to_string();
                    return Err(self.fail("at", SpecReason::UnknownAnchor { anchor }));
                }
            },
            RawAt::Anchor(anchor) => match (&anchor.before, &anchor.after) {
                (Some(text), None) => Anchor::Before(StatementSelector {
                    pattern: self.pattern("at", text)?,
                    nth: anchor.nth,
                    depth: anchor.depth,
                }),
                (None, Some(text)) => Anchor::After(StatementSelector {
                    pattern: self.pattern("at", text)?,
                    nth: anchor.nth,
                    depth: anchor.depth,
                }),
                _ => return Err(self.fail("at", SpecReason::AnchorSides)),
            },
        })
    }

    /// Module code has no function around it, so no parameters to name.
    fn check_module_code(&self, action: &Action) -> Result<(), Error> {
        if let Action::Insert { code, .. } | Action::Replace { code, .. } = action {
            if let Some((_, name)) = code.placeholders().into_iter().find(|(_, n)| n.starts_with("param.")) {
                let at = placeholder_offset(self.file, &self.span, self.at_key("code"), name);
                let reason = SpecReason::ParameterInModule { name: name.to_string() };
                return Err(spec_error(self.file, at, reason, Some(self.id)));
            }
        }
        Ok(())
    }
}

/// The metavariables hook code may use as `{$NAME}`: those of the placement's pattern
/// (`anchor`) and of `when`, sorted; `None` when the hook has neither.
fn capturable(anchor: Option<&Pattern>, when: Option<&Pattern>) -> Option<Vec<String>> {
    if anchor.is_none() && when.is_none() {
        return None;
    }
    let mut names: Vec<String> = anchor
        .into_iter()
        .chain(when)
        .flat_map(Pattern::metavariables)
        .collect();
    names.sort_unstable();
    names.dedup();
    Some(names)
}

/// The metavariables that stand for a name wherever hook code uses them: bound as an identifier
/// (`self.$ATTR`) by the first of the placement's pattern and `when` that binds them.
fn identifiers(anchor: Option<&Pattern>, when: Option<&Pattern>) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut bound: Vec<String> = Vec::new();
    for pattern in anchor.into_iter().chain(when) {
        let own = pattern.identifiers();
        for name in pattern.metavariables() {
            if !bound.contains(&name) {
                if own.contains(&name) {
                    names.push(name.clone());
                }
                bound.push(name);
            }
        }
    }
    names
}

/// The offset of `{name}` in the spec text of a hook, from `from` (the key that holds it).
fn placeholder_offset(file: &SourceFile, span: &Range<usize>, from: usize, name: &str) -> usize {
    nth_placeholder_offset(file, span, from, name, 0)
}

/// [`placeholder_offset`] of the `nth` (from 0) `{name}`; the first when there are fewer.
fn nth_placeholder_offset(file: &SourceFile, span: &Range<usize>, from: usize, name: &str, nth: usize) -> usize {
    let needle = format!("{{{name}}}");
    let text = file.text();
    let window = text.get(from..span.end).unwrap_or_default();
    let mut found = window
        .match_indices(&needle)
        .filter(|(i, _)| !window[..*i].ends_with('{'))
        .map(|(i, _)| from + i);
    let first = found.next();
    let nth = if nth == 0 { first } else { found.nth(nth - 1).or(first) };
    nth.unwrap_or(from)
}

/// The offset of the first marker-like text (see [`marker::marker_like_offset`]) in `range` of
/// `text`.
pub(super) fn marker_offset(text: &str, range: Range<usize>) -> Option<usize> {
    let start = range.start;
    text.get(range)
        .and_then(marker::marker_like_offset)
        .map(|at| start + at)
}

/// Parses one `ensure-imports` entry: `os`, `numpy as np`, `import a.b`, `from a import b as c`.
fn import_line(text: &str) -> Result<ImportLine, SpecReason> {
    let text = text.trim();
    if text.contains(['\n', '\r']) {
        let text = text.to_string();
        return Err(SpecReason::ImportSpansLines { text });
    }
    let statement = if text.starts_with("import ") || text.starts_with("from ") {
        text.to_string()
    } else {
        format!("import {text}")
    };
    let bad = || SpecReason::NotOneImport { text: text.to_string() };
    let stmts = parse_snippet("<import>", &statement).map_err(|_| bad())?;
    let [stmt] = stmts.as_slice() else { return Err(bad()) };
    let names = stmt.field("names").map(|n| n.children()).unwrap_or_default();
    let [alias] = names else { return Err(bad()) };
    let name = alias.label().unwrap_or_default().to_string();
    if name == "*" {
        return Err(bad());
    }
    let asname = alias.asname().map(str::to_string);
    match stmt.kind() {
        kind::IMPORT => Ok(ImportLine {
            statement,
            from: None,
            name,
            alias: asname,
        }),
        kind::IMPORT_FROM => Ok(ImportLine {
            statement,
            from: Some(stmt.label().unwrap_or_default().to_string()),
            name,
            alias: asname,
        }),
        _ => Err(bad()),
    }
}

/// Removes the common leading whitespace of non-blank lines and surrounding blank lines.
fn dedent(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().position(|l| !l.trim().is_empty()).unwrap_or(lines.len());
    let end = lines
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .map_or(start, |i| i + 1);
    let body = &lines[start..end];
    let common = body
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start_matches([' ', '\t']).len())
        .min()
        .unwrap_or(0);
    let out: Vec<&str> = body
        .iter()
        .map(|l| {
            // Blank lines may be shorter, or start with other (non-ASCII) whitespace.
            let ascii_indent = l.len() - l.trim_start_matches([' ', '\t']).len();
            if ascii_indent >= common {
                &l[common..]
            } else {
                l.trim_start()
            }
        })
        .collect();
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_parse_in_all_forms() {
        let i = import_line("numpy as np").unwrap();
        assert_eq!((i.statement.as_str(), i.bound_name()), ("import numpy as np", "np"));
        let i = import_line("from ..a import b").unwrap();
        assert_eq!((i.from.as_deref(), i.bound_name()), (Some("..a"), "b"));
        assert_eq!(import_line("os.path").unwrap().bound_name(), "os");
    }

    #[test]
    fn dedent_keeps_relative_indentation() {
        assert_eq!(dedent("\n    if x:\n        y\n\n    z\n"), "if x:\n    y\n\nz");
        assert_eq!(dedent("   x = 1\n\u{a0}\u{a0}\n   y = 2"), "x = 1\n\ny = 2");
    }
}
