//! Plan, apply, check and revert a recipe on one file, with verification.
//!
//! Planning never mutates; applying never decides. A file that already carries this recipe's
//! markers is first reverted in memory to its original text, the recipe is planned on that
//! original, and the result compared with what is there by [`crate::outcome`]: equal blocks are
//! "already applied", changed or moved ones "updated".

use std::ops::Range;
use std::sync::Arc;

use crate::edit::{apply_edits, Edit, EditMap};
use crate::error::{Error, HookRef};
use crate::locate::Target;
use crate::marker::{self, Frame, FrameKind};
use crate::outcome::{self, Blocks};
pub use crate::outcome::{HookOutcome, Reason, Status};
use crate::outline::{DefKind, Definition, ParsedFile};
use crate::parse::parse_snippet;
use crate::pattern::Depth;
use crate::place::{Placer, Refusal};
use crate::source::{file_lines_inside_strings, SourceFile};
use crate::spec::{Action, Hook, Recipe};
use crate::syntax::{kind, Node, ABSENT, LIST};
use crate::template::Bindings;

/// A hook's edits, or why it has none.
#[derive(Debug)]
enum HookPlan {
    Edits(Vec<Edit>),
    Skipped(Reason),
    Failed(Error),
}

/// The plan of a recipe for one file: per hook, edits or the reason there are none.
#[derive(Debug)]
pub struct Plan {
    recipe_id: String,
    hooks: Vec<(String, String, HookPlan)>,
}

impl Plan {
    /// Whether every hook could be placed or was skipped on purpose.
    #[must_use]
    pub fn is_complete(&self) -> bool {
        !self.hooks.iter().any(|(_, _, p)| matches!(p, HookPlan::Failed(_)))
    }

    /// The first failure, if any.
    #[must_use]
    pub fn first_failure(&self) -> Option<&Error> {
        self.hooks.iter().find_map(|(_, _, p)| match p {
            HookPlan::Failed(err) => Some(err),
            _ => None,
        })
    }

    /// All edits in hook order.
    #[must_use]
    pub fn edits(&self) -> Vec<Edit> {
        self.hooks
            .iter()
            .flat_map(|(_, _, p)| match p {
                HookPlan::Edits(edits) => edits.clone(),
                _ => Vec::new(),
            })
            .collect()
    }

    /// Per-hook statuses as planned (placed hooks show as `Applied`).
    #[must_use]
    pub fn outcomes(&self) -> Vec<HookOutcome> {
        self.hooks
            .iter()
            .map(|(id, summary, p)| HookOutcome {
                hook: id.clone(),
                summary: summary.clone(),
                status: match p {
                    HookPlan::Edits(_) => Status::Applied,
                    HookPlan::Skipped(reason) => Status::Skipped { reason: reason.clone() },
                    HookPlan::Failed(err) => Status::Failed {
                        reason: Reason::failed(err.clone()),
                    },
                },
                lines: None,
            })
            .collect()
    }

    /// The recipe this plan is for.
    #[must_use]
    pub fn recipe_id(&self) -> &str {
        &self.recipe_id
    }
}

/// A file as found, with this recipe's frames taken out.
#[derive(Clone, Debug)]
pub struct Prepared {
    current: SourceFile,
    frames: Vec<Frame>,
    /// Where each frame sits in the original text.
    anchors: Vec<usize>,
    /// Shared, so that an editor's next keystroke can re-parse from it (`Document`).
    original: Arc<ParsedFile>,
}

impl Prepared {
    /// Reads this recipe's markers in `current` and reconstructs the original text.
    ///
    /// # Errors
    /// [`Error::Marker`] for damaged or hand-edited frames; [`Error::Syntax`] when the text is not
    /// valid Python.
    pub fn new(recipe: &Recipe, current: SourceFile) -> Result<Prepared, Error> {
        Prepared::reusing(recipe, current, None)
    }

    /// [`Prepared::new`], parsing the original text again only where it differs from
    /// `previous` (the original of an earlier version of the same file, for this recipe).
    pub(crate) fn reusing(
        recipe: &Recipe,
        current: SourceFile,
        previous: Option<&ParsedFile>,
    ) -> Result<Prepared, Error> {
        let parse = |source: SourceFile| match previous {
            Some(previous) => ParsedFile::reparse(source, previous),
            None => ParsedFile::parse(source),
        };
        if let Some((other, line)) = marker::stacked_inside(&current, &recipe.id) {
            // Taking this recipe's expansion out would take the other recipe's changes with it.
            let offset = current.lines().line_start(line).unwrap_or(0);
            return Err(Error::Marker {
                location: current.location(offset),
                reason: format!(
                    "recipe `{other}` has changes inside this recipe's expanded one-line suite: revert `{other}` first"
                ),
                hook: HookRef(None),
            });
        }
        let frames = marker::scan(&current, &recipe.id)?;
        check_replaced(recipe, &current, &frames)?;
        let (original, anchors) = if frames.is_empty() {
            (parse(current.clone())?, Vec::new())
        } else {
            let (text, anchors) = marker::strip_with_anchors(current.text(), &frames);
            (parse(SourceFile::new(current.name(), text))?, anchors)
        };
        Ok(Prepared {
            current,
            frames,
            anchors,
            original: Arc::new(original),
        })
    }

