//! The library's written layering rules, held by reading `src/` (CONTRIBUTING.md, "Layout";
//! docs/architecture.md, "Floors"):
//!
//! - nothing under `src/` names SGLang: no file's text holds `sglang` in any case, code,
//!   comments, doc examples and tests alike;
//! - the library spawns no process and never chooses the allocator: no code under `src/`
//!   (tests included) reaches into `std::process` for anything but `std::process::id` (the
//!   process's own id, in lock and temporary names), and none says `#[global_allocator]`;
//! - its modules stand on floors ([`FLOORS`]), and a module's code (its `#[cfg(test)]` items and
//!   test files left out) names only modules of floors below its own: no import upward or
//!   sideways, so no circle. Each `crate::NAME` counts, in a `use` or a path in code; a name
//!   the crate root re-exports (`crate::Error`) counts as the module it comes from. The floors
//!   below `error` never import it: they raise their own error types. (A `#[cfg(test)]`
//!   statement inside a function still counts.)
//!
//! Printing is held by the crate's own clippy lints (`src/lib.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use quote::ToTokens;
use syn::buffer::{Cursor, TokenBuffer};
use syn::{Item, UseTree};

/// The library's modules floor by floor, from the bottom (docs/architecture.md, "Floors"): a
/// module names only modules of the floors below its own.
const FLOORS: &[&[&str]] = &[
    &["limits", "printable", "suggest", "syntax"],
    &["location", "verify"],
    &["source"],
    &["diff", "edit", "parse"],
    &["marker"],
    &["error"],
    &["files", "pattern"],
    &["outline", "template"],
    &["locate", "params"],
    &["spec"],
    &["captures", "outcome", "place", "project", "recipes"],
    &["suite"],
    &["engine"],
    &["batch", "document", "report"],
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// `path` as the messages show it: below the crate's folder.
fn shown(path: &Path) -> String {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    path.strip_prefix(crate_dir).unwrap_or(path).display().to_string()
}

/// The floor of `module`, counted from 0 at the bottom (the messages and the docs count from 1).
fn floor(module: &str) -> Option<usize> {
    FLOORS.iter().position(|floor| floor.contains(&module))
}

/// Whether `attrs` hold `#[cfg(test)]` (or a `cfg` that needs `test`).
fn test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && {
            let text = a.meta.to_token_stream().to_string();
            text.contains("test") && !text.contains("not (test")
        }
    })
}

