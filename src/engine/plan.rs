//! Where each hook of a recipe goes in a file: its targets, its placement, its edits.

use std::ops::Range;

use crate::edit::Edit;
use crate::error::PlacementReason;
use crate::error::{Error, ErrorKind};
use crate::locate::Target;
use crate::outcome::{OutcomeReason, SkipReason};
use crate::outline::{DefKind, Definition, ParsedFile};
use crate::pattern::{Depth, Pattern};
use crate::place::{oversized, Placer, Refusal, Refused, MAX_ADDED_BYTES};
use crate::source::file_lines_inside_strings;
use crate::spec::{Action, Hook, Recipe};
use crate::syntax::Node;
use crate::template::{Bindings, Captures, Parameters, Template};

use super::{HookPlan, HookPlans};

/// Plans every hook of `recipe` on a parsed file without the recipe's blocks (the original
/// text of [`super::Prepared`]).
pub(crate) fn plan_hooks(recipe: &Recipe, file: &ParsedFile) -> HookPlans {
    // Lines inside string literals are never marker lines; read them once for all hooks, and
    // only where a marker can be (every marker line holds " pysplice ").
    let text = file.source().text();
    let string_lines = if text.contains(" pysplice ") {
        file_lines_inside_strings(file.source())
    } else {
        Vec::new()
    };
    // What the hooks add to the file, hook by hook: every edit's text ends up in the output, so
    // more than the file limit could never be written (and is not built further).
    let mut added = 0usize;
    let mut hooks: HookPlans = recipe
        .hooks
        .iter()
        .map(|hook| {
            let planned = match plan_hook(recipe, hook, file, &string_lines).and_then(|planned| {
                let Ok(edits) = &planned else { return Ok(planned) };
                let bytes = edits.iter().fold(added, |n, e| n.saturating_add(e.text().len()));
                if bytes > MAX_ADDED_BYTES {
                    let what = "the code the recipe's hooks up to this one add to the file";
                    return Err(oversized_error(file, hook, 0, what, Some(bytes), MAX_ADDED_BYTES));
                }
                added = bytes;
                Ok(planned)
            }) {
                Ok(Ok(edits)) => HookPlan::Edits(edits),
                Ok(Err(reason)) => HookPlan::Skipped(reason.into()),
                Err(err) if hook.optional => HookPlan::Skipped(OutcomeReason::skipped(err)),
                Err(err) => HookPlan::Failed(err),
            };
            (hook.id.clone(), hook.summary.clone(), planned)
        })
        .collect();
    // Hooks that each expand the same one-line suite share one expansion.
    let placed: Vec<bool> = hooks.iter().map(|(_, _, p)| matches!(p, HookPlan::Edits(_))).collect();
    for (def, indices) in crate::suite::shared_suites(recipe, file, &placed) {
        match crate::suite::compose(recipe, file, def, &indices, &string_lines) {
            Ok(edits) => {
                hooks[indices[0]].2 = HookPlan::Edits(edits);
                for &i in &indices[1..] {
                    hooks[i].2 = HookPlan::Edits(Vec::new());
                }
            }
            Err(refusal) => {
                for &i in &indices {
                    let hook = &recipe.hooks[i];
                    let err = refusal_error(file, hook, refusal.clone());
                    hooks[i].2 = if hook.optional {
                        HookPlan::Skipped(OutcomeReason::skipped(err))
                    } else {
                        HookPlan::Failed(err)
                    };
                }
            }
        }
    }
    hooks
}