    /// The original, shared.
    pub(crate) fn original_shared(&self) -> Arc<ParsedFile> {
        Arc::clone(&self.original)
    }

    /// The file as found.
    #[must_use]
    pub fn current(&self) -> &SourceFile {
        &self.current
    }

    /// The file without this recipe's changes.
    #[must_use]
    pub fn original(&self) -> &ParsedFile {
        &self.original
    }

    /// This recipe's frames in the file as found.
    pub(crate) fn frames(&self) -> &[Frame] {
        &self.frames
    }

    /// Whether the recipe has frames in the file.
    #[must_use]
    pub fn is_patched(&self) -> bool {
        !self.frames.is_empty()
    }

    /// This recipe's blocks in the file as found.
    pub(crate) fn blocks(&self) -> Blocks<'_> {
        Blocks::new(&self.frames, &self.anchors)
    }
}

/// A frame that replaced statements puts them back on revert; they must be statements the
/// recipe's `replace` hook of that id matches, or a marker could carry code of its own (its
/// seal proves no more than that whoever wrote it could compute SHA-256).
fn check_replaced(recipe: &Recipe, current: &SourceFile, frames: &[Frame]) -> Result<(), Error> {
    for frame in frames.iter().filter(|f| f.kind == FrameKind::Lines) {
        let pattern = recipe
            .hooks
            .iter()
            .find(|h| h.id == frame.hook)
            .and_then(|h| match &h.action {
                Action::Replace { selector, .. } => Some(&selector.pattern),
                _ => None,
            });
        let matches = pattern.is_some_and(|pattern| {
            displaced_statements(&frame.was)
                .is_some_and(|stmts| !stmts.is_empty() && stmts.iter().all(|stmt| pattern.matches_statement(stmt)))
        });
        if !matches {
            let reason = match pattern {
                Some(pattern) => format!(
                    "the statements this block of hook `{}` would put back do not match its pattern `{}` (was the marker forged?)",
                    frame.hook,
                    pattern.text()
                ),
                None => format!(
                    "hook `{}` is not a `replace` of this recipe, so the statements its block would put back cannot be checked; revert with the recipe that applied it",
                    frame.hook
                ),
            };
            return Err(Error::Marker {
                location: current.location(frame.removal.first().map_or(0, |r| r.start)),
                reason,
                hook: HookRef(Some(frame.hook.clone())),
            });
        }
    }
    Ok(())
}

/// The statements of displaced whole lines, indented as they were in the file (inside an
/// `if` when indented, so that lines of a multi-line string keep their text).
fn displaced_statements(was: &str) -> Option<Vec<Node>> {
    if !was.starts_with([' ', '\t']) {
        return parse_snippet("<was>", was).ok();
    }
    let wrapped = parse_snippet("<was>", &format!("if True:\n{was}\n")).ok()?;
    let [stmt] = wrapped.as_slice() else { return None };
    Some(stmt.field("body")?.children().to_vec())
}

/// Plans `recipe` on an (unpatched) parsed file.
#[must_use]
pub fn plan(recipe: &Recipe, file: &ParsedFile) -> Plan {
    // Lines inside string literals are never marker lines; read them once for all hooks, and
    // only where a marker can be (every marker line holds " pysplice ").
    let text = file.source().text();
    let string_lines = if text.contains(" pysplice ") {
        file_lines_inside_strings(file.source())
    } else {
        Vec::new()
    };
    let mut hooks: Vec<(String, String, HookPlan)> = recipe
        .hooks
        .iter()
        .map(|hook| {
            let planned = match plan_hook(recipe, hook, file, &string_lines) {
                Ok(Ok(edits)) => HookPlan::Edits(edits),
                Ok(Err(reason)) => HookPlan::Skipped(Reason::new(reason)),
                Err(err) if hook.optional => HookPlan::Skipped(Reason::skipped(err)),
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
                    let err = Error::Placement {
                        location: file.source().location(refusal.offset),
                        reason: refusal.reason.clone(),
                        hook: HookRef(Some(hook.id.clone())),
                    };
                    hooks[i].2 = if hook.optional {
                        HookPlan::Skipped(Reason::skipped(err))
                    } else {
                        HookPlan::Failed(err)
                    };
                }
            }
        }
    }
    Plan {
        recipe_id: recipe.id.clone(),
        hooks,
    }
}

