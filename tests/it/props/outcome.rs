//! Every path that says what became of a hook agrees: the engine's per-hook statuses (through
//! `attempt`), `check`'s up-to-date verdict, and `Document::plan`'s statuses and
//! `pending`, on generated Python files, recipes and edits.
//!
//! A case: a module of small functions; an older recipe applied to it; then a newer recipe
//! (hooks moved to another placement, code changed, hooks dropped so their blocks are stale,
//! `when` conditions that now skip, hooks added) and an edit of the text (none, a statement added
//! outside every block, a hand edit inside a block). After applying the newer recipe, all paths
//! say "already applied" (or skipped) and the file is up to date.

use proptest::prelude::*;
use pysplice::{apply, Document, Error, ErrorKind, HookOutcome, Recipe, SourceFile, Status};

// ---- generated modules ---------------------------------------------------------------------

/// The statements a function body is made of.
const STATEMENTS: &[&str] = &["a = 1", "b = a + 1", "print(a)", "if a:\n        a = 2", "return a"];

/// A module of functions `f0`, `f1`, ..., each `a = 1`, then statements of [`STATEMENTS`], most
/// ending in `return a` (so that most hooks find their anchor).
fn module_strategy() -> impl Strategy<Value = String> {
    (
        any::<bool>(),
        prop::collection::vec(
            (
                prop::collection::vec(0..STATEMENTS.len(), 0..4),
                prop::bool::weighted(0.75),
            ),
            3..5,
        ),
    )
        .prop_map(|(import, bodies)| {
            let mut text = String::new();
            if import {
                text.push_str("import sys\n\n");
            }
            for (i, (body, returns)) in bodies.iter().enumerate() {
                text.push_str(&format!("\ndef f{i}(x):\n    a = 1\n"));
                for &s in body {
                    text.push_str(&format!("    {}\n", STATEMENTS[s]));
                }
                if *returns {
                    text.push_str("    return a\n");
                }
            }
            text
        })
}

// ---- generated recipes ---------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq)]
enum Place {
    Start,
    End,
    AfterAssign,
    BeforeReturn,
    WrapReturns,
    Imports,
}

#[derive(Clone, Debug)]
struct HookSpec {
    target: usize,
    place: Place,
    code: u8,
    optional: bool,
    when_print: bool,
}

fn place_strategy() -> impl Strategy<Value = Place> {
    prop_oneof![
        Just(Place::Start),
        Just(Place::End),
        Just(Place::AfterAssign),
        Just(Place::BeforeReturn),
        Just(Place::WrapReturns),
        Just(Place::Imports),
    ]
}

fn hook_strategy() -> impl Strategy<Value = HookSpec> {
    (
        prop_oneof![6 => 0..3usize, 1 => Just(4)],
        place_strategy(),
        0..3u8,
        any::<bool>(),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(target, place, code, optional, when_print)| HookSpec {
            target,
            place,
            code,
            optional,
            when_print,
        })
}

/// How the newer recipe differs from the older one, per hook of the older one.
#[derive(Clone, Debug)]
enum Change {
    Same,
    Moved(Place),
    Recoded(u8),
    Dropped,
    NowSkips,
}

fn change_strategy() -> impl Strategy<Value = Change> {
    prop_oneof![
        3 => Just(Change::Same),
        1 => place_strategy().prop_map(Change::Moved),
        1 => (0..3u8).prop_map(Change::Recoded),
        1 => Just(Change::Dropped),
        1 => Just(Change::NowSkips),
    ]
}

/// The TOML of a recipe with `hooks` (each with its id).
fn recipe_toml(hooks: &[(usize, HookSpec)]) -> String {
    let mut toml = String::from("[recipe]\nid = \"p\"\nsummary = \"generated\"\n");
    for (id, hook) in hooks {
        toml.push_str(&format!("\n[[hook]]\nid = \"h{id}\"\nsummary = \"hook {id}\"\n"));
        let code = format!("log{id}_{}(x)", hook.code);
        match hook.place {
            Place::Imports => {
                let module = ["os", "json", "sys"][usize::from(hook.code) % 3];
                toml.push_str(&format!("ensure-imports = [\"{module}\"]\n"));
            }
            Place::WrapReturns => {
                toml.push_str(&format!(
                    "in = \"f{}\"\nwrap-returns = \"w{}({{value}})\"\n",
                    hook.target, hook.code
                ));
            }
            ref place => {
                let at = match place {
                    Place::Start => "\"start\"".to_string(),
                    Place::End => "\"end\"".to_string(),
                    Place::AfterAssign => "{ after = \"a = $$$\" }".to_string(),
                    _ => "{ before = \"return $$$\" }".to_string(),
                };
                toml.push_str(&format!("in = \"f{}\"\nat = {at}\ncode = \"{code}\"\n", hook.target));
            }
        }
        if hook.optional {
            toml.push_str("optional = true\n");
        }
        if hook.when_print && hook.place != Place::Imports {
            toml.push_str("when = \"print($$$)\"\n");
        }
    }
    toml
}

