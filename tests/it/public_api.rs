//! The library's public API, read from its source with `syn`: every item a user can name (by
//! the path they name it with), its signature, the public methods of its types and the traits
//! they implement, as one snapshot (`snapshots/public_api.snap`). A change that moves the public
//! API changes the snapshot, and the review of the change sees it. Nothing in `src/` is
//! `#[doc(hidden)]`: an item is public and documented, or crate-private.
//!
//! What the source says is what counts: a `pub` item in a private module is public API only
//! where a public path re-exports it (or a public type's `impl` gives it); `#[cfg(test)]` code is
//! left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use quote::ToTokens;
use syn::{ImplItem, Item, UseTree, Visibility};

/// The snapshot's name (`snapshots/public_api.snap`).
pub const SNAPSHOT: &str = "public_api";

/// A module's path below the crate root (the root: empty).
type ModPath = Vec<String>;

/// One module of the crate: its items, where its file lies.
struct Module {
    items: Vec<Item>,
}

/// What a path names.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Target {
    Module(ModPath),
    /// An item of a module: the module, the item's index.
    Item(ModPath, usize),
    /// Something outside the crate (`std::...`, a dependency).
    External(String),
}

/// Every module of the crate, by path.
struct Crate {
    modules: BTreeMap<ModPath, Module>,
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
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

fn name_of(item: &Item) -> Option<String> {
    let ident = match item {
        Item::Const(i) => &i.ident,
        Item::Enum(i) => &i.ident,
        Item::Fn(i) => &i.sig.ident,
        Item::Mod(i) => &i.ident,
        Item::Static(i) => &i.ident,
        Item::Struct(i) => &i.ident,
        Item::Trait(i) => &i.ident,
        Item::Type(i) => &i.ident,
        Item::Union(i) => &i.ident,
        _ => return None,
    };
    Some(ident.to_string())
}

fn vis_of(item: &Item) -> Option<&Visibility> {
    Some(match item {
        Item::Const(i) => &i.vis,
        Item::Enum(i) => &i.vis,
        Item::Fn(i) => &i.vis,
        Item::Mod(i) => &i.vis,
        Item::Static(i) => &i.vis,
        Item::Struct(i) => &i.vis,
        Item::Trait(i) => &i.vis,
        Item::Type(i) => &i.vis,
        Item::Union(i) => &i.vis,
        Item::Use(i) => &i.vis,
        _ => return None,
    })
}

fn attrs_of(item: &Item) -> &[syn::Attribute] {
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

fn is_pub(vis: &Visibility) -> bool {
    matches!(vis, Visibility::Public(_))
}

/// The leaves of a `use` tree: the name each binds (`None` for a glob) and the path it names.
fn leaves(tree: &UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Option<String>, Vec<String>)>) {
    match tree {
        UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            leaves(&p.tree, prefix, out);
            prefix.pop();
        }
        UseTree::Name(n) if n.ident == "self" => out.push((prefix.last().cloned(), prefix.clone())),
        UseTree::Name(n) => {
            let mut path = prefix.clone();
            path.push(n.ident.to_string());
            out.push((Some(n.ident.to_string()), path));
        }
        UseTree::Rename(r) => {
            let mut path = prefix.clone();
            if r.ident != "self" {
                path.push(r.ident.to_string());
            }
            out.push((Some(r.rename.to_string()), path));
        }
        UseTree::Glob(_) => out.push((None, prefix.clone())),
        UseTree::Group(g) => g.items.iter().for_each(|t| leaves(t, prefix, out)),
    }
}

/// Token text made readable: `& 'a Recipe` as `&'a Recipe`, `Vec < T >` as `Vec<T>`.
fn tidy(tokens: impl ToTokens) -> String {
    let mut text = tokens.to_token_stream().to_string();
    for (from, to) in [
        (" :: ", "::"),
        (":: ", "::"),
        (" ,", ","),
        ("( ", "("),
        (" )", ")"),
        ("[ ", "["),
        (" ]", "]"),
        (" <", "<"),
        ("< ", "<"),
        (" >", ">"),
        ("& ", "&"),
        (" :", ":"),
        (" ;", ";"),
        ("# [", "#["),
        (" !", "!"),
        (" (", "("),
        (",)", ")"),
    ] {
        text = text.replace(from, to);
    }
    // An arrow and an `=` keep their spaces; `mut self` is the body's business, not the API's.
    for (from, to) in [
        ("(mut self", "(self"),
        (">->", "> ->"),
        (")->", ") ->"),
        ("->(", "-> ("),
        ("=(", "= ("),
    ] {
        text = text.replace(from, to);
    }
    text
}

