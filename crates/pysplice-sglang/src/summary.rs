//! Hook summaries that name the class and method a hook was placed in, read from the file
//! itself: the recipes' summaries are written once for every file (`... in DeepseekV2Model.__init__`,
//! `... in the model's __init__`), but a hook may land in any architecture's classes.

use pysplice::{HookOutcome, ParsedFile, Patched, SourceFile};

/// The hooks whose place is a class's method (the others go at module level).
pub const CLASS_HOOKS: [&str; 3] = ["init", "dump", "capture"];

/// `patched`'s outcomes, each hook of [`CLASS_HOOKS`] summarised as its action followed by the
/// methods its frames sit in (`Added _hs_dump init in Qwen2MoeModel.__init__`), read from the
/// text that carries `recipe`'s frames (the output of an apply, the input of a revert); a hook
/// with no frame there keeps its action alone, since no place can be named.
#[must_use]
pub fn named(patched: &Patched, recipe: &str) -> Vec<HookOutcome> {
    let text = if pysplice::marker::carries(patched.output(), recipe) {
        patched.output()
    } else {
        patched.input()
    };
    let file = SourceFile::new(patched.name(), text);
    let frames = pysplice::marker::scan(&file, recipe).unwrap_or_default();
    let parsed = ParsedFile::parse(file).ok();
    patched
        .outcomes()
        .iter()
        .map(|outcome| {
            let mut outcome = outcome.clone();
            if !CLASS_HOOKS.contains(&outcome.hook.as_str()) {
                return outcome;
            }
            let action = outcome
                .summary
                .rsplit_once(" in ")
                .map_or(outcome.summary.as_str(), |(action, _)| action)
                .to_string();
            let mut places: Vec<&str> = Vec::new();
            for frame in frames.iter().filter(|f| f.hook == outcome.hook) {
                let place = parsed.as_ref().and_then(|p| innermost(p, frame.line));
                if let Some(place) = place.filter(|p| !places.contains(p)) {
                    places.push(place);
                }
            }
            outcome.summary = if places.is_empty() {
                action
            } else {
                format!("{action} in {}", places.join(", "))
            };
            outcome
        })
        .collect()
}

/// The qualified path of the innermost definition holding `line`.
fn innermost(parsed: &ParsedFile, line: usize) -> Option<&str> {
    parsed
        .definitions()
        .iter()
        .filter(|d| d.line() <= line && line <= d.end_line())
        .min_by_key(|d| d.end_line() - d.line())
        .map(pysplice::Definition::path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summaries(patched: &Patched, recipe: &str) -> Vec<String> {
        named(patched, recipe).into_iter().map(|o| o.summary).collect()
    }

    #[test]
    fn a_hook_is_named_by_the_method_it_sits_in_and_by_its_action_alone_when_absent() {
        let recipe = crate::recipes::builtin("sglang-hs-dump").unwrap().unwrap();
        let demo = include_str!("../data/demo_model.py");
        let applied = pysplice::apply(&recipe, SourceFile::new("m.py", demo)).unwrap();
        let lines = summaries(&applied, &recipe.id);
        assert!(
            lines.contains(&"Added _hs_dump init in DeepseekV2Model.__init__".to_string()),
            "{lines:?}"
        );
        // Another file's classes holding the same frames (as after `--arch`): named as they are.
        let other = applied.output().replace("class DeepseekV2Model(", "class OtherModel(");
        let reverted = pysplice::revert(&recipe, SourceFile::new("m.py", other.as_str())).unwrap();
        let lines = summaries(&reverted, &recipe.id);
        assert!(
            lines.contains(&"Added dump logic in OtherModel.forward".to_string()),
            "{lines:?}"
        );
        assert!(lines.iter().all(|l| !l.contains("DeepseekV2Model")), "{lines:?}");
        let untouched = pysplice::revert(&recipe, SourceFile::new("m.py", demo)).unwrap();
        let lines = summaries(&untouched, &recipe.id);
        assert!(lines.contains(&"Added dump logic".to_string()), "{lines:?}");
    }
}
