//! What a hook's patterns captured where its code goes (`{$NAME}` in templates, see
//! [`crate::template`]): the placement's own match first, then the first match of `when`.

use crate::error::PlacementReason;
use crate::outline::{Definition, ParsedFile};
use crate::pattern::{Depth, Pattern};
use crate::spec::{Anchor, Hook};
use crate::syntax::Node;
use crate::template::{Captures, Template};

/// What `when` captured at its first match in `def` (the module when `None`): what `{$NAME}`
/// is where the placement's own pattern does not bind `$NAME`.
pub(crate) fn of_when(hook: &Hook, file: &ParsedFile, def: Option<&Definition>) -> Captures {
    let body = def.map_or(Some(file.module_block()), |def| file.node(def).field("body"));
    let (Some(when), Some(body)) = (&hook.when, body) else {
        return Captures::new();
    };
    when.find_in(body, Depth::Nested)
        .first()
        .and_then(|first| when.captures(first, file.source().text()))
        .unwrap_or_default()
}

/// The captures `template` sees at one place: `stmt`, matched there by the placement's
/// `pattern`, over `when` (what `when` captured). Empty when the template uses none.
pub(crate) fn at_match(
    template: &Template,
    when: &Captures,
    pattern: Option<&Pattern>,
    stmt: Option<&Node>,
    text: &str,
) -> Captures {
    if template.capture_names().is_empty() {
        return Captures::new();
    }
    let mut captures = when.clone();
    if let (Some(pattern), Some(stmt)) = (pattern, stmt) {
        captures.extend(pattern.captures(stmt, text).unwrap_or_default());
    }
    captures
}

/// The pattern of a pattern anchor (`before`, `after`).
pub(crate) fn anchor_pattern(at: &Anchor) -> Option<&Pattern> {
    match at {
        Anchor::Before(selector) | Anchor::After(selector) => Some(&selector.pattern),
        _ => None,
    }
}

/// Refuses `template` where a capture lands inside a string literal of the code that cannot hold
/// it as the hook says (see [`Template::refused_in_string`]).
pub(crate) fn check_strings(
    template: &Template,
    vars: &std::collections::BTreeMap<String, String>,
    bindings: &crate::template::Bindings<'_>,
) -> Result<(), PlacementReason> {
    match template.refused_in_string(vars, bindings) {
        Some(name) => Err(PlacementReason::CaptureInString { name }),
        None => Ok(()),
    }
}

/// Refuses `code` (`template` rendered with `captures`) when a capture brought a line that
/// looks like a marker comment: the template and the variables were checked when the recipe
/// was read, so such a line is a captured comment, which the next read would take for a marker.
pub(crate) fn check_markers(code: &str, template: &Template, captures: &Captures) -> Result<(), PlacementReason> {
    let used = template.capture_names();
    if used.is_empty() || !code.lines().any(crate::marker::looks_like_marker) {
        return Ok(());
    }
    let name = used
        .iter()
        .find(|name| {
            captures
                .get(**name)
                .is_some_and(|capture| capture.text.lines().any(|line| line.contains(" pysplice ")))
        })
        .or(used.first())
        .map_or(String::new(), |name| (*name).to_string());
    Err(PlacementReason::CapturedMarker { name })
}
