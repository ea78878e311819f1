//! The programs end to end (`pysplice`, `sglang-hs-dump`, `pysplice-lsp`, the launcher of
//! `sglang-hs-inspect`), run as users run them: exit codes, messages, JSON output and the files'
//! bytes before and after.

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
mod launch_flags;
mod lsp;
mod lsp_config_files;
mod lsp_transport;
mod lsp_workspace;
mod schemas;
mod sglang_dump;
mod sglang_hs_inspect;
mod sglang_installed_probe;
mod sglang_models_cli;
mod sglang_trips;
mod syntax_level;
