//! `[select.NAME]` tables: class selectors checked and compiled, their `held-by` chains ending
//! in a root.

use std::collections::BTreeMap;

use toml::Spanned;

use super::Conventions;
use crate::error::{Error, ErrorKind};
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
        let fail = |message: String| {
            ErrorKind::Spec {
                message: format!("[select.{name}]: {message}"),
                cause: None,
            }
            .at(file.location(table))
        };
        if !is_identifier(&name.replace('-', "_")) {
            return Err(fail("the name must be letters, digits, `_` or `-`".into()));
        }
        let raw = spanned.into_inner();
        for text in raw
            .has_method
            .iter()
            .chain(&raw.assigns)
            .chain(raw.via.iter().flatten())
        {
            if !is_identifier(text) {
                return Err(fail(format!("`{text}` is not a Python name")));
            }
        }
        match &raw.held_by {
            None if !raw.entries && raw.has_method.is_none() => {
                return Err(fail(
                    "a root selector needs `entries = true` or `has-method`; a derived one `held-by`".into(),
                ))
            }
            None if raw.via.is_some() || raw.assigns.is_some() => {
                return Err(fail("`via` and `assigns` belong to `held-by`".into()))
            }
            Some(_) if raw.exclude.is_some() || raw.entries || raw.has_method.is_some() => {
                return Err(fail(
                    "`entries`, `has-method` and `exclude` belong to root selectors (without `held-by`)".into(),
                ))
            }
            Some(by) if !names.contains(by) => {
                return Err(fail(format!(
                    "`held-by = \"{by}\"` names no selector; the recipe has {}",
                    quoted_list(&names)
                )))
            }
            Some(by) if *by == name => return Err(fail("a selector cannot hold itself".into())),
            None if raw.entries && conventions.entry_list.is_none() => {
                return Err(fail(
                    "`entries = true` needs the variable that lists entry classes: \
                     `[conventions] entry-list = \"NAME\"`"
                        .into(),
                ))
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
                    message: format!(
                        "[select.{}]: `held-by` goes round in a circle ({})",
                        selector.name,
                        seen.join(" -> ")
                    ),
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

pub(super) fn quoted_list(names: &[String]) -> String {
    if names.is_empty() {
        return "no `[select.NAME]` table".into();
    }
    names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
}

/// The `[conventions]` table, checked: the entry list must be a Python name.
pub(super) fn compile_conventions(file: &SourceFile, raw: RawConventions) -> Result<Conventions, Error> {
    let mut conventions = Conventions::default().with_draft_markers(raw.draft_markers);
    if let Some(name) = raw.entry_list {
        if !is_identifier(&name) {
            let at = file.text().find("[conventions]").unwrap_or(0);
            return Err(ErrorKind::Spec {
                message: format!("[conventions]: entry-list `{name}` is not a Python name"),
                cause: None,
            }
            .at(file.location(at)));
        }
        conventions = conventions.with_entry_list(name);
    }
    Ok(conventions)
}
