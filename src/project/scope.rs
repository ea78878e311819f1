//! The cheap text prefilter of a [`Scope`]: which files a query parses.

use std::collections::HashSet;

use rayon::prelude::*;

use super::facts::{Binding, ModuleFacts};
use super::{Conventions, Project, Scope};

impl Project {
    /// The files a [`Scope`] selects, parsed (in parallel). For [`Scope::Related`] this runs the
    /// identifier closure; the returned names are the classes (and re-bound names) it found.
    #[must_use]
    pub fn select(&self, scope: &Scope) -> (Vec<usize>, Option<HashSet<String>>) {
        match scope {
            Scope::All => {
                let all: Vec<usize> = (0..self.files.len()).collect();
                self.load(&all);
                (all, None)
            }
            Scope::Classes => {
                let selected: Vec<usize> = (0..self.files.len())
                    .into_par_iter()
                    .filter(|&i| has_class_statement(self.files[i].text(), self.conventions.entry_list.as_deref()))
                    .collect();
                self.load(&selected);
                (selected, None)
            }
            Scope::Related(names) => {
                let (files, names) = self.related(names);
                (files, Some(names))
            }
            Scope::Defining(names) => {
                let selected: Vec<usize> = (0..self.files.len())
                    .into_par_iter()
                    .filter(|&i| class_statement_names(self.files[i].text()).any(|c| names.contains(&c)))
                    .collect();
                self.load(&selected);
                (selected, None)
            }
        }
    }

    /// The identifier closure of [`Scope::Related`].
    fn related(&self, seeds: &[String]) -> (Vec<usize>, HashSet<String>) {
        let mut names: HashSet<String> = seeds.iter().cloned().collect();
        let mut pending: Vec<String> = seeds.to_vec();
        let mut parsed: Vec<usize> = Vec::new();
        let mut is_parsed = vec![false; self.files.len()];
        while !pending.is_empty() {
            let found: Vec<usize> = (0..self.files.len())
                .into_par_iter()
                .filter(|&i| !is_parsed[i] && pending.iter().any(|n| contains_word(self.files[i].text(), n)))
                .collect();
            self.load(&found);
            for &i in &found {
                is_parsed[i] = true;
            }
            parsed.extend(found);
            pending.clear();
            // Grow the name set from every parsed file until nothing new turns up there.
            loop {
                let mut added = Vec::new();
                for &i in &parsed {
                    let Ok(facts) = self.facts(i) else { continue };
                    for name in referring_names(facts, &names, &self.conventions) {
                        if !names.contains(&name) && !added.contains(&name) {
                            added.push(name);
                        }
                    }
                }
                if added.is_empty() {
                    break;
                }
                names.extend(added.iter().cloned());
                pending.extend(added);
            }
        }
        parsed.sort_unstable();
        (parsed, names)
    }
}

/// Names the closure must follow from one parsed module: classes referring (by a base or a
/// composition) to a known name, and names re-bound to a known name (`from m import X as Y`,
/// `Y = X`).
fn referring_names(facts: &ModuleFacts, names: &HashSet<String>, conventions: &Conventions) -> Vec<String> {
    let last = |d: &str| d.rsplit('.').next().unwrap_or(d).to_string();
    let mut out = Vec::new();
    for class in &facts.classes {
        let refers = class.bases.iter().any(|b| names.contains(&last(&b.text)))
            || class
                .compositions
                .iter()
                .any(|c| c.names.iter().any(|n| names.contains(n)));
        if refers {
            out.push(class.simple_name().to_string());
        }
    }
    for b in &facts.bindings {
        let target = match &b.binding {
            Binding::From { name, .. } => Some(name.clone()),
            Binding::Alias(d) => Some(last(d)),
            _ => None,
        };
        // The entry list (`EntryClass = X`) lists entry points; nothing subclasses or constructs it.
        if !conventions.is_entry_list(&b.name) && target.is_some_and(|t| names.contains(&t)) {
            out.push(b.name.clone());
        }
    }
    out
}

/// Whether `name` occurs in `text` as a whole identifier.
pub(crate) fn contains_word(text: &str, name: &str) -> bool {
    if name.is_empty() || !text.contains(name) {
        return false;
    }
    let bytes = text.as_bytes();
    let is_ident = |b: u8| b == b'_' || b.is_ascii_alphanumeric() || b >= 0x80;
    text.match_indices(name).any(|(i, _)| {
        let before = i.checked_sub(1).map(|j| bytes[j]);
        let after = bytes.get(i + name.len()).copied();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// Whether some line starts (after indentation) with `class `, or the text mentions the entry
/// list variable.
fn has_class_statement(text: &str, entry_list: Option<&str>) -> bool {
    entry_list.is_some_and(|name| text.contains(name)) || class_statement_names(text).next().is_some()
}

/// The names of `class X` lines (indentation allowed), by text alone.
pub(super) fn class_statement_names(text: &str) -> impl Iterator<Item = String> + '_ {
    text.match_indices("class ").filter_map(move |(i, _)| {
        let line_start = text[..i].rfind(['\n', '\r']).map_or(0, |j| j + 1);
        if !text[line_start..i].bytes().all(|b| b == b' ' || b == b'\t') {
            return None;
        }
        let rest = &text[i + 6..];
        let rest = rest.trim_start_matches([' ', '\t']);
        let end = rest
            .find(|c: char| !(c == '_' || c.is_alphanumeric()))
            .unwrap_or(rest.len());
        (end > 0).then(|| rest[..end].to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_match_whole_identifiers_only() {
        assert!(contains_word("x = Foo()", "Foo"));
        assert!(!contains_word("x = FooBar()", "Foo"));
        assert!(!contains_word("x = _Foo()", "Foo"));
        assert!(contains_word("FooBar, Foo", "Foo"));
    }

    #[test]
    fn class_lines_are_found_by_text() {
        let names: Vec<String> = class_statement_names("class A:\n  class B(x):\n# class C\ns = 'class D'\n").collect();
        assert_eq!(names, ["A", "B"]);
        assert!(has_class_statement("EntryClass = X\n", Some("EntryClass")));
        assert!(!has_class_statement("EntryClass = X\n", None));
        assert!(!has_class_statement("def classify(): pass\n", Some("EntryClass")));
    }
}
