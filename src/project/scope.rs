//! The cheap text prefilter of a [`Scope`]: which files a query parses.

use std::collections::{HashMap, HashSet};

use rayon::prelude::*;

use super::facts::{Binding, ModuleFacts};
use super::{Conventions, Project, Scope};
use words::Words;

mod words;

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

    /// The identifier closure of [`Scope::Related`]: a worklist over "name X refers to name
    /// Y" edges, each file's edges read once when it is parsed, so a chain of N classes costs
    /// N steps (a pass over every parsed class per new name cost N²). Each round searches the
    /// files not parsed yet for all its pending names at once ([`Words`]).
    fn related(&self, seeds: &[String]) -> (Vec<usize>, HashSet<String>) {
        let mut names: HashSet<String> = seeds.iter().cloned().collect();
        let mut pending: Vec<String> = seeds.to_vec();
        let mut parsed: Vec<usize> = Vec::new();
        let mut is_parsed = vec![false; self.files.len()];
        // Names that refer to a name not (yet) in the set, by that name.
        let mut waiting: HashMap<String, Vec<String>> = HashMap::new();
        while !pending.is_empty() {
            // Once every file is parsed there is nothing left to search (a single-file chain).
            let found: Vec<usize> = if is_parsed.iter().all(|&p| p) {
                Vec::new()
            } else {
                let words = Words::new(&pending);
                (0..self.files.len())
                    .into_par_iter()
                    .filter(|&i| !is_parsed[i] && words.in_text(self.files[i].text()))
                    .collect()
            };
            self.load(&found);
            let mut frontier = Vec::new();
            for &i in &found {
                is_parsed[i] = true;
                let Ok(facts) = self.facts(i) else { continue };
                for (target, name) in references(facts, &self.conventions) {
                    if names.contains(target) {
                        if names.insert(name.to_string()) {
                            frontier.push(name.to_string());
                        }
                    } else {
                        waiting.entry(target.to_string()).or_default().push(name.to_string());
                    }
                }
            }
            parsed.extend(found);
            pending.clear();
            while let Some(name) = frontier.pop() {
                for next in waiting.remove(&name).unwrap_or_default() {
                    if names.insert(next.clone()) {
                        frontier.push(next);
                    }
                }
                pending.push(name);
            }
        }
        parsed.sort_unstable();
        (parsed, names)
    }
}

/// The references the closure follows in one parsed module, as (name referred to, name
/// referring): classes referring by a base or a composition to a name, and names re-bound to
/// a name (`from m import X as Y`, `Y = X`).
fn references<'f>(facts: &'f ModuleFacts, conventions: &Conventions) -> Vec<(&'f str, &'f str)> {
    let last = |d: &'f str| d.rsplit('.').next().unwrap_or(d);
    let mut out = Vec::new();
    for class in &facts.classes {
        let name = class.simple_name();
        for b in &class.bases {
            out.push((last(&b.text), name));
        }
        for c in &class.compositions {
            out.extend(c.names.iter().map(|n| (n.as_str(), name)));
        }
    }
    for b in &facts.bindings {
        let target = match &b.binding {
            Binding::From { name, .. } => Some(name.as_str()),
            Binding::Alias(d) => Some(last(d)),
            _ => None,
        };
        // The entry list (`EntryClass = X`) lists entry points; nothing subclasses or constructs it.
        if let Some(target) = target.filter(|_| !conventions.is_entry_list(&b.name)) {
            out.push((target, b.name.as_str()));
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
