//! The hidden-state dump for every SGLang architecture with aux capture, on the pinned releases.

use pysplice::project::select;
use pysplice::project::Project;

fn corpus() -> std::path::PathBuf {
    std::env::var_os("PYSPLICE_CORPUS").map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/sglang-corpus"),
        std::path::PathBuf::from,
    )
}

#[test]
fn explore() {
    let recipe = pysplice::recipes::sglang_models::recipe().unwrap();
    for v in ["0.5.2", "0.5.23"] {
        let dir = corpus().join(v).join("sglang/srt/models");
        let project = Project::scan(&dir).unwrap();
        let sel = select::select(&project, &recipe);
        for r in &sel.roots {
            println!("{v} {} ({}) skipped={:?}", r.class, r.file, r.skipped);
            for t in &r.targets {
                println!("    {} {}:{} via {}", t.hook, t.file, t.path, t.via);
            }
        }
    }
}
