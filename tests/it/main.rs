//! The library's integration tests, one binary with a module per stage: the API's flow from parse
//! to write (plan, apply, outcomes, the builder), parsing and the outline, the compile checks,
//! the engine (with the templates' captures and parameters), the project graph, the document
//! API, generated-input
//! properties, hostile input, expansion limits, the public API, the layering rules read from
//! `src/`, and the snapshot folder itself.
//!
//! The corpus-heavy library tests (other projects' files, every pinned SGLang release against
//! CPython) are the `corpus` binary (`tests/corpus/`).

mod api;
mod captures;
mod code_from;
mod compile_check;
mod document;
mod engine;
mod folder_swaps;
mod hostile;
mod layers;
mod limits;
mod outline;
mod params;
mod parse;
mod project;
mod props;
mod public_api;
mod snapshots;
mod support;