/// The newer recipe: `older` changed by `changes`, plus `added` hooks of new ids.
fn newer(older: &[(usize, HookSpec)], changes: &[Change], added: &[HookSpec]) -> Vec<(usize, HookSpec)> {
    let mut hooks = Vec::new();
    for ((id, hook), change) in older.iter().zip(changes.iter().chain(std::iter::repeat(&Change::Same))) {
        let mut hook = hook.clone();
        match change {
            Change::Same => {}
            Change::Moved(place) => hook.place = place.clone(),
            Change::Recoded(code) => hook.code = *code,
            Change::Dropped => continue,
            Change::NowSkips => {
                // `when` on a target without `print(...)` skips; make it optional so it is a skip.
                hook.when_print = true;
                hook.optional = true;
            }
        }
        hooks.push((*id, hook));
    }
    hooks.extend(added.iter().cloned().enumerate().map(|(i, h)| (older.len() + i, h)));
    hooks
}

#[derive(Clone, Debug)]
enum Edit {
    None,
    /// A statement appended to the module, outside every block.
    Outside,
    /// A character changed inside the first block.
    InsideBlock,
}

fn edit_strategy() -> impl Strategy<Value = Edit> {
    prop_oneof![3 => Just(Edit::None), 1 => Just(Edit::Outside), 1 => Just(Edit::InsideBlock)]
}

/// `text` with `edit` made; `None` when the edit has nothing to work on.
fn edited(text: &str, edit: &Edit) -> Option<String> {
    match edit {
        Edit::None => Some(text.to_string()),
        Edit::Outside => Some(format!("{text}\nz = 0\n")),
        Edit::InsideBlock => {
            let open = text.find("# >>> pysplice p/")?;
            let body = open + text[open..].find('\n')? + 1;
            let at = body + text[body..].find("log")?;
            // Inside the first block only.
            let close = text[open..].find("# <<< pysplice p/").map(|c| open + c)?;
            (at < close).then(|| format!("{}LOG{}", &text[..at], &text[at + 3..]))
        }
    }
}

// ---- the property ---------------------------------------------------------------------------

/// What every path says about `recipe` on `text`.
fn agree(recipe: &Recipe, text: &str) -> Result<Option<String>, TestCaseError> {
    let attempt = pysplice::attempt(recipe, SourceFile::new("m.py", text));
    let document = Document::new("m.py", text).plan(recipe);
    let plan = match (&attempt.result, document) {
        (_, Err(err)) => {
            // The document refuses what apply refuses: the file cannot be prepared.
            prop_assert!(attempt.result.is_err(), "document refused ({err}) but apply succeeded");
            return Ok(None);
        }
        (Err(err), Ok(_)) if matches!(err.kind(), ErrorKind::Verify { .. }) => return Ok(None),
        (_, Ok(plan)) => plan,
    };
    let outcomes: &[HookOutcome] = &attempt.outcomes;
    prop_assert!(outcomes.len() >= recipe.hooks.len());
    for (hook, outcome) in plan.hooks.iter().zip(outcomes) {
        prop_assert_eq!(&hook.id, &outcome.hook);
        // A failure carries the typed error that caused it, naming its hook.
        if let Status::Failed { reason } = &outcome.status {
            let names = |err: &Error| match err.kind() {
                ErrorKind::Conflict { first, second, .. } => *first == hook.id || *second == hook.id,
                _ => err.hook() == Some(hook.id.as_str()),
            };
            prop_assert!(reason.cause().is_some_and(names), "{}", reason);
        }
        prop_assert_eq!(&hook.status, &outcome.status, "hook {}: {}", hook.id, hook.message);
    }
    match &attempt.result {
        Ok(patched) => {
            prop_assert!(plan.is_complete());
            // `check`'s verdict and the document's `pending` are the same answer.
            prop_assert_eq!(plan.pending, !patched.is_up_to_date());
            // A pending hook changes the text: no "needs apply" that apply leaves alone.
            let pending = patched.outcomes().iter().any(|o| o.status.is_pending());
            if pending {
                prop_assert!(patched.changed(), "pending without a change: {:?}", patched.outcomes());
            }
            // And the text changes only for a pending hook, or to take out the blocks of a hook
            // that is skipped now: never under "already applied" alone.
            if patched.changed() && !pending {
                let skipped_with_blocks = patched.outcomes().iter().any(|o| {
                    matches!(o.status, Status::Skipped { .. }) && text.contains(&format!("pysplice p/{} ", o.hook))
                });
                prop_assert!(
                    skipped_with_blocks,
                    "changed, yet nothing pending: {:?}",
                    patched.outcomes()
                );
            }
            Ok(Some(patched.output().to_string()))
        }
        Err(_) => {
            prop_assert!(!plan.pending);
            let failed = outcomes.iter().any(|o| matches!(o.status, Status::Failed { .. }));
            prop_assert!(failed, "apply failed with no hook failed: {:?}", outcomes);
            Ok(None)
        }
    }
}

