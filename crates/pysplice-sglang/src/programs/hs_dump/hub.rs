//! `--model-path` as SGLang users write it: a local folder, or a Hugging Face hub id
//! (`Qwen/Qwen3-30B-A3B`) found in the local hub cache.

use std::path::{Path, PathBuf};

use pysplice::Error;
use pysplice_programs::errln;

use crate::models as sglang_models;

/// The `architectures` of the model `given` names: its `config.json` when it is a local path;
/// for a hub id with no such path, the one snapshot of it in the local hub cache that has a
/// `config.json` (said on standard error), else an error saying to pass the snapshot folder.
pub fn architectures(given: &Path) -> Result<Vec<String>, Error> {
    if given.exists() {
        return sglang_models::architectures(given);
    }
    let Some(id) = hub_id(given) else {
        return sglang_models::architectures(given);
    };
    let cache = cache_dir();
    let shown_cache = cache.as_ref().map_or_else(
        || "no cache folder: HOME is not set".to_string(),
        |c| c.display().to_string(),
    );
    let snapshots = cache.as_deref().map(|c| snapshots(c, id)).unwrap_or_default();
    match snapshots.as_slice() {
        [one] => {
            errln!(
                "note: --model-path {id} is a Hugging Face hub id; using its snapshot {} from the local hub cache",
                pysplice::report::printable(&one.display().to_string())
            );
            sglang_models::architectures(one)
        }
        [] => Err(sglang_models::usage_error(
            given,
            format!(
                "no such folder; this looks like a Hugging Face hub id, and the local hub cache ({shown_cache}) holds \
                 no snapshot of it with a config.json: download it (`huggingface-cli download {id}`) or pass the \
                 local folder of the model (its snapshot folder, which holds config.json)"
            ),
        )),
        many => {
            let list: Vec<String> = many.iter().map(|p| p.display().to_string()).collect();
            Err(sglang_models::usage_error(
                given,
                format!(
                    "no such folder; this looks like a Hugging Face hub id, and the local hub cache holds {} \
                     snapshots of it: pass the one to use as --model-path ({})",
                    many.len(),
                    pysplice::report::printable(&list.join(", "))
                ),
            ))
        }
    }
}

/// `owner/name` when `path` reads as a hub id: two parts of letters, digits, `-`, `_`, `.`,
/// neither starting with `.` (so never `..` or a hidden folder).
fn hub_id(path: &Path) -> Option<&str> {
    let text = path.to_str()?;
    let (owner, name) = text.split_once('/')?;
    let part = |p: &str| {
        !p.is_empty()
            && p.len() <= 96
            && !p.starts_with('.')
            && p.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    };
    (part(owner) && part(name)).then_some(text)
}

/// The hub cache as `huggingface_hub` finds it: `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else
/// `~/.cache/huggingface/hub`.
fn cache_dir() -> Option<PathBuf> {
    let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    set("HF_HUB_CACHE")
        .or_else(|| set("HF_HOME").map(|home| home.join("hub")))
        .or_else(|| set("HOME").map(|home| home.join(".cache/huggingface/hub")))
}

/// The snapshot folders of `id` in `cache` that hold a `config.json`, sorted.
fn snapshots(cache: &Path, id: &str) -> Vec<PathBuf> {
    let folder = cache
        .join(format!("models--{}", id.replace('/', "--")))
        .join("snapshots");
    let mut out: Vec<PathBuf> = std::fs::read_dir(folder)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.join("config.json").is_file())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}
