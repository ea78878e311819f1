//! Class-graph queries on `sglang/srt/models` of every pinned SGLang release that ships
//! `kimi_k25.py`: the delegation chain from Kimi-K2.5 to `DeepseekV2Model`, what hooks in
//! `DeepseekV2Model.forward` and `DeepseekV2ForCausalLM.__init__` reach, and which methods the
//! Kimi-K2.5 wrapper does not forward. Snapshots hold only the answers and line references.
//! Needs the corpus: `bash scripts/fetch-corpus.sh`.

use crate::common;
use crate::snapshot_groups;

use std::fmt::Write as _;

use pysplice::project::{Project, Reach, RunVia, ScanOptions};
use rayon::prelude::*;

const KIMI: &str = "KimiK25ForConditionalGeneration";
const CHAIN: &str =
    "KimiK25ForConditionalGeneration -language_model-> DeepseekV3ForCausalLM ⊂ DeepseekV2ForCausalLM -model-> DeepseekV2Model";

/// The pinned releases that have `kimi_k25.py`.
/// SGLang's conventions (`EntryClass`, draft models by name).
fn sglang() -> ScanOptions {
    ScanOptions::default().with_conventions(pysplice_sglang::models::conventions())
}

fn kimi_versions() -> Vec<String> {
    let versions: Vec<String> = common::pinned_versions()
        .into_iter()
        .filter(|v| common::models_dir(v).join("kimi_k25.py").exists())
        .collect();
    assert_eq!(
        versions,
        [
            "0.5.9", "0.5.10", "0.5.11", "0.5.12", "0.5.13", "0.5.14", "0.5.16", "0.5.17", "0.5.18", "0.5.20",
            "0.5.22", "0.5.23"
        ]
    );
    versions
}

/// Every release with `kimi_k25.py`, scanned once for all the tests of this file (the
/// releases spread over the cores).
fn projects() -> &'static [(String, Project)] {
    static ALL: std::sync::OnceLock<Vec<(String, Project)>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        kimi_versions()
            .into_par_iter()
            .map(|v| {
                let project = Project::scan_with(&common::models_dir(&v), &sglang()).unwrap();
                (v, project)
            })
            .collect()
    })
}

/// Runners, overrides and one chain line per entry class: the small answer.
fn compact(reach: &Reach) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", reach.method);
    for d in &reach.defined_at {
        let _ = writeln!(out, "  defined at {}:{}", d.file, d.line);
    }
    let _ = writeln!(out, "runners:");
    for r in &reach.runners {
        let how = match &r.via {
            RunVia::Defines => "defines".to_string(),
            RunVia::Inherits => "inherits".to_string(),
            RunVia::Super { through } => {
                let at: Vec<String> = through.iter().map(|e| format!("{}:{}", e.file, e.line)).collect();
                format!("calls up from {}", at.join(", "))
            }
        };
        let draft = if r.draft { " [draft]" } else { "" };
        let _ = writeln!(
            out,
            "  {} {}:{} {how}{draft}",
            r.class, r.evidence.file, r.evidence.line
        );
    }
    let _ = writeln!(out, "overridden by:");
    for r in &reach.overridden_by {
        let draft = if r.draft { " [draft]" } else { "" };
        let _ = writeln!(out, "  {} {}:{}{draft}", r.class, r.evidence.file, r.evidence.line);
    }
    let _ = writeln!(out, "entries:");
    for e in &reach.entries {
        let draft = if e.draft { " [draft]" } else { "" };
        let _ = writeln!(out, "  {}{draft}", e.chain);
    }
    out
}

#[test]
fn kimi_k25_reaches_deepseek_v2_model_through_its_language_model() {
    let mut results = Vec::new();
    for (version, project) in projects() {
        assert_eq!(project.package(), "sglang.srt.models");
        let chains = project.chains(Some(KIMI), "DeepseekV2Model", 20).unwrap();
        assert_eq!(chains[0].to_string(), CHAIN, "{version}");
        let mut text = String::new();
        for chain in &chains {
            let _ = writeln!(text, "{chain}");
            text.push_str(&chain.evidence(3));
        }
        results.push((version.clone(), text));
    }
    snapshot_groups::assert_distinct("chain_kimi_k25", &results);
}

#[test]
fn hooks_in_deepseek_v2_reach_every_wrapper_and_flag_drafts() {
    let (mut forwards, mut inits) = (Vec::new(), Vec::new());
    for (version, project) in projects() {
        let forward = project.reach("DeepseekV2Model.forward").unwrap();
        let entries: Vec<&str> = forward.entries.iter().map(|e| e.class.as_str()).collect();
        assert!(entries.contains(&KIMI), "{version}: {entries:?}");
        let kimi = forward.entries.iter().find(|e| e.class == KIMI).unwrap();
        assert_eq!(kimi.chain.to_string(), CHAIN, "{version}");
        assert!(!kimi.draft);
        forwards.push((version.clone(), compact(&forward)));

        let init = project.reach("DeepseekV2ForCausalLM.__init__").unwrap();
        // The NextN/MTP draft overrides `__init__` without calling up: a hook there misses it.
        assert!(
            init.overridden_by
                .iter()
                .any(|r| r.class == "DeepseekV3ForCausalLMNextN" && r.draft),
            "{version}: {init}"
        );
        inits.push((version.clone(), compact(&init)));
    }
    snapshot_groups::assert_distinct("reach_forward", &forwards);
    snapshot_groups::assert_distinct("reach_init", &inits);
}

#[test]
fn kimi_k25_forwards_set_eagle3_layers_to_capture_from_0_5_10() {
    let mut results = Vec::new();
    for (version, project) in projects() {
        let list = project.forwards(KIMI).unwrap();
        let language_model = list
            .iter()
            .find(|f| f.attr == "language_model")
            .unwrap_or_else(|| panic!("{version}: no language_model delegate"));
        assert_eq!(language_model.delegate, "DeepseekV3ForCausalLM");
        let missing = language_model
            .missing
            .iter()
            .any(|m| m.name == "set_eagle3_layers_to_capture");
        assert_eq!(missing, version == "0.5.9", "{version}: {language_model}");
        let text: String = list.iter().map(ToString::to_string).collect();
        results.push((version.clone(), text));
    }
    snapshot_groups::assert_distinct("forwards_kimi_k25", &results);
}

#[test]
fn the_related_prefilter_gives_the_whole_graph_answer_on_the_newest_release() {
    let version = kimi_versions().pop().unwrap();
    let narrow = Project::scan_with(&common::models_dir(&version), &sglang()).unwrap();
    let wide = Project::scan_with(&common::models_dir(&version), &sglang()).unwrap();
    let graph = wide.graph(&pysplice::project::Scope::Classes);
    for path in ["DeepseekV2Model.forward", "DeepseekV2ForCausalLM.__init__"] {
        let (class, method) = path.split_once('.').unwrap();
        let expected = graph.reach(&graph.find(class), method).unwrap();
        assert_eq!(narrow.reach(path).unwrap(), expected, "{path}");
    }
    let (parsed, total) = (narrow.stats().parsed, wide.stats().parsed);
    assert!(
        parsed * 5 < total,
        "the prefilter parsed {parsed} files, the whole graph {total}"
    );
}
