//! The library's corpus-heavy tests, one binary: other projects' files through the engine
//! (`py_projects`, `target/py-corpus`) and every class and def of the pinned SGLang releases
//! against CPython's `ast` (`sglang_outline`, `target/sglang-corpus`). `bash
//! scripts/fetch-corpus.sh` fetches both.

mod py_projects;
mod sglang_outline;
mod support;