/// `Ok(Ok(edits))` placed, `Ok(Err(reason))` skipped on purpose, `Err` cannot be placed.
fn plan_hook(
    recipe: &Recipe,
    hook: &Hook,
    file: &ParsedFile,
    string_lines: &[usize],
) -> Result<Result<Vec<Edit>, SkipReason>, Error> {
    for path in &hook.requires {
        if file.find_all(path.split('#').next().unwrap_or(path)).is_empty() {
            return Ok(Err(SkipReason::Requires { path: path.clone() }));
        }
    }
    let targets: Vec<Option<&Definition>> = match &hook.target {
        Target::Module => vec![None],
        Target::Definition { .. } => {
            let text = target_text(&hook.target);
            vec![Some(file.locate(&text).map_err(|err| err.with_hook(&hook.id))?)]
        }
        Target::Paths(paths) => paths
            .iter()
            .map(|p| file.locate(p).map(Some).map_err(|err| err.with_hook(&hook.id)))
            .collect::<Result<_, _>>()?,
        Target::Select { .. } => crate::project::select::in_file(recipe, file, &hook.id)?
            .iter()
            .map(|p| file.locate(p).map(Some).map_err(|err| err.with_hook(&hook.id)))
            .collect::<Result<_, _>>()?,
    };
    // Several targets: every edit of those that place, or the reason when none does.
    let mut edits = Vec::new();
    let mut skipped = None;
    let mut added = 0usize;
    for target in targets {
        match plan_target(recipe, hook, file, string_lines, target)? {
            Ok(found) => {
                // Many targets (`in = [...]`, a selector) each get the code: bounded together.
                added = found.iter().fold(added, |n, e| n.saturating_add(e.text().len()));
                if added > MAX_ADDED_BYTES {
                    let offset = target.map_or(0, |d| d.range().start);
                    let what = "the code this hook adds to the file";
                    return Err(oversized_error(file, hook, offset, what, Some(added), MAX_ADDED_BYTES));
                }
                edits.extend(found);
            }
            Err(reason) => skipped = Some(reason),
        }
    }
    match skipped {
        Some(reason) if edits.is_empty() => Ok(Err(reason)),
        _ => Ok(Ok(edits)),
    }
}

/// [`plan_hook`] for one target (`None`: the module).
fn plan_target(
    recipe: &Recipe,
    hook: &Hook,
    file: &ParsedFile,
    string_lines: &[usize],
    target: Option<&Definition>,
) -> Result<Result<Vec<Edit>, SkipReason>, Error> {
    let placement_error = |refusal: Refusal| refusal_error(file, hook, refusal);
    let body = target.map_or(file.module_block(), |def| {
        file.node(def).field("body").expect("definitions have a body")
    });
    if let Some(when) = &hook.when {
        if when.find_in(body, Depth::Nested).is_empty() {
            let pattern = when.text().to_string();
            return Ok(Err(SkipReason::NotApplicable { pattern }));
        }
    }
    let when_captures = crate::captures::of_when(hook, file, target);
    let params = target
        .map(|def| crate::params::parameters(file, def))
        .unwrap_or_default();
    let ctx = OnTarget {
        recipe,
        hook,
        file,
        def: target,
        params: &params,
        when: &when_captures,
    };
    let placer = Placer::new(file, &recipe.id, &hook.id, string_lines);
    let edits = match (&hook.action, target) {
        (Action::EnsureImports(imports), _) => {
            let (edits, present) = placer.ensure_imports(imports).map_err(placement_error)?;
            if edits.is_empty() {
                return Ok(Err(SkipReason::AlreadyImported { imports: present }));
            }
            edits
        }
        (Action::Insert { at, code }, None) => {
            ctx.check_params(code)?;
            placer
                .insert_in_module(at, &|stmt| ctx.render(code, crate::captures::anchor_pattern(at), stmt))
                .map_err(placement_error)?
        }
        (Action::Insert { at, code }, Some(def)) => {
            ctx.check_params(code)?;
            placer
                .insert_in_definition(def, at, &|stmt| {
                    ctx.render(code, crate::captures::anchor_pattern(at), stmt)
                })
                .map_err(placement_error)?
        }
        (Action::Replace { selector, code }, _) => {
            ctx.check_params(code)?;
            placer
                .replace_statements(body, selector, &|stmt| ctx.render(code, Some(&selector.pattern), stmt))
                .map_err(placement_error)?
        }
        (
            Action::WrapReturns {
                template,
                unless_inside,
            },
            Some(def),
        ) => ctx.wrap_returns(&placer, def, body, template, unless_inside.as_ref())?,
        (Action::AddForwarder { method, via }, Some(def)) => {
            if def.kind() != DefKind::Class {
                return Err(refused(
                    file,
                    hook,
                    def.range().start,
                    PlacementReason::NotAClass {
                        path: def.path().to_string(),
                    },
                ));
            }
            if let Some((path, line)) = class_member(file, def, method) {
                return Ok(Err(SkipReason::AlreadyPresent { path, line }));
            }
            if !assigns_self_attribute(file.node(def), via) {
                let reason = PlacementReason::NeverAssigns {
                    path: def.path().to_string(),
                    via: via.to_string(),
                };
                return Err(refused(file, hook, def.range().start, reason));
            }
            placer.add_forwarder(def, method, via).map_err(placement_error)?
        }
        (Action::WrapReturns { .. } | Action::AddForwarder { .. }, None) => {
            return Err(refused(file, hook, 0, PlacementReason::NeedsDefinition))
        }
    };
    Ok(Ok(edits))
}

