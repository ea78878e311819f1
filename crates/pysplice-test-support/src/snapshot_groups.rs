//! Per-release results snapshotted once per distinct result: the line numbers (and file
//! lengths) of a result are taken out into a per-release table, `<family>@releases`, itself a
//! snapshot; each distinct line-free result is one snapshot, `<family>@<first release>`, named
//! after the oldest release giving it. A new pinned release adds a row to the table and, when its
//! result is new, one snapshot; it rewrites none. Used by the SGLang crate's `it` and `corpus` binaries.

use std::fmt::Write as _;

/// The snapshot folder of the SGLang crate, where these snapshots live.
pub const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../pysplice-sglang/snapshots");

/// Every family of per-release results snapshotted this way.
pub const FAMILIES: &[&str] = &[
    "chain_kimi_k25",
    "forwards_kimi_k25",
    "reach_forward",
    "reach_init",
    "sglang_hs_dump",
    "sglang_models",
];

/// What stands for a line number in a redacted result.
const MARK: char = '§';

/// Whether the digits at `text[start..end]` are a line number or a file length: after
/// `.py:`, `line `, `lines `, `old `, `new `; the end of a range `A-B` whose start is one;
/// or followed by ` lines` / ` -> ` (a file's length, before and after) unless a `+` (a size)
/// comes before.
fn is_line_number(text: &str, start: usize, end: usize, previous_redacted_end: Option<usize>) -> bool {
    let before = &text[..start];
    let after = &text[end..];
    if [".py:", "line ", "lines ", "old ", "new "]
        .iter()
        .any(|p| before.ends_with(p))
    {
        return true;
    }
    if before.ends_with('-') && previous_redacted_end == Some(start - 1) {
        return true;
    }
    !before.ends_with('+') && (after.starts_with(" lines") || after.starts_with(" -> "))
}

/// `text` with its line numbers replaced by `§`, and the numbers, in order.
pub fn redact(text: &str) -> (String, Vec<String>) {
    let bytes = text.as_bytes();
    let (mut out, mut numbers) = (String::with_capacity(text.len()), Vec::new());
    let (mut i, mut copied, mut last) = (0, 0, None);
    while i < bytes.len() {
        let word_start = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        if bytes[i].is_ascii_digit() && word_start {
            let mut end = i;
            while end < bytes.len() && bytes[end].is_ascii_digit() {
                end += 1;
            }
            let whole = end == bytes.len() || !(bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_');
            if whole && is_line_number(text, i, end, last) {
                out.push_str(&text[copied..i]);
                out.push(MARK);
                numbers.push(text[i..end].to_string());
                copied = end;
                last = Some(end);
            }
            i = end;
        } else {
            i += 1;
        }
    }
    out.push_str(&text[copied..]);
    (out, numbers)
}

/// The result back from its redacted form and its numbers (the check that the table and the
/// distinct results together hold every release's result exactly).
fn restore(redacted: &str, numbers: &[String]) -> String {
    let mut out = String::with_capacity(redacted.len() + numbers.len() * 4);
    let mut numbers = numbers.iter();
    for c in redacted.chars() {
        if c == MARK {
            out.push_str(numbers.next().map_or("?", String::as_str));
        } else {
            out.push(c);
        }
    }
    out
}

fn snapshot(name: &str, value: &str) {
    insta::with_settings!({snapshot_path => DIR, prepend_module_to_snapshot => false, omit_expression => true}, {
        insta::assert_snapshot!(name, value);
    });
}

/// Snapshots `family`'s per-release results (release, result; oldest release first, each result
/// naming its release as `SGLang <release>` where it names it): one snapshot per distinct
/// result once line numbers are out, and the table of releases with their numbers.
pub fn assert_distinct(family: &str, results: &[(String, String)]) {
    assert!(FAMILIES.contains(&family), "{family} is not listed in FAMILIES");
    let mut groups: Vec<(String, String)> = Vec::new(); // (name, redacted)
    let mut table = String::from("release  result  line numbers (in the order of the `§` in the result)\n");
    for (version, text) in results {
        let text = text.replace(&format!("SGLang {version}"), "SGLang <release>");
        assert!(
            !text.contains(MARK),
            "{family}@{version}: the result holds a `{MARK}` itself"
        );
        let (redacted, numbers) = redact(&text);
        assert_eq!(
            restore(&redacted, &numbers),
            text,
            "{family}@{version}: redaction is not exact"
        );
        let name = match groups.iter().find(|(_, r)| *r == redacted) {
            Some((name, _)) => name.clone(),
            None => {
                let name = format!("{family}@{version}");
                groups.push((name.clone(), redacted));
                name
            }
        };
        let _ = writeln!(table, "{version}  {name}  {}", numbers.join(" "));
    }
    for (name, redacted) in &groups {
        snapshot(name, redacted);
    }
    snapshot(&format!("{family}@releases"), &table);
}

/// The snapshot names a family's table (the file's text) names, the table's own included.
pub fn names_in_table(family: &str, table: &str) -> Vec<String> {
    let mut out = vec![format!("{family}@releases")];
    for line in table.lines() {
        if let Some(name) = line.split("  ").nth(1).filter(|n| n.starts_with(&format!("{family}@"))) {
            if !out.iter().any(|n| n == name) {
                out.push(name.to_string());
            }
        }
    }
    out
}
