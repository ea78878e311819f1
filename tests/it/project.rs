//! The project module on hand-written packages (tests/fixtures/project/src): module names,
//! import tables, base resolution across modules (aliases, relative imports, re-exports, star
//! imports, an import cycle, an unresolvable base, a class defined twice, diamond inheritance),
//! compositions, chains, reach and forwards, each with exact expectations.

use std::path::{Path, PathBuf};

use pysplice::project::{
    BaseTarget, ClassGraph, ClassId, Diagnostic, ForwardNeed, Project, QueryError, RunVia, ScanOptions, Scope, Step,
};
use pysplice::Conventions;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/project/src")
}

/// The fixtures follow a model zoo's conventions: the classes a file serves are listed in
/// `EntryClass`, speculative-decoding draft models are known by name (the conventions SGLang's
/// model recipe declares, written here with the library's builder).
fn model_zoo() -> ScanOptions {
    ScanOptions::default().with_conventions(
        Conventions::default()
            .with_entry_list("EntryClass")
            .with_draft_markers(["eagle", "nextn", "mtp", "medusa", "dflash", "draft"]),
    )
}

fn project() -> Project {
    Project::scan_with(&src(), &model_zoo()).expect("fixture directory is readable")
}

fn id(graph: &ClassGraph<'_>, name: &str) -> ClassId {
    let found = graph.find(name);
    assert_eq!(found.len(), 1, "{name}: {found:?}");
    found[0]
}

fn names(graph: &ClassGraph<'_>, ids: &[ClassId]) -> Vec<String> {
    ids.iter().map(|&i| graph.class(i).name.clone()).collect()
}

fn base_names(graph: &ClassGraph<'_>, class: &str) -> Vec<String> {
    let node = graph.class(id(graph, class));
    node.bases
        .iter()
        .flat_map(|b| &b.targets)
        .map(|t| match t {
            BaseTarget::Class(c) => format!("{}:{}", graph.class(*c).module, graph.class(*c).name),
            BaseTarget::External(e) => format!("external {e}"),
            BaseTarget::Unresolved(why) => format!("unresolved: {why}"),
        })
        .collect()
}

#[test]
fn module_names_follow_the_source_root() {
    let p = project();
    assert_eq!(p.package(), "");
    let modules: Vec<&str> = p.files().iter().map(|f| f.module()).collect();
    assert_eq!(
        modules,
        [
            "app",
            "app.models",
            "app.models.base",
            "app.models.broken_syntax",
            "app.models.drafts",
            "app.models.dup",
            "app.models.latin1",
            "app.models.star_user",
            "app.models.wrapper",
            "libpkg",
            "libpkg.core",
            "libpkg.cycle_a",
            "libpkg.cycle_b",
            "libpkg.star_src",
        ]
    );
    assert!(p.module("libpkg").is_some_and(|f| f.is_package()));
    assert_eq!(
        p.module("app.models.wrapper").map(|f| f.relative_path()),
        Some("app/models/wrapper.py")
    );
}

#[test]
fn a_package_directory_is_named_after_itself_and_can_be_named_explicitly() {
    let app = Project::scan(&src().join("app")).unwrap();
    assert_eq!(app.package(), "app");
    assert!(app.module("app.models.wrapper").is_some());
    let models = Project::scan(&src().join("app/models")).unwrap();
    // `app/` has an `__init__.py`, so the package name extends upwards through it.
    assert_eq!(models.package(), "app.models");
    let named = Project::scan_with(&src().join("app/models"), &ScanOptions::with_package("x.y")).unwrap();
    assert!(named.module("x.y.base").is_some());
}

