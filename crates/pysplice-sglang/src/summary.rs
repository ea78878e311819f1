//! Hook summaries that name the class and method a hook was placed in, read from the file
//! itself: the recipes' summaries are written once for every file (`... in DeepseekV2Model.__init__`,
//! `... in the model's __init__`), but a hook may land in any architecture's classes.

use pysplice::marker::{Frame, FrameKind};
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
    let parsed = parse_without_module_blocks(&file, &frames);
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

/// `file` parsed with the lines of its module-level blocks of other hooks left empty (the
/// dump's helpers are most of a patched file): no frame of [`CLASS_HOOKS`] lies inside them, and
/// every other definition keeps its lines, so the answer is the whole text's. The whole text is
/// parsed when that does not parse.
fn parse_without_module_blocks(file: &SourceFile, frames: &[Frame]) -> Option<ParsedFile> {
    let text = file.text();
    let mut empty: Vec<(usize, usize)> = frames
        .iter()
        .filter(|f| f.kind == FrameKind::Insert && !CLASS_HOOKS.contains(&f.hook.as_str()))
        .filter(|f| {
            let start = file.lines().line_start(f.line).unwrap_or(0);
            text.as_bytes().get(start).is_some_and(|b| !b.is_ascii_whitespace())
        })
        .map(|f| f.lines(file))
        .collect();
    // Lines counted at `\n` alone below: a text with other line breaks is parsed as it is.
    if empty.is_empty() || text.contains('\r') {
        return ParsedFile::parse(file.clone()).ok();
    }
    empty.sort_unstable();
    let mut kept = String::with_capacity(text.len());
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let number = index + 1;
        if empty.iter().any(|&(first, last)| first <= number && number <= last) {
            if line.ends_with('\n') {
                kept.push('\n');
            }
        } else {
            kept.push_str(line);
        }
    }
    ParsedFile::parse(SourceFile::new(file.name(), kept))
        .or_else(|_| ParsedFile::parse(file.clone()))
        .ok()
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
