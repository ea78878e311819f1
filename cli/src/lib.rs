//! What pysplice's programs (`pysplice`, `sglang-hs-dump`, `pysplice-lsp`) share: the versioned
//! JSON output contract of `--json` ([`contract`]). Not a library for other users: its layout is
//! the programs' output, documented by the JSON Schema under `schemas/`.
#![deny(missing_docs)]

pub mod contract;
pub mod installed;
