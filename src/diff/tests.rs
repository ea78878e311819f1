use std::ops::Range;

use proptest::prelude::*;

use super::unified;
use super::unified_diff;

/// Edits as (range in the old text, range in the new).
type Changes = Vec<(Range<usize>, Range<usize>)>;

/// `old` with `edits` (byte offset, bytes removed, text inserted; sorted, disjoint) made, and
/// the edits as (range in old, range in new).
fn apply(old: &str, edits: &[(usize, usize, String)]) -> (String, Changes) {
    let (mut new, mut changes, mut at) = (String::new(), Vec::new(), 0);
    for (start, removed, inserted) in edits {
        new.push_str(&old[at..*start]);
        let from = new.len();
        new.push_str(inserted);
        changes.push((*start..start + removed, from..new.len()));
        at = start + removed;
    }
    new.push_str(&old[at..]);
    (new, changes)
}

/// Lines drawn from a few values, so that edits often make text equal to their neighbours'
/// (where a diff may place a change in more than one way); now and then a `\r` or no final
/// line break.
fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec!["a", "b", "c", "x = 1", "", "def f():", "    pass"]),
        0..40,
    )
    .prop_flat_map(|lines| {
        (
            Just(lines),
            prop::sample::select(vec!["\n", "\n", "\n", "\r\n", "\r"]),
            any::<bool>(),
        )
    })
    .prop_map(|(lines, brk, last)| {
        let mut text = lines.join(brk);
        if last && !text.is_empty() {
            text.push_str(brk);
        }
        text
    })
}

fn edits(len: usize) -> impl Strategy<Value = Vec<(usize, usize, String)>> {
    let piece = prop::sample::select(vec!["a\n", "b\n", "\n", "x = 2\n", "c", "\r", "\r\n", "a\nb\n", "z"]);
    prop::collection::vec((0..=len, 0..6usize, prop::collection::vec(piece, 0..3)), 0..5).prop_map(move |raw| {
        let mut edits: Vec<(usize, usize, String)> = Vec::new();
        let mut raw: Vec<_> = raw.into_iter().map(|(at, n, ins)| (at, n, ins.concat())).collect();
        raw.sort_by_key(|(at, _, _)| *at);
        let mut end = 0;
        for (at, removed, inserted) in raw {
            if at < end || (removed == 0 && inserted.is_empty()) {
                continue;
            }
            let removed = removed.min(len - at);
            edits.push((at, removed, inserted));
            end = at + removed + 1;
        }
        edits
    })
}

/// `old` with the unified `diff` applied: each hunk's context and removed lines must be
/// there, at the line the hunk names.
fn patch(old: &str, diff: &str) -> Option<String> {
    let old_lines = super::Lines::new(old).lines;
    let mut out = String::new();
    let mut next = 0;
    let diff_lines = super::Lines::new(diff).lines;
    let mut lines = diff_lines.iter().copied().skip(2).peekable();
    while let Some(header) = lines.next() {
        let range = header.strip_prefix("@@ -")?.split(' ').next()?;
        let start: usize = range.split(',').next()?.parse().ok()?;
        let empty = range.ends_with(",0");
        let at = if empty { start } else { start - 1 };
        out.extend(old_lines.get(next..at)?.iter().copied());
        next = at;
        while lines.peek().is_some_and(|l| !l.starts_with("@@")) {
            let line = lines.next()?;
            // Lines are joined again from the diff's own text, line break and all.
            let mut text = line[1..].to_string();
            if lines.peek().is_some_and(|l| l.starts_with("\\ No newline")) {
                lines.next();
                text.pop();
            }
            match &line[..1] {
                "+" => out.push_str(&text),
                " " | "-" => {
                    if *old_lines.get(next)? != text {
                        return None;
                    }
                    next += 1;
                    if line.starts_with(' ') {
                        out.push_str(&text);
                    }
                }
                _ => return None,
            }
        }
    }
    out.extend(old_lines.get(next..)?.iter().copied());
    Some(out)
}

