//! `[select.NAME]` tables: class selectors checked and compiled, their `held-by` chains ending
//! in a root.

use std::collections::BTreeMap;

use toml::Spanned;

use super::Conventions;
use crate::error::{Error, ErrorKind, SelectorProblem, SpecReason};
use crate::source::SourceFile;
use crate::syntax::is_identifier;

use super::raw::{RawConventions, RawSelect};
use super::ClassSelector;

pub(super) fn compile_selectors(
    file: &SourceFile,
    raw: BTreeMap<String, Spanned<RawSelect>>,
    conventions: &Conventions,
) -> Result<Vec<ClassSelector>, Error> {
    let names: Vec<String> = raw.keys().cloned().collect();
    let mut out = Vec::new();
    for (name, spanned) in raw {
        let span = spanned.span();
        let table = file.text().find(&format!("[select.{name}]")).unwrap_or(span.start);
        let fail = |problem: SelectorProblem| {
            ErrorKind::Spec {
                reason: SpecReason::ClassSelector {
                    name: name.clone(),
                    problem,
                },
                cause: None,
            }
            .at(file.location(table))
        };
        if !is_identifier(&name.replace('-', "_")) {
            return Err(fail(SelectorProblem::BadName));
        }
        let raw = spanned.into_inner();
        for text in raw
            .has_method
            .iter()
            .chain(&raw.assigns)
            .chain(raw.via.iter().flatten())
        {
            if !is_identifier(text) {
                return Err(fail(SelectorProblem::NotAName { text: text.clone() }));
            }
        }
        match &raw.held_by {
            None if !raw.entries && raw.has_method.is_none() => return Err(fail(SelectorProblem::RootChoosesNothing)),
            None if raw.via.is_some() || raw.assigns.is_some() => return Err(fail(SelectorProblem::DerivedKeysInRoot)),
            Some(_) if raw.exclude.is_some() || raw.entries || raw.has_method.is_some() => {
                return Err(fail(SelectorProblem::RootKeysInDerived))
            }
            Some(by) if !names.contains(by) => {
                return Err(fail(SelectorProblem::UnknownHolder {
                    by: by.clone(),
                    known: names.clone(),
                }))
            }
            Some(by) if *by == name => return Err(fail(SelectorProblem::HoldsItself)),
            None if raw.entries && conventions.entry_list.is_none() => {
                return Err(fail(SelectorProblem::EntriesWithoutList))
            }
            _ => {}
        }
        out.push(ClassSelector {
            name: name.clone(),
            entries: raw.entries,
            has_method: raw.has_method,
            exclude: raw.exclude.unwrap_or_default(),
            held_by: raw.held_by,
            via: raw.via.unwrap_or_default(),
            assigns: raw.assigns,
            location: file.location(table),
        });
    }
    // `held-by` chains must end in a root.
    for selector in &out {
        let mut at = selector;
        let mut seen = vec![at.name.as_str()];
        while let Some(by) = &at.held_by {
            if seen.contains(&by.as_str()) {
                return Err(ErrorKind::Spec {
                    reason: SpecReason::ClassSelector {
                        name: selector.name.clone(),
                        problem: SelectorProblem::Circle {
                            chain: seen.iter().map(ToString::to_string).collect(),
                        },
                    },
                    cause: None,
                }
                .at(selector.location.clone()));
            }
            seen.push(by);
            at = out.iter().find(|s| s.name == *by).expect("checked above");
        }
    }
    Ok(out)
}

/// The `[conventions]` table, checked: the entry list must be a Python name.
pub(super) fn compile_conventions(file: &SourceFile, raw: RawConventions) -> Result<Conventions, Error> {
    let mut conventions = Conventions::default().with_draft_markers(raw.draft_markers);
    if let Some(name) = raw.entry_list {
        if !is_identifier(&name) {
            let at = file.text().find("[conventions]").unwrap_or(0);
            return Err(ErrorKind::Spec {
                reason: SpecReason::EntryListNotAName { name },
                cause: None,
            }
            .at(file.location(at)));
        }
        conventions = conventions.with_entry_list(name);
    }
    Ok(conventions)
}
