//! The `sglang-hs-send` command: the program is `pysplice_sglang::programs::hs_send`. A launcher
//! of a Python program, so it keeps the system allocator.

fn main() -> std::process::ExitCode {
    pysplice_sglang::programs::hs_send::main()
}