impl Crate {
    fn load() -> Crate {
        let mut krate = Crate {
            modules: BTreeMap::new(),
        };
        let root = src().join("lib.rs");
        let file = syn::parse_file(&std::fs::read_to_string(&root).unwrap()).unwrap();
        krate.add(Vec::new(), file.items, &src());
        krate
    }

    /// Adds the module at `path` with `items`; its `mod NAME;` children are files under `dir`.
    fn add(&mut self, path: ModPath, items: Vec<Item>, dir: &Path) {
        let items: Vec<Item> = items.into_iter().filter(|i| !test_only(attrs_of(i))).collect();
        for item in &items {
            let Item::Mod(m) = item else { continue };
            let name = m.ident.to_string();
            let mut child = path.clone();
            child.push(name.clone());
            let child_dir = dir.join(&name);
            let content = match &m.content {
                Some((_, inline)) => inline.clone(),
                None => {
                    let file = [dir.join(format!("{name}.rs")), child_dir.join("mod.rs")]
                        .into_iter()
                        .find(|f| f.is_file())
                        .unwrap_or_else(|| panic!("no file for module {}", child.join("::")));
                    syn::parse_file(&std::fs::read_to_string(&file).unwrap())
                        .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
                        .items
                }
            };
            self.add(child, content, &child_dir);
        }
        self.modules.insert(path, Module { items });
    }

    /// What `name` names in `module`: an item, a child module, or what a `use` binds. A module
    /// and an item may share a name (`mod apply;` beside `pub use apply::apply;`): `module` says
    /// which is wanted, the other is the fallback.
    fn lookup(&self, module: &[String], name: &str, want_module: bool, depth: usize) -> Option<Target> {
        if depth > 32 {
            return None;
        }
        let items = &self.modules.get(module)?.items;
        let own = |modules: bool| {
            items.iter().enumerate().find_map(|(i, item)| {
                (name_of(item).as_deref() == Some(name) && matches!(item, Item::Mod(_)) == modules).then(
                    || match item {
                        Item::Mod(_) => Target::Module([module, &[name.to_string()]].concat()),
                        _ => Target::Item(module.to_vec(), i),
                    },
                )
            })
        };
        if let Some(found) = own(want_module) {
            return Some(found);
        }
        let mut globs = Vec::new();
        for item in items {
            let Item::Use(u) = item else { continue };
            let mut found = Vec::new();
            leaves(&u.tree, &mut Vec::new(), &mut found);
            for (alias, path) in found {
                match alias {
                    Some(alias) if alias == name => return self.resolve(module, &path, want_module, depth + 1),
                    None => globs.push(path),
                    Some(_) => {}
                }
            }
        }
        let globbed = globs
            .iter()
            .find_map(|path| match self.resolve(module, path, true, depth + 1)? {
                Target::Module(m) => self.lookup(&m, name, want_module, depth + 1),
                _ => None,
            });
        globbed.or_else(|| own(!want_module))
    }

    /// What `path`, written in `module`, names; `want_module`: whether a module is wanted
    /// where an item of the same name is there too (the path's last segment; the others are
    /// modules).
    fn resolve(&self, module: &[String], path: &[String], want_module: bool, depth: usize) -> Option<Target> {
        let (first, rest) = path.split_first()?;
        let mut at = match first.as_str() {
            "crate" => Target::Module(Vec::new()),
            "self" => Target::Module(module.to_vec()),
            "super" => Target::Module(module[..module.len().saturating_sub(1)].to_vec()),
            name => match self.lookup(module, name, want_module || !rest.is_empty(), depth) {
                Some(target) => target,
                None => return Some(Target::External(path.join("::"))),
            },
        };
        for (i, segment) in rest.iter().enumerate() {
            let last = i + 1 == rest.len();
            at = match (at, segment.as_str()) {
                (Target::Module(m), "super") => Target::Module(m[..m.len().saturating_sub(1)].to_vec()),
                (Target::Module(m), name) => self.lookup(&m, name, want_module || !last, depth)?,
                (Target::External(p), name) => Target::External(format!("{p}::{name}")),
                (Target::Item(..), _) => return None,
            };
        }
        Some(at)
    }

    fn item(&self, module: &[String], index: usize) -> &Item {
        &self.modules[module].items[index]
    }
}