fn item_attrs(item: &Item) -> &[syn::Attribute] {
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::ExternCrate(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::ForeignMod(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::TraitAlias(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// `items` without their test-only code: `#[cfg(test)]` items, and such items inside inline
/// modules and `impl` blocks.
fn without_tests(items: Vec<Item>) -> Vec<Item> {
    items
        .into_iter()
        .filter(|item| !test_only(item_attrs(item)))
        .map(|item| match item {
            Item::Mod(mut m) => {
                if let Some((brace, inner)) = m.content.take() {
                    m.content = Some((brace, without_tests(inner)));
                }
                Item::Mod(m)
            }
            Item::Impl(mut i) => {
                i.items
                    .retain(|member| !matches!(member, syn::ImplItem::Fn(f) if test_only(&f.attrs)));
                Item::Impl(i)
            }
            other => other,
        })
        .collect()
}

/// A file of the crate's code: its path, the top-level module it belongs to (`lib` for the
/// root) and its items, test-only code left out.
struct CodeFile {
    path: PathBuf,
    module: String,
    items: Vec<Item>,
}

/// Every file of the library's code, found from `src/lib.rs` through its `mod NAME;` items (a
/// test-only one leads to test code: not followed).
fn code_files() -> Vec<CodeFile> {
    let mut files = Vec::new();
    load(&src().join("lib.rs"), &src(), None, &mut files);
    files
}

/// Adds the file at `path` (of the top-level module `module`; `None`: the root), whose
/// `mod NAME;` children are files under `dir`.
fn load(path: &Path, dir: &Path, module: Option<&str>, files: &mut Vec<CodeFile>) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let items = without_tests(parsed.items);
    children(&items, dir, module, files);
    files.push(CodeFile {
        path: path.to_path_buf(),
        module: module.unwrap_or("lib").to_string(),
        items,
    });
}

/// Loads the files of the `mod NAME;` items among `items` (inline modules' too), below `dir`.
fn children(items: &[Item], dir: &Path, module: Option<&str>, files: &mut Vec<CodeFile>) {
    for item in items {
        let Item::Mod(m) = item else { continue };
        let name = m.ident.to_string();
        let top = module.unwrap_or(&name).to_string();
        match &m.content {
            Some((_, inner)) => children(inner, &dir.join(&name), Some(&top), files),
            None => {
                let file = dir.join(format!("{name}.rs"));
                assert!(file.is_file(), "no file for module {name} in {}", dir.display());
                load(&file, &dir.join(&name), Some(&top), files);
            }
        }
    }
}

/// The names after `crate::` in `code` (for `crate::{a::X, b}`, `a` and `b`), `$crate` left out.
fn crate_paths(code: &impl ToTokens) -> Vec<String> {
    let buffer = TokenBuffer::new2(code.to_token_stream());
    let mut out = Vec::new();
    walk(buffer.begin(), &mut out);
    out
}

fn walk(mut at: Cursor<'_>, out: &mut Vec<String>) {
    let mut after_dollar = false;
    while !at.eof() {
        if let Some((inside, _, _, next)) = at.any_group() {
            walk(inside, out);
            at = next;
            after_dollar = false;
            continue;
        }
        if let Some((ident, next)) = at.ident() {
            if ident == "crate" && !after_dollar {
                if let Some(rest) = path_sep(next) {
                    if let Some((name, _)) = rest.ident() {
                        out.push(name.to_string());
                    } else if let Some((inside, _, _, _)) = rest.any_group() {
                        group_heads(inside, out);
                    }
                }
            }
            at = next;
            after_dollar = false;
            continue;
        }
        if let Some((punct, next)) = at.punct() {
            after_dollar = punct.as_char() == '$';
            at = next;
            continue;
        }
        at = at.token_tree().map_or(at, |(_, next)| next);
        after_dollar = false;
    }
}

/// The cursor past `::` at `at`, if `::` is there.
fn path_sep(at: Cursor<'_>) -> Option<Cursor<'_>> {
    let (first, next) = at.punct()?;
    let (second, next) = next.punct()?;
    (first.as_char() == ':' && second.as_char() == ':').then_some(next)
}

/// The first name of each entry of a `use` group (`{a::X, b}`).
fn group_heads(mut at: Cursor<'_>, out: &mut Vec<String>) {
    let mut head = true;
    while !at.eof() {
        if let Some((ident, next)) = at.ident() {
            if head {
                out.push(ident.to_string());
            }
            head = false;
            at = next;
        } else if let Some((punct, next)) = at.punct() {
            head = punct.as_char() == ',';
            at = next;
        } else {
            head = false;
            at = at.token_tree().map_or(at, |(_, next)| next);
        }
    }
}

/// What each `use` among `items` binds: the name, and the path it stands for.
fn bindings(items: &[Item]) -> Vec<(String, Vec<String>)> {
    fn leaves(tree: &UseTree, prefix: &mut Vec<String>, out: &mut Vec<(String, Vec<String>)>) {
        match tree {
            UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                leaves(&p.tree, prefix, out);
                prefix.pop();
            }
            UseTree::Name(n) => out.push((n.ident.to_string(), [&prefix[..], &[n.ident.to_string()]].concat())),
            UseTree::Rename(r) => out.push((r.rename.to_string(), [&prefix[..], &[r.ident.to_string()]].concat())),
            UseTree::Glob(_) => {}
            UseTree::Group(g) => g.items.iter().for_each(|t| leaves(t, prefix, out)),
        }
    }
    let mut out = Vec::new();
    for item in items {
        if let Item::Use(u) = item {
            leaves(&u.tree, &mut Vec::new(), &mut out);
        }
    }
    out
}

/// Where the crate's names lead: the top-level modules, and what the root and each module's
/// own file re-export.
struct Names {
    modules: Vec<String>,
    /// Per top-level module (`lib`: the root), what its own file's `use` items bind.
    bound: BTreeMap<String, Vec<(String, Vec<String>)>>,
}

impl Names {
    fn new(files: &[CodeFile]) -> Names {
        let mut bound = BTreeMap::new();
        for file in files {
            // `src/MODULE.rs` (`src/lib.rs` for the root): the file of the module itself.
            if file.path == src().join(format!("{}.rs", file.module)) {
                bound.insert(file.module.clone(), bindings(&file.items));
            }
        }
        let root = files.iter().find(|f| f.module == "lib").expect("src/lib.rs");
        let modules = root
            .items
            .iter()
            .filter_map(|item| match item {
                Item::Mod(m) => Some(m.ident.to_string()),
                _ => None,
            })
            .collect();
        Names { modules, bound }
    }

    /// The top-level module that `crate::NAME` leads to: `NAME` itself, or the module a
    /// re-export of the root names, followed through that module's own re-exports from
    /// `crate::`; `None` when it leads to no module (an item of the root itself).
    fn module_of(&self, name: &str) -> Option<String> {
        if self.modules.iter().any(|m| m == name) {
            return Some(name.to_string());
        }
        let path = self
            .bound
            .get("lib")?
            .iter()
            .find(|(bound, _)| bound == name)?
            .1
            .clone();
        Some(self.follow(&path, 0))
    }

    /// The module that `path` (`MODULE::...`, from the root) leads to: a name that `MODULE`'s
    /// file imports from `crate::` leads on.
    fn follow(&self, path: &[String], depth: usize) -> String {
        let module = path[0].clone();
        if let ([_, item], true) = (path, depth < 8) {
            let import = self
                .bound
                .get(&module)
                .and_then(|bound| bound.iter().find(|(name, to)| name == item && to[0] == "crate"));
            if let Some((_, to)) = import {
                return self.follow(&to[1..], depth + 1);
            }
        }
        module
    }
}

/// Every import of a module from one not below it: `FILE: MODULE (floor N) names crate::NAME ->
/// MODULE (floor M)`.
fn upward_imports(files: &[CodeFile], names: &Names) -> Vec<String> {
    let mut found = Vec::new();
    for file in files.iter().filter(|f| f.module != "lib") {
        let shown = shown(&file.path);
        let Some(own) = floor(&file.module) else {
            found.push(format!("{}: module `{}` is on no floor", shown, file.module));
            continue;
        };
        for item in &file.items {
            for name in crate_paths(item) {
                let Some(to) = names.module_of(&name) else {
                    found.push(format!("{}: crate::{name} leads to no module", shown));
                    continue;
                };
                if to == file.module {
                    continue;
                }
                match floor(&to) {
                    Some(theirs) if theirs < own => {}
                    theirs => found.push(format!(
                        "{}: `{}` (floor {}) names crate::{name}, of `{to}` (floor {})",
                        shown,
                        file.module,
                        own + 1,
                        theirs.map_or("none".to_string(), |f| (f + 1).to_string())
                    )),
                }
            }
        }
    }
    found
}

#[test]
fn every_module_stands_on_one_floor() {
    let files = code_files();
    let names = Names::new(&files);
    let mut on_floors: Vec<&str> = FLOORS.iter().flat_map(|f| f.iter().copied()).collect();
    on_floors.sort_unstable();
    let mut modules: Vec<&str> = names.modules.iter().map(String::as_str).collect();
    modules.sort_unstable();
    assert_eq!(
        on_floors, modules,
        "FLOORS names each module of src/lib.rs once (docs/architecture.md, \"Floors\")"
    );
}

#[test]
fn the_floors_are_the_documented_ones() {
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md");
    let page = std::fs::read_to_string(page).unwrap();
    let section = page
        .split("### Floors")
        .nth(1)
        .expect("docs/architecture.md has a Floors section");
    let documented: Vec<Vec<String>> = section
        .lines()
        .skip_while(|line| !line.starts_with("| 1 |"))
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            let modules = line.split('|').nth(2).unwrap_or_default();
            modules
                .split(',')
                .map(|m| m.trim().trim_matches('`').to_string())
                .collect()
        })
        .collect();
    let floors: Vec<Vec<String>> = FLOORS
        .iter()
        .map(|floor| floor.iter().map(ToString::to_string).collect())
        .collect();
    assert_eq!(documented, floors, "docs/architecture.md's floors, bottom up");
}

#[test]
fn no_module_names_one_above_or_beside_it() {
    let files = code_files();
    assert!(
        files.len() > 100,
        "the walk from src/lib.rs found {} files",
        files.len()
    );
    let found = upward_imports(&files, &Names::new(&files));
    assert!(
        found.is_empty(),
        "a module names only modules of the floors below its own (docs/architecture.md, \"Floors\"):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_floors_below_error_never_name_it() {
    let below: Vec<&str> = FLOORS[..floor("error").unwrap()].concat();
    assert!(below.contains(&"marker") && below.contains(&"parse"), "{below:?}");
    let files = code_files();
    let names = Names::new(&files);
    let found: Vec<String> = files
        .iter()
        .filter(|f| below.contains(&f.module.as_str()))
        .flat_map(|f| {
            f.items
                .iter()
                .flat_map(crate_paths)
                .filter(|name| names.module_of(name).as_deref() == Some("error"))
                .map(move |name| format!("{}: crate::{name}", shown(&f.path)))
        })
        .collect();
    assert!(
        found.is_empty(),
        "raise the module's own error type:\n{}",
        found.join("\n")
    );
}

/// Every file under `src/`, whatever it holds.
fn every_source_file() -> Vec<PathBuf> {
    fn add(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                add(&path, out);
            } else {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    add(&src(), &mut out);
    out.sort();
    out
}

/// The lines of `text` that name SGLang, in any case.
fn naming_sglang(text: &str) -> Vec<usize> {
    let lines = text.lines().enumerate();
    lines
        .filter(|(_, line)| line.to_lowercase().contains("sglang"))
        .map(|(i, _)| i + 1)
        .collect()
}

#[test]
fn nothing_under_src_names_sglang() {
    let files = every_source_file();
    assert!(files.len() > 100, "{} files under src/", files.len());
    let found: Vec<String> = files
        .iter()
        .flat_map(|path| {
            let text = String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned();
            naming_sglang(&text)
                .into_iter()
                .map(move |line| format!("{}:{line}", shown(path)))
        })
        .collect();
    assert!(
        found.is_empty(),
        "the library names no SGLang (the SGLang crate does):\n{}",
        found.join("\n")
    );
}

/// What `code` says that a library must not: a path into `std::process` other than
/// `std::process::id` (spawning, exiting), `#[global_allocator]`.
fn not_a_library(code: &impl ToTokens) -> Vec<String> {
    let buffer = TokenBuffer::new2(code.to_token_stream());
    let mut found = Vec::new();
    outside_a_library(buffer.begin(), &mut found);
    found
}

fn outside_a_library(mut at: Cursor<'_>, found: &mut Vec<String>) {
    while !at.eof() {
        if let Some((inside, _, _, next)) = at.any_group() {
            outside_a_library(inside, found);
            at = next;
            continue;
        }
        if let Some((ident, next)) = at.ident() {
            if ident == "global_allocator" {
                found.push("#[global_allocator]".to_string());
            }
            if ident == "std" {
                if let Some(rest) = path_sep(next) {
                    if let Some((inside, _, _, _)) = rest.any_group() {
                        process_heads(inside, found);
                    } else {
                        process_path(rest, found);
                    }
                }
            }
            at = next;
            continue;
        }
        at = at.token_tree().map_or(at, |(_, next)| next);
    }
}

/// Checks a path after `std::`: `process` may go on only to `::id`.
fn process_path(at: Cursor<'_>, found: &mut Vec<String>) {
    let Some((ident, next)) = at.ident() else { return };
    if ident != "process" {
        return;
    }
    let to = path_sep(next)
        .and_then(|rest| rest.ident())
        .map(|(name, _)| name.to_string());
    if to.as_deref() != Some("id") {
        found.push(format!("std::process::{}", to.unwrap_or_default()));
    }
}

/// Checks each entry of a `std::{...}` group.
fn process_heads(mut at: Cursor<'_>, found: &mut Vec<String>) {
    let mut head = true;
    while !at.eof() {
        if head {
            process_path(at, found);
        }
        if let Some((punct, next)) = at.punct() {
            head = punct.as_char() == ',';
            at = next;
        } else {
            head = false;
            at = at.token_tree().map_or(at, |(_, next)| next);
        }
    }
}

#[test]
fn the_library_spawns_no_process_and_chooses_no_allocator() {
    let mut found = Vec::new();
    for path in every_source_file()
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
    {
        let file = syn::parse_file(&std::fs::read_to_string(path).unwrap()).unwrap();
        found.extend(
            not_a_library(&file)
                .into_iter()
                .map(|what| format!("{}: {what}", shown(path))),
        );
    }
    assert!(
        found.is_empty(),
        "the programs spawn processes and choose the allocator, never the library:\n{}",
        found.join("\n")
    );
}

/// The checks themselves: what counts, what does not.
#[test]
fn the_checks_see_what_they_look_for() {
    let file: syn::File = syn::parse_str(
        r#"
        use crate::engine::plan;
        use crate::{spec::Recipe, location};
        /// [`crate::batch::Batch`] in a doc comment; `crate::report` in a string:
        const S: &str = "crate::report";
        fn f() -> crate::Error { crate::files::read_text(); todo!() }
        macro_rules! m { () => { $crate::printable::x() } }
        #[cfg(test)]
        mod tests { use crate::document::Document; }
        "#,
    )
    .unwrap();
    let items = without_tests(file.items);
    let names: Vec<String> = items.iter().flat_map(crate_paths).collect();
    assert_eq!(names, ["engine", "spec", "location", "Error", "files"]);
    for (code, bad) in [
        ("fn f() { std::process::Command::new(\"python3\"); }", true),
        ("use std::process;", true),
        ("use std::{io, process::Child};", true),
        ("fn f() -> u32 { std::process::id() }", false),
        ("#[global_allocator] static A: X = X;", true),
        ("fn process() {} const S: &str = \"std::process::exit\";", false),
    ] {
        let file: syn::File = syn::parse_str(code).unwrap();
        assert_eq!(!not_a_library(&file).is_empty(), bad, "{code}");
    }
    assert_eq!(naming_sglang("a\n// for SGLang\nb"), [2]);
}
