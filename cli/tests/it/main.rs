//! The programs end to end (`pysplice`, `pysplice-lsp`, and `sglang-hs-dump` where it shares their
//! ways of writing files and output), run as users run them: exit codes, messages, JSON output and
//! the files' bytes before and after. The SGLang programs' own tests are `pysplice-sglang`'s.

mod common;

mod cli_code_from;
mod cli_folders;
mod cli_locate;
mod cli_markers;
mod cli_splice;
mod cli_version;
mod cli_writes;
mod expansion_limits;
mod graph_conventions;
mod hostile_input;
mod lsp;
mod lsp_config_files;
mod lsp_transport;
mod lsp_workspace;
mod schemas;
mod syntax_level;