#[test]
fn import_tables_keep_aliases_relative_imports_and_stars() {
    let p = project();
    let index = p
        .files()
        .iter()
        .position(|f| f.module() == "app.models.wrapper")
        .unwrap();
    let facts = p.facts(index).unwrap();
    let table: Vec<(usize, &str, &str, Option<&str>, &str)> = facts
        .imports
        .iter()
        .map(|i| {
            (
                i.line,
                i.written.as_str(),
                i.module.as_str(),
                i.name.as_deref(),
                i.local.as_str(),
            )
        })
        .collect();
    assert_eq!(
        table,
        [
            (1, "torch", "torch", Some("nn"), "nn"),
            (3, "libpkg.core", "libpkg.core", None, "lc"),
            (4, "libpkg", "libpkg", Some("PublicEngine"), "PublicEngine"),
            (5, "libpkg.cycle_a", "libpkg.cycle_a", Some("Loop"), "Loop"),
            (7, ".", "app.models", Some("base"), "base"),
            (8, ".base", "app.models.base", Some("Diamond"), "D"),
        ]
    );
    let init = p.files().iter().position(|f| f.module() == "libpkg").unwrap();
    let stars: Vec<(&str, &str)> = p
        .facts(init)
        .unwrap()
        .imports
        .iter()
        .map(|i| (i.module.as_str(), i.local.as_str()))
        .collect();
    assert_eq!(stars, [("libpkg.core", "PublicEngine"), ("libpkg.star_src", "*")]);
}

#[test]
fn bases_resolve_across_modules() {
    let p = project();
    let g = p.graph(&Scope::Classes);
    assert_eq!(base_names(&g, "Engine"), ["external torch.nn.Module"]);
    // `import libpkg.core as lc` + `lc.Engine`.
    assert_eq!(base_names(&g, "Base"), ["libpkg.core:Engine"]);
    assert_eq!(
        base_names(&g, "Diamond"),
        ["app.models.base:Left", "app.models.base:Right"]
    );
    // `from libpkg.star_src import *` honours `__all__`.
    assert_eq!(base_names(&g, "UsesStar"), ["libpkg.star_src:Starred"]);
    assert_eq!(
        base_names(&g, "UsesHidden"),
        ["unresolved: `_Hidden` is not defined or imported in `app.models.star_user`"]
    );
    assert_eq!(
        base_names(&g, "Broken"),
        ["unresolved: `Missing` is not defined or imported in `app.models.wrapper`"]
    );
    assert_eq!(
        base_names(&g, "FromCycle"),
        ["unresolved: import cycle: app.models.wrapper.Loop -> libpkg.cycle_a.Loop -> libpkg.cycle_b.Loop -> libpkg.cycle_a.Loop"]
    );
}

#[test]
fn diamond_inheritance_linearizes_like_python() {
    let p = project();
    let g = p.graph(&Scope::Classes);
    let diamond = id(&g, "Diamond");
    assert_eq!(
        names(&g, g.mro(diamond)),
        ["Diamond", "Left", "Right", "Base", "Engine"]
    );
}