/// The error of a placement's refusal: [`ErrorKind::Oversized`] for code too long, else
/// [`ErrorKind::Placement`].
fn refusal_error(file: &ParsedFile, hook: &Hook, refusal: Refusal) -> Error {
    match refusal.cause {
        Refused::Oversized { what, too_long } => {
            oversized_error(file, hook, refusal.offset, what, too_long.bytes, too_long.limit)
        }
        Refused::Placement(reason) => refused(file, hook, refusal.offset, reason),
    }
}

/// `what` of `hook` would be `bytes` long, over `limit`: an error at `offset` of `file`.
fn oversized_error(
    file: &ParsedFile,
    hook: &Hook,
    offset: usize,
    what: &str,
    bytes: Option<usize>,
    limit: usize,
) -> Error {
    ErrorKind::Oversized {
        what: what.to_string(),
        bytes,
        limit,
    }
    .at(file.source().location(offset))
    .with_hook(&hook.id)
}

/// The placement of `hook` refused at `offset` of `file`, for `reason`.
fn refused(file: &ParsedFile, hook: &Hook, offset: usize, reason: PlacementReason) -> Error {
    ErrorKind::Placement { reason }
        .at(file.source().location(offset))
        .with_hook(&hook.id)
}

/// One hook on one target (`def`, or the module), with the target's parameters and what the
/// hook's `when` captured there.
struct OnTarget<'a> {
    recipe: &'a Recipe,
    hook: &'a Hook,
    file: &'a ParsedFile,
    def: Option<&'a Definition>,
    params: &'a Parameters,
    when: &'a Captures,
}