/// `Ok(Ok(edits))` placed, `Ok(Err(reason))` skipped on purpose, `Err` cannot be placed.
fn plan_hook(
    recipe: &Recipe,
    hook: &Hook,
    file: &ParsedFile,
    string_lines: &[usize],
) -> Result<Result<Vec<Edit>, String>, Error> {
    for path in &hook.requires {
        if file.find_all(path.split('#').next().unwrap_or(path)).is_empty() {
            return Ok(Err(format!("requires `{path}`, which this file does not define")));
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
    for target in targets {
        match plan_target(recipe, hook, file, string_lines, target)? {
            Ok(found) => edits.extend(found),
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
) -> Result<Result<Vec<Edit>, String>, Error> {
    let source = file.source();
    let placement_error = |refusal: Refusal| Error::Placement {
        location: source.location(refusal.offset),
        reason: refusal.reason,
        hook: HookRef(Some(hook.id.clone())),
    };
    let body = target.map_or(file.module_block(), |def| {
        file.node(def).field("body").expect("definitions have a body")
    });
    if let Some(when) = &hook.when {
        if when.find_in(body, Depth::Nested).is_empty() {
            return Ok(Err(format!(
                "not applicable: nothing in the target matches `{}`",
                when.text()
            )));
        }
    }
    let params = target.map(|def| parameter_names(file.node(def))).unwrap_or_default();
    let placer = Placer::new(file, &recipe.id, &hook.id, string_lines);
    let render = |template: &crate::template::Template, value: Option<&str>| -> Result<String, Error> {
        if let Some(&n) = template.param_indices().iter().find(|&&n| n >= params.len()) {
            return Err(placement_error(Refusal {
                offset: target.map_or(0, |d| d.range().start),
                reason: format!(
                    "the template uses `{{param.{n}}}` but the target has {} parameters",
                    params.len()
                ),
            }));
        }
        Ok(template.render(&recipe.vars, &Bindings { value, params: &params }))
    };
    let edits = match (&hook.action, target) {
        (Action::EnsureImports(imports), _) => {
            let (edits, present) = placer.ensure_imports(imports).map_err(placement_error)?;
            if edits.is_empty() {
                return Ok(Err(format!("already imported: {}", present.join(", "))));
            }
            edits
        }
        (Action::Insert { at, code }, None) => placer
            .insert_in_module(at, &render(code, None)?)
            .map_err(placement_error)?,
        (Action::Insert { at, code }, Some(def)) => placer
            .insert_in_definition(def, at, &render(code, None)?)
            .map_err(placement_error)?,
        (Action::Replace { selector, code }, _) => placer
            .replace_statements(body, selector, &render(code, None)?)
            .map_err(placement_error)?,
        (
            Action::WrapReturns {
                template,
                unless_inside,
            },
            Some(def),
        ) => {
            let exclude: Vec<Range<usize>> = unless_inside
                .as_ref()
                .map(|p| p.find_in(body, Depth::Nested).into_iter().map(Node::range).collect())
                .unwrap_or_default();
            // Rendering checks the parameters once; each return then substitutes its value.
            render(template, None)?;
            let wrap = |value: &str| {
                template.render(
                    &recipe.vars,
                    &Bindings {
                        value: Some(value),
                        params: &params,
                    },
                )
            };
            let (edits, left_alone) = placer.wrap_returns(def, &exclude, &wrap).map_err(placement_error)?;
            if edits.is_empty() {
                let reason = if left_alone == 0 {
                    format!("`{}` has no return statement to wrap", def.path())
                } else {
                    format!(
                        "`{}` has no return statement to wrap: its {left_alone} return(s) are inside `unless-inside` or are bare returns of a generator, which are left alone",
                        def.path()
                    )
                };
                return Err(placement_error(Refusal {
                    offset: def.range().start,
                    reason,
                }));
            }
            edits
        }
        (Action::AddForwarder { method, via }, Some(def)) => {
            if def.kind() != DefKind::Class {
                return Err(placement_error(Refusal {
                    offset: def.range().start,
                    reason: format!("`{}` is not a class", def.path()),
                }));
            }
            if let Some((path, line)) = class_member(file, def, method) {
                return Ok(Err(format!("already present: `{path}` (line {line})")));
            }
            if !assigns_self_attribute(file.node(def), via) {
                return Err(placement_error(Refusal {
                    offset: def.range().start,
                    reason: format!("`{}` never assigns `self.{via}`", def.path()),
                }));
            }
            placer.add_forwarder(def, method, via).map_err(placement_error)?
        }
        (Action::WrapReturns { .. } | Action::AddForwarder { .. }, None) => {
            return Err(placement_error(Refusal {
                offset: 0,
                reason: "this placement needs a definition target".into(),
            }))
        }
    };
    Ok(Ok(edits))
}

/// The definitions a hook targets in `file`, those that exist (none for the module).
pub(crate) fn hook_definitions<'f>(recipe: &Recipe, file: &'f ParsedFile, hook: &Hook) -> Vec<&'f Definition> {
    let paths = match &hook.target {
        Target::Module => Vec::new(),
        Target::Definition { .. } => vec![target_text(&hook.target)],
        Target::Paths(paths) => paths.clone(),
        Target::Select { .. } => crate::project::select::in_file(recipe, file, &hook.id).unwrap_or_default(),
    };
    paths.iter().filter_map(|path| file.locate(path).ok()).collect()
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

/// Parameter names of a function node in order: positional-only, regular, `*args`, keyword-only, `**kwargs`.
pub(crate) fn parameter_names(def: &Node) -> Vec<String> {
    let Some(args) = def.children().iter().find(|c| c.is(kind::ARGUMENTS)) else {
        return Vec::new();
    };
    args.parameters()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(arg, _)| arg.label().map(str::to_string))
        .collect()
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

/// A verified result of applying a recipe to one file.
#[derive(Clone, Debug)]
pub struct Patched {
    name: String,
    input: String,
    output: String,
    outcomes: Vec<HookOutcome>,
    /// The edits that made `output` from `input` (range in each), when known.
    changes: Option<Vec<(Range<usize>, Range<usize>)>>,
}

impl Patched {
    /// The file's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The text as it was.
    #[must_use]
    pub fn input(&self) -> &str {
        &self.input
    }

    /// The text as it is now (equal to the input when nothing changed).
    #[must_use]
    pub fn output(&self) -> &str {
        &self.output
    }

    /// Whether the output differs from the input.
    #[must_use]
    pub fn changed(&self) -> bool {
        self.input != self.output
    }

    /// Per-hook outcomes, in recipe order.
    #[must_use]
    pub fn outcomes(&self) -> &[HookOutcome] {
        &self.outcomes
    }

    /// For an apply: whether the file was up to date already, so that `check` passes (see
    /// [`crate::outcome::is_up_to_date`]).
    #[must_use]
    pub fn is_up_to_date(&self) -> bool {
        crate::outcome::is_up_to_date(&self.outcomes, self.changed())
    }

    /// The edits that made the output from the input (range in each), when known.
    pub(crate) fn changes(&self) -> Option<&[(Range<usize>, Range<usize>)]> {
        self.changes.as_deref()
    }
}

/// What CPython's compiler (not only its parser) would refuse in `file`, each as an
/// [`Error::Syntax`] with its location, in source order: `return` outside a function or with a
/// value in an async generator, `yield` outside a function, `await` / `async for` /
/// `async with` outside `async def`, misplaced `break` / `continue`, `nonlocal` / `global`
/// misuse, `from __future__` after other code, nesting deeper than CPython accepts. The checks
/// are conservative: what CPython compiles is never reported. The verification of every apply
/// runs them on the output.
#[must_use]
pub fn compiler_errors(file: &ParsedFile) -> Vec<Error> {
    let source = file.source();
    crate::verify::check(file.root(), source.text())
        .problems
        .into_iter()
        .map(|problem| Error::Syntax {
            location: source.location(problem.offset),
            message: problem.message,
            hook: HookRef(None),
        })
        .collect()
}

/// Applies `recipe` to `source` in memory and verifies the result.
///
/// ```
/// use pysplice::{apply, Recipe, SourceFile};
/// let recipe = Recipe::from_toml("r.toml", r#"
/// [recipe]
/// id = "demo"
/// summary = "Count calls"
/// [[hook]]
/// id = "count"
/// summary = "Counted calls of Model.forward"
/// in = "Model.forward"
/// at = "start"
/// code = "self.calls = getattr(self, 'calls', 0) + 1"
/// "#)?;
/// let file = SourceFile::new("m.py", "class Model:\n    def forward(self, x):\n        return x\n");
/// let patched = apply(&recipe, file)?;
/// assert!(patched.output().contains("        self.calls = getattr(self, 'calls', 0) + 1\n"));
/// // Applying again changes nothing; reverting gives back the original bytes.
/// let again = apply(&recipe, SourceFile::new("m.py", patched.output()))?;
/// assert!(!again.changed());
/// let reverted = pysplice::revert(&recipe, SourceFile::new("m.py", patched.output()))?;
/// assert_eq!(reverted.output(), "class Model:\n    def forward(self, x):\n        return x\n");
/// # Ok::<(), pysplice::Error>(())
/// ```
///
/// # Errors
/// The first failing required hook ([`Error::NotFound`], [`Error::Placement`]...), a conflict
/// between hooks, damaged markers, or a failed verification. Nothing is changed on error.
pub fn apply(recipe: &Recipe, source: SourceFile) -> Result<Patched, Error> {
    let prepared = Prepared::new(recipe, source)?;
    let plan = plan(recipe, prepared.original());
    apply_plan(recipe, &prepared, plan)
}

/// What [`apply_reporting`] found: the result, and what became of every hook.
#[derive(Debug)]
pub struct Attempt {
    /// The patched file, or why there is none.
    pub result: Result<Patched, Error>,
    /// Every hook's outcome, also on failure: the plan's outcomes when a hook cannot be placed;
    /// when the edits conflict, the two hooks concerned marked failed; when they do not verify,
    /// every hook that would have been placed (see [`crate::outcome`]). Empty only when the file
    /// cannot be prepared (damaged markers).
    pub outcomes: Vec<HookOutcome>,
    /// Whether every hook could be placed (a failure then came later: conflict, verification).
    pub planned: bool,
}

/// Applies like [`apply`], and says what became of every hook even when it fails.
#[must_use]
pub fn apply_reporting(recipe: &Recipe, source: SourceFile) -> Attempt {
    let prepared = match Prepared::new(recipe, source) {
        Ok(prepared) => prepared,
        Err(err) => {
            return Attempt {
                result: Err(err),
                outcomes: Vec::new(),
                planned: false,
            }
        }
    };
    let plan = plan(recipe, prepared.original());
    let planned = plan.is_complete();
    // Without a verified result, the hooks are classified on the planned text, as a document is.
    let fallback = if planned {
        plan.outcomes()
    } else {
        preview(recipe, &prepared, &plan).0
    };
    let (result, outcomes) = match apply_plan(recipe, &prepared, plan) {
        Ok(patched) => {
            let outcomes = patched.outcomes().to_vec();
            (Ok(patched), outcomes)
        }
        Err(err) if planned => {
            let failed = outcome::failed(fallback, &err);
            (Err(err), failed)
        }
        Err(err) => (Err(err), fallback),
    };
    Attempt {
        result,
        outcomes,
        planned,
    }
}

/// What `plan` would make of `prepared`, unverified: every hook's outcome (see
/// [`crate::outcome`]; the two hooks of a conflict fail) and the planned text, `None` when the
/// edits conflict.
pub(crate) fn preview(recipe: &Recipe, prepared: &Prepared, plan: &Plan) -> (Vec<HookOutcome>, Option<String>) {
    let source = prepared.original().source();
    match apply_edits(source, &plan.edits()) {
        Err(err) => (outcome::failed(plan.outcomes(), &err), None),
        Ok((text, _)) => {
            // Only a hook with blocks now can be "already applied" or "updated": a file without
            // them needs no scan of the planned text.
            let frames = if prepared.is_patched() {
                marker::scan(&SourceFile::new(source.name(), text.as_str()), &recipe.id).unwrap_or_default()
            } else {
                Vec::new()
            };
            let anchors = if frames.is_empty() {
                Vec::new()
            } else {
                marker::strip_with_anchors(&text, &frames).1
            };
            let after = Blocks::new(&frames, &anchors);
            let outcomes = outcome::classify(recipe, plan.outcomes(), &prepared.blocks(), &after);
            (outcomes, Some(text))
        }
    }
}

/// Applies an already computed plan of `prepared`'s original text.
///
/// # Errors
/// As [`apply`].
pub fn apply_plan(recipe: &Recipe, prepared: &Prepared, plan: Plan) -> Result<Patched, Error> {
    if !plan.is_complete() {
        let failure = plan.hooks.into_iter().find_map(|(_, _, p)| match p {
            HookPlan::Failed(err) => Some(err),
            _ => None,
        });
        return Err(failure.expect("an incomplete plan has a failure"));
    }
    let original = prepared.original();
    check_orphans(recipe, prepared, &plan)?;
    let (output, map) = apply_edits(original.source(), &plan.edits())?;
    let out_file = SourceFile::new(original.source().name(), output);
    let (out_frames, out_anchors) = verify(recipe, original, &out_file, &map)?;
    let before = prepared.blocks();
    let after = Blocks::new(&out_frames, &out_anchors);
    let mut outcomes = outcome::classify(recipe, plan.outcomes(), &before, &after);
    for outcome in &mut outcomes {
        if matches!(
            outcome.status,
            Status::Applied | Status::AlreadyApplied | Status::Updated
        ) {
            outcome.lines = frame_lines(&out_file, &out_frames, &outcome.hook);
        }
    }
    // The edits are of the original text: the input's own when it holds no frames.
    let changes = (prepared.current().text() == original.source().text()).then(|| {
        map.spans
            .iter()
            .map(|(old, new, _)| (old.clone(), new.clone()))
            .collect()
    });
    Ok(Patched {
        name: prepared.current().name().to_string(),
        input: prepared.current().text().to_string(),
        output: out_file.text().to_string(),
        outcomes,
        changes,
    })
}

/// Refuses when the text without this recipe's frames already holds a change this recipe makes:
/// its marker line was deleted, so applying would make the change a second time (a return
/// wrapped twice) and revert would leave it behind. Found where the plan puts each change: a
/// return that is already the template around some value, a block next to its own code. Apply
/// and revert look at the same original text, so they agree: code that merely happens to be
/// what the recipe would add there is refused too (applying would duplicate it).
pub(crate) fn check_orphans(recipe: &Recipe, prepared: &Prepared, plan: &Plan) -> Result<(), Error> {
    let file = prepared.original();
    let text = file.source().text();
    let current = prepared.current();
    let foreign = marker::block_ranges(file.source());
    for (id, _, planned) in &plan.hooks {
        let (HookPlan::Edits(edits), Some(hook)) = (planned, recipe.hooks.iter().find(|h| &h.id == id)) else {
            continue;
        };
        let definitions = hook_definitions(recipe, file, hook);
        for edit in edits {
            let range = edit.range();
            // The parameters of the definition this edit lands in (a hook may target several).
            let params = definitions
                .iter()
                .filter(|def| def.range().contains(&range.start))
                .min_by_key(|def| def.range().len())
                .map(|def| parameter_names(file.node(def)))
                .unwrap_or_default();
            let found = match &hook.action {
                Action::WrapReturns { template, .. } if !range.is_empty() => {
                    let value = text[range.clone()].strip_prefix("return ");
                    value
                        .and_then(|value| template.unrender(&recipe.vars, &params, value))
                        .map(|_| range.start)
                }
                _ if range.is_empty() => edit.inserted().first().and_then(|inserted| {
                    let code = &edit.text()[inserted.clone()];
                    let at = if code.trim().is_empty() {
                        None
                    } else if text[..range.start].ends_with(code) {
                        Some(range.start - code.len())
                    } else {
                        text[range.start..].starts_with(code).then_some(range.start)
                    };
                    // The same code inside another recipe's block is that recipe's (stacked
                    // recipes may add the same lines): marked, not orphaned.
                    at.filter(|&at| !marker::covers(&foreign, &(at..at + code.len())))
                }),
                _ => None,
            };
            if let Some(at) = found {
                let at = marker::to_framed(&prepared.frames, at);
                let line = current.lines().line_of(at);
                return Err(Error::Marker {
                    location: current.location(at),
                    reason: format!(
                        "line {line} already holds what hook `{id}` adds here, without its marker (was a marker line deleted?): applying would add it twice and revert would leave it behind"
                    ),
                    hook: HookRef(Some(id.clone())),
                });
            }
        }
    }
    Ok(())
}

fn frame_lines(file: &SourceFile, frames: &[Frame], hook: &str) -> Option<(usize, usize)> {
    let spans = frames.iter().filter(|f| f.hook == hook).map(|f| f.lines(file));
    spans.reduce(|(first, last), (f, l)| (first.min(f), last.max(l)))
}

/// Removes this recipe's changes from `source`, giving back the original bytes.
///
/// # Errors
/// [`Error::Marker`] for damaged or hand-edited frames, [`Error::Syntax`] when the result does
/// not parse.
pub fn revert(recipe: &Recipe, source: SourceFile) -> Result<Patched, Error> {
    let prepared = Prepared::new(recipe, source)?;
    // A change of this recipe whose marker line is gone would stay behind: refuse, as apply does.
    check_orphans(recipe, &prepared, &plan(recipe, prepared.original()))?;
    let outcomes = outcome::reverted(recipe, &prepared.blocks());
    Ok(Patched {
        name: prepared.current.name().to_string(),
        input: prepared.current.text().to_string(),
        output: prepared.original.source().text().to_string(),
        outcomes,
        changes: None,
    })
}

/// Checks the output of an apply: it parses; CPython's compiler would accept it (or refuses the
/// original as well); inserted import-time code uses no module-level name before its binding;
/// bytes outside the edits are unchanged; its frames strip back to the original exactly;
/// without the inserted statements it has the original's syntax tree. Returns the output's frames and where each sits in the original.
fn verify(
    recipe: &Recipe,
    original: &ParsedFile,
    output: &SourceFile,
    map: &EditMap,
) -> Result<(Vec<Frame>, Vec<usize>), Error> {
    // The hook whose edit holds `offset`, else the one whose edit is nearest (a `yield` inserted
    // into a function makes its original `return value` an error there, outside the edit).
    let hook_at = |offset: usize| {
        map.spans
            .iter()
            .find(|(_, new, _)| new.start <= offset && offset <= new.end)
            .or_else(|| {
                map.spans
                    .iter()
                    .min_by_key(|(_, new, _)| new.start.abs_diff(offset).min(new.end.abs_diff(offset)))
            })
            .map(|(_, _, hook)| hook.clone())
    };
    let fail = |offset: usize, reason: String| Error::Verify {
        location: output.location(offset),
        reason,
        hook: HookRef(hook_at(offset)),
    };
    let (old, new) = (original.source().text(), output.text());
    // Only the top-level statements holding an edit are parsed again (see `parse::reparse`).
    let spans: Vec<(Range<usize>, Range<usize>)> = map.spans.iter().map(|(o, n, _)| (o.clone(), n.clone())).collect();
    let reparsed = crate::parse::reparse::reparse(original.root(), old, output, &spans).map_err(|err| {
        let offset = output.lines().line_start(err.location().line).unwrap_or(0);
        fail(offset, format!("the patched text does not parse: {err}"))
    })?;
    // What CPython's compiler (not only its parser) would refuse, unless the original has it too.
    let checked = crate::verify::check(&reparsed.root, new);
    if !checked.problems.is_empty() {
        let before = crate::verify::check(original.root(), old).problems;
        if let Some(problem) = crate::verify::new_problems(&before, &checked.problems).first() {
            return Err(fail(
                problem.offset,
                format!("CPython would refuse the patched file: {}", problem.message),
            ));
        }
    }
    let line_of = |offset: usize| output.lines().line_of(offset);
    if let Some(problem) = checked.early_name_use(&map.inserted, &line_of) {
        return Err(fail(problem.offset, problem.message));
    }
    let (mut at_old, mut at_new) = (0, 0);
    for (old_range, new_range, _) in &map.spans {
        if old.get(at_old..old_range.start) != new.get(at_new..new_range.start) {
            return Err(fail(at_new, "bytes outside the edited ranges changed".into()));
        }
        (at_old, at_new) = (old_range.end, new_range.end);
    }
    if old.get(at_old..) != new.get(at_new..) {
        return Err(fail(at_new, "bytes outside the edited ranges changed".into()));
    }
    let frames = marker::scan(output, &recipe.id)?;
    let (stripped, anchors) = marker::strip_with_anchors(new, &frames);
    if stripped != old {
        return Err(fail(
            0,
            "removing the markers does not give back the original text".into(),
        ));
    }
    let sorted = |ranges: &[Range<usize>]| {
        let mut ranges = ranges.to_vec();
        ranges.sort_by_key(|r| r.start);
        ranges
    };
    let rewritten: std::collections::HashSet<(usize, usize, usize, usize)> = map
        .rewritten
        .iter()
        .map(|(old, new)| (old.start, old.end, new.start, new.end))
        .collect();
    // Outside the parts parsed anew the statements are the original's (the bytes are, and so is
    // the tokenizer's state where the parts begin and end): only those parts are compared.
    let compare = Comparison {
        removed: sorted(&map.removed),
        inserted: sorted(&map.inserted),
        rewritten,
    };
    for (old_range, new_range) in &reparsed.regions {
        let before = kept_in(true, statements(original.root(), old_range), &compare.removed);
        let after = kept_in(true, statements(&reparsed.root, new_range), &compare.inserted);
        if !compare.all_equivalent(before, after) {
            return Err(fail(
                0,
                "without the inserted statements the syntax tree differs from the original".into(),
            ));
        }
    }
    Ok((frames, anchors))
}

/// The top-level statements of `root` that begin inside `range`.
fn statements<'n>(root: &'n Node, range: &Range<usize>) -> &'n [Node] {
    let body = root.module_body().map_or(&[][..], Node::children);
    let first = body.partition_point(|s| s.range().start < range.start);
    let end = body.partition_point(|s| s.range().start < range.end);
    &body[first..end.max(first)]
}

/// A copy of `node` without the statements lying inside `ranges` (disjoint, sorted by start).
fn strip_statements(node: &Node, ranges: &[Range<usize>]) -> Node {
    let children = kept(node, ranges)
        .map(|child| strip_statements(child, ranges))
        .collect();
    Node::new(node.kind(), node.range(), node.label().map(Into::into), children)
}

/// The children of `node` that stay once the statements lying inside `ranges` (disjoint,
/// sorted by start) are taken out.
fn kept<'n>(node: &'n Node, ranges: &'n [Range<usize>]) -> impl Iterator<Item = &'n Node> {
    kept_in(node.kind() == LIST, node.children(), ranges)
}

/// [`kept`] for the `children` of a list (`list`) or of another node.
fn kept_in<'n>(list: bool, children: &'n [Node], ranges: &'n [Range<usize>]) -> impl Iterator<Item = &'n Node> {
    let inside = |n: &Node| {
        let r = n.range();
        let before = ranges.partition_point(|x| x.start <= r.start);
        before > 0 && r.end <= ranges[before - 1].end
    };
    let list = list && !ranges.is_empty();
    children
        .iter()
        .filter(move |child| !(list && inside(child) && is_statement(child)))
}

fn is_statement(node: &Node) -> bool {
    !matches!(node.kind(), LIST | ABSENT) && node.kind().chars().next().is_some_and(char::is_uppercase)
}

/// The original's tree without the removed statements against the output's without the
/// inserted ones, compared in place (neither tree is copied).
struct Comparison {
    removed: Vec<Range<usize>>,
    inserted: Vec<Range<usize>>,
    rewritten: std::collections::HashSet<(usize, usize, usize, usize)>,
}

impl Comparison {
    /// Same shape, where a rewritten statement counts as equal when it keeps the original's
    /// kind and contains the original's value.
    fn equivalent(&self, before: &Node, after: &Node) -> bool {
        let (old, new) = (before.range(), after.range());
        if is_statement(before) && self.rewritten.contains(&(old.start, old.end, new.start, new.end)) {
            let after = strip_statements(after, &self.inserted);
            let value = kept(before, &self.removed).next();
            // A bare `return` has no value to find again.
            let mut contains = value.is_none_or(|v| v.kind() == ABSENT);
            if let Some(value) = value {
                let value = strip_statements(value, &self.removed);
                after.walk(&mut |n| {
                    contains |= n.same_shape(&value);
                    !contains
                });
            }
            return before.kind() == after.kind() && contains;
        }
        if before.kind() != after.kind() || before.label() != after.label() {
            return false;
        }
        self.all_equivalent(kept(before, &self.removed), kept(after, &self.inserted))
    }

    /// Whether both sequences have the same length and are equivalent pairwise.
    fn all_equivalent<'n>(&self, mut a: impl Iterator<Item = &'n Node>, mut b: impl Iterator<Item = &'n Node>) -> bool {
        loop {
            match (a.next(), b.next()) {
                (None, None) => return true,
                (Some(x), Some(y)) if self.equivalent(x, y) => {}
                _ => return false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapped_values_are_parenthesized_only_when_needed() {
        let spec = "[recipe]\nid = \"r\"\nsummary = \"s\"\n[[hook]]\nid = \"w\"\nsummary = \"w\"\nin = \"f\"\nwrap-returns = \"g({value})\"\n";
        let recipe = Recipe::from_toml("r.toml", spec).unwrap();
        let cases = [
            ("return (a, b), c", "return g(((a, b), c))"),
            ("return (a, b)", "return g((a, b))"),
            ("return a, b", "return g((a, b))"),
            ("return (x for x in y)", "return g((x for x in y))"),
            ("return a if c else b", "return g((a if c else b))"),
            ("return", "return g(None)"),
            ("return f(x)", "return g(f(x))"),
        ];
        for (before, after) in cases {
            let text = format!("def f():\n    {before}\n");
            let patched = apply(&recipe, SourceFile::new("t.py", text)).unwrap();
            assert!(
                patched.output().contains(&format!("\n    {after}\n")),
                "{before}: {}",
                patched.output()
            );
        }
    }

    /// The recursive passes over the tree (outline, patterns, verification) fit a 2 MiB thread
    /// stack in a debug build for the deepest tree the parser accepts.
    #[test]
    fn deepest_accepted_tree_fits_a_small_stack() {
        let spec = r#"
[recipe]
id = "deep"
summary = "s"
[[hook]]
id = "wrap"
summary = "w"
in = "f"
wrap-returns = "g({value})"
when = "return $X + 1"
[[hook]]
id = "after"
summary = "a"
in = "f"
at = { after = "y = $$$" }
code = "z = y + 1"
"#;
        let depth = crate::parse::MAX_DEPTH - 10;
        let text = format!(
            "def f():\n    y = 1{}\n    return y{}\n",
            " + 1".repeat(depth),
            " + 1".repeat(depth)
        );
        let recipe = Recipe::from_toml("deep.toml", spec).unwrap();
        let worker = std::thread::Builder::new().stack_size(2 << 20).spawn(move || {
            let patched = apply(&recipe, SourceFile::new("deep.py", text.clone())).unwrap();
            let back = revert(&recipe, SourceFile::new("deep.py", patched.output())).unwrap();
            assert_eq!(back.output(), text);
        });
        worker.unwrap().join().expect("no stack overflow");
    }
}