#[test]
fn a_class_defined_twice_is_reported_and_later_definitions_win() {
    let p = project();
    let g = p.graph(&Scope::Classes);
    let dups: Vec<&Diagnostic> = g
        .diagnostics()
        .iter()
        .filter(|d| matches!(d, Diagnostic::DuplicateClass { .. }))
        .collect();
    assert_eq!(
        dups,
        [
            &Diagnostic::DuplicateClass {
                file: "app/models/dup.py".into(),
                class: "Twice".into(),
                lines: vec![5, 9],
            },
            &Diagnostic::DuplicateClass {
                file: "app/models/dup.py".into(),
                class: "Maybe".into(),
                lines: vec![18, 21],
            },
        ]
    );
    // An unconditional redefinition shadows the first; definitions in `try` / `except` are
    // both candidates.
    assert_eq!(base_names(&g, "UsesTwice").len(), 1);
    let uses_twice = g.class(id(&g, "UsesTwice"));
    let BaseTarget::Class(twice) = uses_twice.bases[0].targets[0] else {
        panic!("{:?}", uses_twice.bases)
    };
    assert_eq!(g.class(twice).line, 9);
    let uses_maybe = g.class(id(&g, "UsesMaybe"));
    let lines: Vec<usize> = uses_maybe.bases[0]
        .targets
        .iter()
        .map(|t| match t {
            BaseTarget::Class(c) => g.class(*c).line,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(lines, [18, 21]);
}

#[test]
fn unresolvable_bases_and_unparsable_files_are_reported_not_fatal() {
    let p = project();
    let g = p.graph(&Scope::All);
    let unresolved: Vec<(String, usize, String)> = g
        .diagnostics()
        .iter()
        .filter_map(|d| match d {
            Diagnostic::UnresolvedBase { class, line, base, .. } => Some((class.clone(), *line, base.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        unresolved,
        [
            ("UsesHidden".to_string(), 8, "_Hidden".to_string()),
            ("Broken".to_string(), 41, "Missing".to_string()),
            ("FromCycle".to_string(), 45, "Loop".to_string()),
        ]
    );
    let problems: Vec<(String, usize)> = p
        .problems()
        .into_iter()
        .map(|f| (f.location.file, f.location.line))
        .collect();
    assert_eq!(
        problems,
        [
            ("app/models/broken_syntax.py".to_string(), 1),
            ("app/models/latin1.py".to_string(), 2),
        ]
    );
    // The message is the error's without its place: the fields hold that once.
    for problem in p.problems() {
        assert!(!problem.message.contains(&problem.location.file), "{problem:?}");
        assert!(!problem.message.is_empty(), "{problem:?}");
    }
}

#[test]
fn compositions_follow_branches_aliases_and_re_exports() {
    let p = project();
    let g = p.graph(&Scope::Classes);
    let wrapper = id(&g, "Wrapper");
    let comps: Vec<(String, String, usize, bool, bool)> = g
        .compositions_of(wrapper)
        .iter()
        .map(|(_, e)| {
            (
                e.attr.clone(),
                g.class(e.target).name.clone(),
                e.line,
                e.conditional,
                e.optional,
            )
        })
        .collect();
    assert_eq!(
        comps,
        [
            ("inner".to_string(), "Diamond".to_string(), 19, true, true),
            ("engine".to_string(), "Engine".to_string(), 22, false, false),
            ("side".to_string(), "Left".to_string(), 23, false, false),
        ]
    );
    // A subclass that does not override `__init__` gets them too.
    assert_eq!(g.compositions_of(id(&g, "SubWrapper")).len(), 3);
    let entries: Vec<String> = g.entries().iter().map(|(e, _, _)| g.class(*e).name.clone()).collect();
    assert_eq!(entries, ["FooMTPHolder", "Wrapper", "SubWrapper"]);
}

#[test]
fn chains_show_composition_and_inheritance_with_evidence() {
    let p = project();
    let chains = p.chains(Some("Wrapper"), "Engine", 10).unwrap();
    let text: Vec<String> = chains.iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        [
            "Wrapper -engine-> Engine",
            "Wrapper -inner-> Diamond ⊂ Left ⊂ Base ⊂ Engine",
            "Wrapper -side-> Left ⊂ Base ⊂ Engine",
        ]
    );
    assert_eq!(
        chains[1].evidence(3),
        "  app/models/wrapper.py:19  Wrapper.__init__: self.inner = D(...) [conditional, may be None]\n\
         \x20     used: app/models/wrapper.py:26  passed to route(model=self.inner) in forward\n\
         \x20     used: app/models/wrapper.py:33  returned by model\n\
         \x20 app/models/base.py:19  class Diamond(Left, Right)\n\
         \x20 app/models/base.py:9  class Left(Base)\n\
         \x20 app/models/base.py:4  class Base(lc.Engine)\n"
    );
    let Step::Holds { uses, .. } = &chains[0].steps[0] else {
        panic!("{:?}", chains[0])
    };
    let notes: Vec<&str> = uses.iter().map(|u| u.note.as_str()).collect();
    // Uses come from the holder's MRO: SubWrapper's `self.engine.stop()` is not Wrapper's.
    assert_eq!(notes, ["self.engine.run(...) in run"]);
    assert!(matches!(
        p.chains(Some("Starred"), "Engine", 10),
        Err(QueryError::NoChain { .. })
    ));
    let err = p.chains(Some("Wraper"), "Engine", 10).unwrap_err();
    assert!(
        matches!(&err, QueryError::UnknownClass { candidates, .. } if candidates.first().map(String::as_str) == Some("Wrapper")),
        "{err}"
    );
}

#[test]
fn reach_follows_inheritance_super_calls_and_flags_drafts() {
    let p = project();
    let reach = p.reach("Engine.run").unwrap();
    assert_eq!(reach.method, "Engine.run");
    let runners: Vec<(&str, &RunVia, bool)> = reach
        .runners
        .iter()
        .map(|r| (r.class.as_str(), &r.via, r.draft))
        .collect();
    let classes: Vec<&str> = runners.iter().map(|r| r.0).collect();
    // Every subclass, the first `Twice` and both `Maybe` definitions included.
    assert_eq!(
        classes,
        [
            "Engine",
            "Base",
            "Twice",
            "Maybe",
            "Left",
            "Right",
            "FooNextN",
            "UsesMaybe",
            "Diamond"
        ],
        "{reach}"
    );
    assert_eq!(runners[0], ("Engine", &RunVia::Defines, false));
    assert_eq!(runners[1], ("Base", &RunVia::Inherits, false));
    let by_name = |n: &str| reach.runners.iter().find(|r| r.class == n).map(|r| &r.via);
    assert_eq!(by_name("Left"), Some(&RunVia::Inherits));
    assert!(matches!(by_name("Diamond"), Some(RunVia::Super { through }) if through[0].line == 20));
    // `Base.run(self, x)`: an explicit call up.
    assert!(matches!(by_name("FooNextN"), Some(RunVia::Super { through }) if through[0].line == 10));
    let overridden: Vec<(&str, bool)> = reach
        .overridden_by
        .iter()
        .map(|r| (r.class.as_str(), r.draft))
        .collect();
    assert_eq!(overridden, [("FooEagle", true)]);
    let entries: Vec<(String, bool)> = reach.entries.iter().map(|e| (e.chain.to_string(), e.draft)).collect();
    assert_eq!(
        entries,
        [
            // One shortest chain per entry; the first composition in source order wins ties.
            (
                "SubWrapper ⊂ Wrapper -inner-> Diamond ⊂ Left ⊂ Base ⊂ Engine".to_string(),
                false
            ),
            ("Wrapper -inner-> Diamond ⊂ Left ⊂ Base ⊂ Engine".to_string(), false),
        ]
    );
    // The draft holder reaches nothing: FooEagle overrides `run`.
    let stop = p.reach("Engine.stop").unwrap();
    let holders: Vec<String> = stop.entries.iter().map(|e| e.chain.to_string()).collect();
    assert!(
        holders.contains(&"FooMTPHolder -draft-> FooEagle ⊂ Base ⊂ Engine".to_string()),
        "{holders:?}"
    );
    assert!(stop
        .entries
        .iter()
        .find(|e| e.class == "FooMTPHolder")
        .is_some_and(|e| e.draft));
}

#[test]
fn entry_lists_and_drafts_are_the_callers_conventions() {
    // Without conventions no variable lists entries and no name marks a draft.
    let plain = Project::scan(&src()).unwrap();
    let g = plain.graph(&Scope::Classes);
    assert!(g.entries().is_empty());
    assert!(g.classes().iter().all(|c| !c.draft));
    assert!(plain.reach("Engine.stop").unwrap().entries.is_empty());
    // Other names work the same way as SGLang's.
    let conventions = Conventions::default()
        .with_entry_list("EntryClass")
        .with_draft_markers(["holder"]);
    let custom = Project::scan_with(&src(), &ScanOptions::default().with_conventions(conventions)).unwrap();
    let g = custom.graph(&Scope::Classes);
    let drafts: Vec<&str> = g
        .classes()
        .iter()
        .filter(|c| c.draft)
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(drafts, ["FooMTPHolder"]);
    let entries: Vec<String> = g.entries().iter().map(|(e, _, _)| g.class(*e).name.clone()).collect();
    assert_eq!(entries, ["FooMTPHolder", "Wrapper", "SubWrapper"]);
}

#[test]
fn reach_errors_name_close_candidates() {
    let p = project();
    let err = p.reach("Engine.rn").unwrap_err();
    assert_eq!(
        err,
        QueryError::UnknownMethod {
            class: "Engine".into(),
            method: "rn".into(),
            candidates: vec!["run".into()],
        }
    );
    assert!(
        matches!(p.reach("Engin.run"), Err(QueryError::UnknownClass { candidates, .. }) if candidates[0] == "Engine")
    );
    assert!(matches!(p.reach("Engine"), Err(QueryError::BadPath { .. })));
    // Read by the same dotted-path reader as hook targets: no ordinal, no empty or odd part.
    for path in [
        "Engine.run#1",
        "Engine..run",
        "Engine.1run",
        "Engine#x.run",
        "Engine.<locals>.run",
    ] {
        assert!(
            matches!(p.reach(path), Err(QueryError::BadPath { ref reason, .. }) if reason == "each part must be a Python name"),
            "{path}"
        );
    }
}

#[test]
fn forwards_lists_public_methods_the_wrapper_lacks() {
    let p = project();
    let list = p.forwards("Wrapper").unwrap();
    let summary: Vec<(String, String, Vec<String>, Vec<String>)> = list
        .iter()
        .map(|f| {
            (
                f.attr.clone(),
                f.delegate.clone(),
                f.missing.iter().map(|m| m.name.clone()).collect(),
                f.exposed.iter().map(|m| m.name.clone()).collect(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                "inner".to_string(),
                "Diamond".to_string(),
                vec![
                    "left".to_string(),
                    "right".to_string(),
                    "speed".to_string(),
                    "stop".to_string()
                ],
                vec!["run".to_string()],
            ),
            (
                "engine".to_string(),
                "Engine".to_string(),
                vec!["speed".to_string(), "stop".to_string()],
                vec!["run".to_string()],
            ),
            (
                "side".to_string(),
                "Left".to_string(),
                vec!["left".to_string(), "speed".to_string(), "stop".to_string()],
                vec!["run".to_string()],
            ),
        ]
    );
    assert!(list[0].optional);
    assert_eq!(list[0].external_bases, ["torch.nn.Module"]);
    // A subclass adding `stop` exposes it; what the lead's engine asks before adding a forward.
    let g = p.graph(&Scope::Defining(vec!["SubWrapper".into()]));
    let sub = id(&g, "SubWrapper");
    assert_eq!(g.exposes(sub, "stop").map(|m| m.class), Some("SubWrapper".into()));
    assert_eq!(g.exposes(sub, "run").map(|m| m.class), Some("Wrapper".into()));
    assert_eq!(
        g.exposes(sub, "engine").map(|m| m.kind),
        Some("instance attribute".into())
    );
    assert!(g.exposes(sub, "speed").is_none());
    assert!(matches!(
        p.forwarding_need("Wrapper", "engine", "stop").unwrap(),
        ForwardNeed::Missing { delegate, member } if delegate == "Engine" && member.evidence.line == 12
    ));
    assert!(matches!(
        p.forwarding_need("SubWrapper", "engine", "stop").unwrap(),
        ForwardNeed::Exposed(m) if m.class == "SubWrapper"
    ));
    assert_eq!(
        p.forwarding_need("Wrapper", "engine", "fly").unwrap(),
        ForwardNeed::Absent
    );
    assert_eq!(
        p.forwarding_need("Wrapper", "inner", "right").unwrap(),
        ForwardNeed::Missing {
            delegate: "Diamond".into(),
            member: g_member(&p, "Right", "right"),
        }
    );
}

fn g_member(p: &Project, class: &str, name: &str) -> pysplice::project::Member {
    let g = p.graph(&Scope::Defining(vec![class.into()]));
    g.member(id(&g, class), name).unwrap()
}

#[test]
fn the_related_prefilter_parses_fewer_files_and_gives_the_same_answer() {
    let narrow = project();
    let reach = narrow.reach("Starred.go").unwrap();
    let parsed_narrow = narrow.stats().parsed;
    let wide = project();
    let g = wide.graph(&Scope::Classes);
    let all = g.reach(&g.find("Starred"), "go").unwrap();
    assert_eq!(reach, all);
    assert!(
        parsed_narrow < wide.stats().parsed,
        "{parsed_narrow} vs {:?}",
        wide.stats()
    );
    assert_eq!(narrow.stats().files, 14);
}

#[test]
fn scanning_a_missing_directory_is_an_io_error() {
    let err = Project::scan(&src().join("nope")).unwrap_err();
    assert!(matches!(err.kind(), pysplice::ErrorKind::Io { .. }), "{err}");
}
