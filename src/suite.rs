//! Several hooks of one recipe on one one-line suite (`def f(x): return x` with code at its
//! start and end and its return wrapped). Each alone expands the suite into a block; together
//! they would edit the same text, so the plan gives them one expansion, framed by the first
//! hook, with the others' changes framed inside it (see `Placer::compose_suite`).

use std::collections::BTreeMap;

use crate::edit::Edit;
use crate::locate::Target;
use crate::outline::{Definition, ParsedFile};
use crate::pattern::{visit_statements, Depth};
use crate::place::{Placer, Refusal, SuitePart};
use crate::spec::{Action, Anchor, Hook, Recipe};
use crate::syntax::{kind, Node};
use crate::template::Bindings;

/// For each one-line suite that two or more placed hooks change: the definition and the indices
/// (in recipe order) of those hooks. `placed` says which hooks have edits.
pub(crate) fn shared_suites<'f>(
    recipe: &Recipe,
    file: &'f ParsedFile,
    placed: &[bool],
) -> Vec<(&'f Definition, Vec<usize>)> {
    let mut by_def: BTreeMap<usize, (&Definition, Vec<usize>)> = BTreeMap::new();
    for (i, hook) in recipe.hooks.iter().enumerate() {
        if !placed[i] || !changes_the_suite(hook) {
            continue;
        }
        for def in hook_definitions(recipe, file, hook) {
            if def.is_one_line_suite() {
                by_def.entry(def.range().start).or_insert((def, Vec::new())).1.push(i);
            }
        }
    }
    by_def.into_values().filter(|(_, hooks)| hooks.len() > 1).collect()
}

/// The definitions a hook targets in `file`, those that exist (none for the module).
pub(crate) fn hook_definitions<'f>(recipe: &Recipe, file: &'f ParsedFile, hook: &Hook) -> Vec<&'f Definition> {
    let paths = match &hook.target {
        Target::Module => Vec::new(),
        Target::Definition { path, ordinal: Some(n) } => vec![format!("{path}#{n}")],
        Target::Definition { path, ordinal: None } => vec![path.clone()],
        Target::Paths(paths) => paths.clone(),
        Target::Select { .. } => crate::project::select::in_file(recipe, file, &hook.id).unwrap_or_default(),
    };
    paths.iter().filter_map(|path| file.locate(path).ok()).collect()
}

fn changes_the_suite(hook: &Hook) -> bool {
    matches!(
        &hook.action,
        Action::Insert {
            at: Anchor::Start | Anchor::End,
            ..
        } | Action::WrapReturns { .. }
            | Action::AddForwarder { .. }
    )
}

/// The edits of the hooks `indices` on the one-line suite of `def`, all held by the first one.
pub(crate) fn compose(
    recipe: &Recipe,
    file: &ParsedFile,
    def: &Definition,
    indices: &[usize],
    string_lines: &[usize],
) -> Result<Vec<Edit>, Refusal> {
    let params = crate::params::parameters(file, def);
    let body = file.node(def).field("body").expect("definitions have a body");
    let mut parts: Vec<(&str, SuitePart<'_>)> = Vec::new();
    for &i in indices {
        let hook = &recipe.hooks[i];
        // At the start or end of a body, or around a return, `{$NAME}` is what `when` captured.
        let captures = crate::captures::of_when(hook, file, Some(def));
        let render = |code: &crate::template::Template| {
            let bindings = Bindings {
                value: None,
                params: &params,
                captures: &captures,
                in_strings: hook.capture_in_string,
            };
            crate::captures::check_strings(code, &recipe.vars, &bindings).map_err(|reason| Refusal {
                offset: def.range().start,
                cause: crate::place::Refused::Placement(reason),
            })?;
            let text = code.render(&recipe.vars, &bindings).map_err(|e| {
                let what = "the code, with the target's parameter names and the pattern's captures filled in,";
                crate::place::oversized(def.range().start, what, e.bytes, e.limit)
            })?;
            crate::captures::check_markers(&text, code, &captures).map_err(|reason| Refusal {
                offset: def.range().start,
                cause: crate::place::Refused::Placement(reason),
            })?;
            Ok(text)
        };
        let part = match &hook.action {
            Action::Insert {
                at: Anchor::Start,
                code,
            } => SuitePart::Start(render(code)?),
            Action::Insert { at: Anchor::End, code } => SuitePart::End(render(code)?),
            Action::AddForwarder { method, via } => SuitePart::End(format!(
                "def {method}(self, *args, **kwargs):\n    return self.{via}.{method}(*args, **kwargs)"
            )),
            Action::WrapReturns { template, .. } => {
                let mut returns: Vec<&Node> = Vec::new();
                visit_statements(body, Depth::Nested, &mut |stmt| {
                    if stmt.is(kind::RETURN) {
                        returns.push(stmt);
                    }
                });
                // The hook was placed alone, so the suite has exactly one return it wraps.
                let Some(ret) = returns.into_iter().next() else {
                    continue;
                };
                let params = &params;
                let vars = &recipe.vars;
                SuitePart::Wrap(
                    ret,
                    Box::new(move |value: &str| {
                        template.render(
                            vars,
                            &Bindings {
                                value: Some(value),
                                params,
                                captures: &captures,
                                in_strings: hook.capture_in_string,
                            },
                        )
                    }),
                )
            }
            _ => continue,
        };
        parts.push((hook.id.as_str(), part));
    }
    let owner = parts.first().map_or("", |(hook, _)| *hook);
    Placer::new(file, &recipe.id, owner, string_lines).compose_suite(def, &parts)
}