fn old_and_edits() -> impl Strategy<Value = (String, Vec<(usize, usize, String)>)> {
    text().prop_flat_map(|old| {
        let len = old.len();
        (Just(old), edits(len))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// The diff made from the edits, applied to the old text, gives the new one; its hunks
    /// start and end where the whole texts' diff puts them when no line repeats (then only one
    /// alignment of the lines is shortest). Where lines repeat, a change may be shown at
    /// another of its equally short places.
    #[test]
    fn the_diff_of_the_edits_is_a_diff_of_the_texts((old, edits) in old_and_edits()) {
        let (new, changes) = apply(&old, &edits);
        let from_edits = unified("m.py", &old, &new, &changes).expect("the edits make the new text");
        let whole = unified_diff("m.py", &old, &new);
        prop_assert_eq!(patch(&old, &from_edits), Some(new.clone()), "{}", from_edits);
        prop_assert_eq!(patch(&old, &whole), Some(new.clone()), "{}", whole);
        let distinct = |text: &str| {
            let lines = super::Lines::new(text).lines;
            let mut trimmed: Vec<&str> = lines.iter().map(|l| l.trim_end_matches(['\r', '\n'])).collect();
            trimmed.sort_unstable();
            trimmed.windows(2).all(|w| w[0] != w[1])
        };
        if distinct(&old) && distinct(&new) {
            prop_assert_eq!(from_edits, whole);
        }
    }

    /// Files of distinct lines (as source files mostly are) with edits that insert, remove or
    /// rewrite lines: the diff is byte for byte the whole texts' diff.
    #[test]
    fn with_distinct_lines_the_diff_is_the_whole_texts_diff(
        (n, edits) in (1..300usize).prop_flat_map(|n| (Just(n), prop::collection::vec((0..n, 0..4usize, 0..4usize), 0..6)))
    ) {
        let old: String = (0..n).map(|i| format!("line {i}\n")).collect();
        let starts: Vec<usize> = (0..n).map(|i| old.find(&format!("line {i}\n")).unwrap()).collect();
        let mut chosen: Vec<(usize, usize, String)> = Vec::new();
        let mut end = 0;
        let mut sorted = edits.clone();
        sorted.sort_unstable();
        for (k, (line, removed, inserted)) in sorted.into_iter().enumerate() {
            let at = starts[line];
            if at < end {
                continue;
            }
            let removed_to = starts.get(line + removed).copied().unwrap_or(old.len());
            let text: String = (0..inserted).map(|j| format!("new {k}.{j}\n")).collect();
            chosen.push((at, removed_to - at, text));
            end = removed_to + 1;
        }
        let (new, changes) = apply(&old, &chosen);
        prop_assert_eq!(unified("m.py", &old, &new, &changes), Some(unified_diff("m.py", &old, &new)));
    }
}

#[test]
fn edits_that_do_not_make_the_new_text_are_refused() {
    assert_eq!(unified("m.py", "a\nb\n", "a\nc\n", &[(0..1, 0..1)]), None);
    assert_eq!(unified("m.py", "a\nb\n", "a\nb\nc\n", &[]), None);
}

#[test]
fn a_long_file_is_diffed_around_its_edits_only() {
    let old: String = (0..500).map(|i| format!("line {i}\n")).collect();
    let (new, changes) = apply(
        &old,
        &[
            (old.find("line 10\n").unwrap(), 0, "new a\n".into()),
            (old.find("line 250\n").unwrap(), 9, "line 250 changed\n".into()),
            (old.len(), 0, "tail".into()),
        ],
    );
    let diff = unified("m.py", &old, &new, &changes).unwrap();
    assert_eq!(diff, unified_diff("m.py", &old, &new));
    assert!(
        diff.contains("@@ -8,6 +8,7 @@\n line 7\n line 8\n line 9\n+new a\n line 10\n"),
        "{diff}"
    );
    assert!(
        diff.ends_with(" line 499\n+tail\n\\ No newline at end of file\n"),
        "{diff}"
    );
}