impl OnTarget<'_> {
    /// The hook's code at one place: `stmt` is the statement `pattern` (the placement's own)
    /// matched there, whose captures fill in `{$NAME}` (the `when` match's fill in the rest).
    /// Refused when it would be too long, or when a capture brings a marker-like line.
    fn render(&self, template: &Template, pattern: Option<&Pattern>, stmt: Option<&Node>) -> Result<String, Refusal> {
        let captures = crate::captures::at_match(template, self.when, pattern, stmt, self.file.source().text());
        let offset = stmt.map_or(self.def.map_or(0, |d| d.range().start), |s| s.range().start);
        let bindings = Bindings {
            value: None,
            params: self.params,
            captures: &captures,
            in_strings: self.hook.capture_in_string,
        };
        crate::captures::check_strings(template, &self.recipe.vars, &bindings).map_err(|reason| Refusal {
            offset,
            cause: Refused::Placement(reason),
        })?;
        let code = template.render(&self.recipe.vars, &bindings).map_err(|too_long| {
            let what = "the code, with the target's parameter names and the pattern's captures filled in,";
            oversized(offset, what, too_long.bytes, too_long.limit)
        })?;
        crate::captures::check_markers(&code, template, &captures).map_err(|reason| Refusal {
            offset,
            cause: Refused::Placement(reason),
        })?;
        Ok(code)
    }

    /// Refuses `{param.KEY}` placeholders the target has no parameter for.
    fn check_params(&self, template: &Template) -> Result<(), Error> {
        crate::params::check(self.params, template, self.def)
            .map_err(|reason| refused(self.file, self.hook, self.def.map_or(0, |d| d.range().start), reason))
    }

    /// The edits wrapping the returns of `def` (refused when there is none to wrap).
    fn wrap_returns(
        &self,
        placer: &Placer<'_>,
        def: &Definition,
        body: &Node,
        template: &Template,
        unless_inside: Option<&Pattern>,
    ) -> Result<Vec<Edit>, Error> {
        let exclude: Vec<Range<usize>> = unless_inside
            .map(|p| p.find_in(body, Depth::Nested).into_iter().map(Node::range).collect())
            .unwrap_or_default();
        // The parameters and the captures are checked once; each return then substitutes its
        // value (an expression: it opens or closes no literal).
        self.check_params(template)?;
        let bindings = Bindings {
            value: None,
            params: self.params,
            captures: self.when,
            in_strings: self.hook.capture_in_string,
        };
        crate::captures::check_strings(template, &self.recipe.vars, &bindings)
            .map_err(|reason| refused(self.file, self.hook, def.range().start, reason))?;
        let wrap = |value: &str| {
            template.render(
                &self.recipe.vars,
                &Bindings {
                    value: Some(value),
                    ..bindings
                },
            )
        };
        let (edits, left_alone) = placer
            .wrap_returns(def, &exclude, &wrap)
            .map_err(|refusal| refusal_error(self.file, self.hook, refusal))?;
        if edits.is_empty() {
            let reason = PlacementReason::NoReturn {
                path: def.path().to_string(),
                left_alone,
            };
            return Err(refused(self.file, self.hook, def.range().start, reason));
        }
        Ok(edits)
    }
}

fn target_text(target: &Target) -> String {
    match target {
        Target::Module => "module".into(),
        Target::Definition { path, ordinal: Some(n) } => format!("{path}#{n}"),
        Target::Definition { path, ordinal: None } => path.clone(),
        Target::Paths(paths) => paths.join(", "),
        Target::Select { selector, method } => format!("{selector}.{}", method.as_deref().unwrap_or("")),
    }
}

/// Where `class`, or a base class defined in the same file, binds `name` at class level: a
/// method (decorated or not), an assignment (`get = helper`), an import, a nested class. As
/// `(path, line)`.
fn class_member(file: &ParsedFile, class: &Definition, name: &str) -> Option<(String, usize)> {
    let mut seen = Vec::new();
    let mut queue = vec![class.path().to_string()];
    while let Some(path) = queue.pop() {
        if seen.contains(&path) {
            continue;
        }
        let method = format!("{path}.{name}");
        if let Some(found) = file.find_all(&method).into_iter().next() {
            return Some((found.path().to_string(), found.line()));
        }
        if let Some(def) = file.find_all(&path).into_iter().next() {
            let node = file.node(def);
            if let Some(body) = node.field("body") {
                let mut binding = None;
                crate::pattern::visit_statements(body, Depth::Nested, &mut |stmt| {
                    if binding.is_none() && crate::place::binds_name(stmt, name) {
                        binding = Some(stmt.range().start);
                    }
                });
                if let Some(at) = binding {
                    return Some((method, file.source().lines().line_of(at)));
                }
            }
            if let Some(bases) = node.field("bases") {
                queue.extend(bases.children().iter().filter_map(|b| b.as_name().map(str::to_string)));
            }
        }
        seen.push(path);
    }
    None
}

fn assigns_self_attribute(class: &Node, attr: &str) -> bool {
    let mut found = false;
    class.walk(&mut |n| {
        let targets = match (n.as_assign(), n.as_ann_assign()) {
            (Some(assign), _) => assign.targets,
            (None, Some(ann)) => std::slice::from_ref(ann.target),
            (None, None) => &[],
        };
        found |= targets.iter().any(|t| {
            t.as_attribute()
                .is_some_and(|a| a.attr == attr && a.value.as_name() == Some("self"))
        });
        !found
    });
    found
}
