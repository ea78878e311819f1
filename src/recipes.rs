//! Recipes that ship with pysplice, and what running them needs ([`sglang`]: the server flags per
//! SGLang release for [`SGLANG_HS_DUMP`]).

pub mod sglang;
pub mod sglang_models;

/// Dumps EAGLE-3 / SpecForge training hidden states from SGLang's `DeepseekV2Model`
/// (`sglang/srt/models/deepseek_v2.py`, SGLang 0.2.6 to 0.5.23; Kimi-K2.5 included) during
/// prefill passes, gated by `SGLANG_HS_DUMP_DIR`.
///
/// ```
/// let recipe = pysplice::Recipe::from_toml("sglang_hs_dump.toml", pysplice::recipes::SGLANG_HS_DUMP)?;
/// assert_eq!(recipe.id, "sglang-hs-dump");
/// # Ok::<(), pysplice::Error>(())
/// ```
pub const SGLANG_HS_DUMP: &str = include_str!("../recipes/sglang_hs_dump.toml");

/// The file of an SGLang tree that [`SGLANG_HS_DUMP`] patches.
pub const SGLANG_HS_DUMP_FILE: &str = "sglang/srt/models/deepseek_v2.py";

/// The targets of the hidden-state dump for every SGLang architecture with EAGLE-3 aux capture,
/// chosen by meaning (`[select.*]` tables); [`sglang_models::recipe`] adds the helpers of
/// [`SGLANG_HS_DUMP`].
pub const SGLANG_HS_DUMP_MODELS: &str = include_str!("../recipes/sglang_hs_dump_models.toml");