/// The attributes of an item that are part of its API: its `cfg`, derives, `non_exhaustive`.
fn api_attrs(attrs: &[syn::Attribute]) -> String {
    let mut out = String::new();
    for attr in attrs {
        let path = attr.path();
        let text = tidy(&attr.meta);
        let keep = path.is_ident("cfg")
            || path.is_ident("derive")
            || path.is_ident("non_exhaustive")
            || (path.is_ident("cfg_attr") && text.contains("derive"));
        if keep {
            out.push_str(&format!("#[{text}] "));
        }
    }
    out
}

/// The lines of one public item named `path`.
fn item_lines(path: &str, item: &Item) -> Vec<String> {
    let attrs = api_attrs(attrs_of(item));
    let mut lines = Vec::new();
    match item {
        Item::Fn(f) => lines.push(format!("{path}: {attrs}{}", tidy(&f.sig))),
        Item::Const(c) => lines.push(format!("{path}: {attrs}const: {}", tidy(&c.ty))),
        Item::Static(s) => lines.push(format!("{path}: {attrs}static: {}", tidy(&s.ty))),
        Item::Type(t) => lines.push(format!("{path}: {attrs}type{} = {}", tidy(&t.generics), tidy(&t.ty))),
        Item::Mod(_) => lines.push(format!("{path}: mod")),
        Item::Union(u) => lines.push(format!("{path}: {attrs}union{}", tidy(&u.generics))),
        Item::Struct(s) => {
            let generics = tidy(&s.generics);
            match &s.fields {
                syn::Fields::Named(fields) => {
                    lines.push(format!("{path}: {attrs}struct{generics}"));
                    for field in fields.named.iter().filter(|f| is_pub(&f.vis)) {
                        let name = field.ident.as_ref().unwrap();
                        lines.push(format!("{path}.{name}: {}", tidy(&field.ty)));
                    }
                }
                syn::Fields::Unnamed(fields) => {
                    let shown: Vec<String> = fields
                        .unnamed
                        .iter()
                        .map(|f| if is_pub(&f.vis) { tidy(&f.ty) } else { "_".into() })
                        .collect();
                    lines.push(format!("{path}: {attrs}struct{generics}({})", shown.join(", ")));
                }
                syn::Fields::Unit => lines.push(format!("{path}: {attrs}struct{generics}")),
            }
        }
        Item::Enum(e) => {
            lines.push(format!("{path}: {attrs}enum{}", tidy(&e.generics)));
            for variant in &e.variants {
                let fields = match &variant.fields {
                    syn::Fields::Unit => String::new(),
                    syn::Fields::Named(named) => {
                        let each: Vec<String> = named
                            .named
                            .iter()
                            .map(|f| format!("{}: {}", f.ident.as_ref().unwrap(), tidy(&f.ty)))
                            .collect();
                        format!(" {{ {} }}", each.join(", "))
                    }
                    syn::Fields::Unnamed(unnamed) => {
                        let each: Vec<String> = unnamed.unnamed.iter().map(|f| tidy(&f.ty)).collect();
                        format!(" ({})", each.join(", "))
                    }
                };
                lines.push(format!("{path}::{}:{fields}", variant.ident));
            }
        }
        Item::Trait(t) => {
            lines.push(format!("{path}: {attrs}trait{}", tidy(&t.generics)));
            for inner in &t.items {
                if let syn::TraitItem::Fn(f) = inner {
                    lines.push(format!("{path}::{}: {}", f.sig.ident, tidy(&f.sig)));
                }
            }
        }
        _ => {}
    }
    lines
}