/// After an apply, every path says there is nothing left to do.
fn settled(recipe: &Recipe, text: &str) -> Result<(), TestCaseError> {
    let again = apply(recipe, SourceFile::new("m.py", text)).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert!(again.is_up_to_date(), "{:?}", again.outcomes());
    let plan = Document::new("m.py", text)
        .plan(recipe)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert!(!plan.pending);
    for (hook, outcome) in plan.hooks.iter().zip(again.outcomes()) {
        prop_assert!(
            matches!(hook.status, Status::AlreadyApplied | Status::Skipped { .. }),
            "{}: {:?}",
            hook.id,
            hook.status
        );
        prop_assert_eq!(&hook.status, &outcome.status);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn all_paths_agree_on_hook_outcomes(
        module in module_strategy(),
        older in prop::collection::vec(hook_strategy(), 1..4),
        changes in prop::collection::vec(change_strategy(), 0..4),
        added in prop::collection::vec(hook_strategy(), 0..2),
        edit in edit_strategy(),
    ) {
        let older: Vec<(usize, HookSpec)> = older.into_iter().enumerate().collect();
        let old_recipe = Recipe::from_toml("old.toml", &recipe_toml(&older)).expect("valid recipe");
        let new_hooks = newer(&older, &changes, &added);
        prop_assume!(!new_hooks.is_empty());
        let new_recipe = Recipe::from_toml("new.toml", &recipe_toml(&new_hooks)).expect("valid recipe");

        // The fresh file, then the older recipe applied to it.
        let applied = agree(&old_recipe, &module)?;
        if let Some(output) = &applied {
            settled(&old_recipe, output)?;
        }
        let base = applied.unwrap_or(module);
        let Some(text) = edited(&base, &edit) else { return Ok(()) };
        if let Some(output) = agree(&new_recipe, &text)? {
            settled(&new_recipe, &output)?;
        }
    }
}

/// The case that started it: a hook moved from the start to the end of its function.
#[test]
fn a_hook_moved_to_the_end_is_updated() {
    let hook = |place| HookSpec {
        target: 0,
        place,
        code: 0,
        optional: false,
        when_print: false,
    };
    let old = Recipe::from_toml("o.toml", &recipe_toml(&[(0, hook(Place::Start))])).unwrap();
    let new = Recipe::from_toml("n.toml", &recipe_toml(&[(0, hook(Place::End))])).unwrap();
    let module = "def f0(x):\n    a = 1\n    b = a + 1\n";
    let applied = apply(&old, SourceFile::new("m.py", module)).unwrap();
    let attempt = pysplice::attempt(&new, SourceFile::new("m.py", applied.output()));
    assert_eq!(attempt.outcomes[0].status, Status::Updated);
    let plan = Document::new("m.py", applied.output()).plan(&new).unwrap();
    assert_eq!(plan.hooks[0].status, Status::Updated);
    assert!(plan.pending);
}