/// The public API: one line per item, field, variant, method and trait implementation.
fn public_api(krate: &Crate) -> Vec<String> {
    let mut lines = Vec::new();
    // Each public item (module, index) with the path users name it by.
    let mut named: BTreeMap<(ModPath, usize), String> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    let mut pending = vec![(Vec::new(), "pysplice".to_string())];
    while let Some((module, shown)) = pending.pop() {
        if !seen.insert(module.clone()) {
            continue;
        }
        for (index, item) in krate.modules[&module].items.iter().enumerate() {
            if !vis_of(item).is_some_and(is_pub) {
                continue;
            }
            let mut record = |target: Target, path: String, lines: &mut Vec<String>| match target {
                Target::Module(m) => {
                    lines.push(format!("{path}: mod"));
                    pending.push((m, path));
                }
                Target::Item(m, i) => {
                    lines.extend(item_lines(&path, krate.item(&m, i)));
                    named.entry((m, i)).or_insert(path);
                }
                Target::External(p) => lines.push(format!("{path}: re-export of {p}")),
            };
            match item {
                Item::Use(u) => {
                    let mut found = Vec::new();
                    leaves(&u.tree, &mut Vec::new(), &mut found);
                    for (alias, path) in found {
                        let target = krate
                            .resolve(&module, &path, false, 0)
                            .unwrap_or_else(|| panic!("`pub use {}` does not resolve", path.join("::")));
                        match alias {
                            Some(alias) => record(target, format!("{shown}::{alias}"), &mut lines),
                            None => panic!(
                                "a glob re-export (`pub use {}::*`) hides what it exports",
                                path.join("::")
                            ),
                        }
                    }
                }
                Item::Mod(m) => record(
                    Target::Module([module.as_slice(), &[m.ident.to_string()]].concat()),
                    format!("{shown}::{}", m.ident),
                    &mut lines,
                ),
                _ => record(
                    Target::Item(module.clone(), index),
                    format!("{shown}::{}", name_of(item).unwrap_or_default()),
                    &mut lines,
                ),
            }
        }
    }
    // The methods and trait implementations of the public types, wherever their impls are.
    for (module, m) in &krate.modules {
        for item in &m.items {
            let Item::Impl(imp) = item else { continue };
            let syn::Type::Path(ty) = imp.self_ty.as_ref() else {
                continue;
            };
            let segments: Vec<String> = ty.path.segments.iter().map(|s| s.ident.to_string()).collect();
            let Some(Target::Item(at, index)) = krate.resolve(module, &segments, false, 0) else {
                continue;
            };
            let Some(path) = named.get(&(at, index)) else { continue };
            let cfg = api_attrs(&imp.attrs);
            if let Some((_, trait_path, _)) = &imp.trait_ {
                lines.push(format!("{path}: {cfg}impl {}", tidy(trait_path)));
                continue;
            }
            for inner in &imp.items {
                match inner {
                    ImplItem::Fn(f) if is_pub(&f.vis) && !test_only(&f.attrs) => {
                        let attrs = api_attrs(&f.attrs);
                        lines.push(format!("{path}::{}: {cfg}{attrs}{}", f.sig.ident, tidy(&f.sig)));
                    }
                    ImplItem::Const(c) if is_pub(&c.vis) => {
                        lines.push(format!("{path}::{}: {cfg}const: {}", c.ident, tidy(&c.ty)));
                    }
                    _ => {}
                }
            }
        }
    }
    lines.sort();
    lines.dedup();
    lines
}

#[test]
fn the_public_api_is_the_snapshot() {
    let lines = public_api(&Crate::load());
    insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => false, omit_expression => true}, {
        insta::assert_snapshot!(SNAPSHOT, lines.join("\n"));
    });
}

#[test]
fn nothing_in_src_is_doc_hidden() {
    fn visit(dir: &Path, found: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                visit(&path, found);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for (n, line) in text.lines().enumerate() {
                    if line.replace(' ', "").contains("doc(hidden)") {
                        found.push(format!("{}:{}", path.display(), n + 1));
                    }
                }
            }
        }
    }
    let mut found = Vec::new();
    visit(&src(), &mut found);
    assert_eq!(found, Vec::<String>::new(), "public and documented, or crate-private");
}

#[test]
fn the_reader_sees_what_a_private_module_keeps_and_a_re_export_gives() {
    // The walk itself: a private module's `pub` item is public only through a re-export, under
    // the re-export's path; an impl in another module gives a public type its methods.
    let krate = Crate {
        modules: [
            (vec![], "mod inner; pub mod open; pub use inner::Shown as Named;"),
            (vec!["inner".to_string()], "pub struct Shown { pub a: u8, b: u8 } pub struct Hidden;"),
            (
                vec!["open".to_string()],
                "use crate::inner::Shown; impl Shown { pub fn get(&self) -> u8 { 0 } fn private(&self) {} } \
                 impl std::fmt::Display for Shown { fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { Ok(()) } } \
                 pub(crate) fn crate_only() {} pub const LIMIT: usize = 1;",
            ),
        ]
        .into_iter()
        .map(|(path, text)| {
            let items = syn::parse_file(text).unwrap().items;
            (path, Module { items })
        })
        .collect(),
    };
    assert_eq!(
        public_api(&krate),
        [
            "pysplice::Named: struct",
            "pysplice::Named.a: u8",
            "pysplice::Named: impl std::fmt::Display",
            "pysplice::Named::get: fn get(&self) -> u8",
            "pysplice::open: mod",
            "pysplice::open::LIMIT: const: usize",
        ]
        .into_iter()
        .map(String::from)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect::<Vec<_>>()
    );
}
