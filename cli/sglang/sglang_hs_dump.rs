//! The `sglang-hs-dump` command: the program is `pysplice_sglang::programs::hs_dump`. A splicing
//! program, so it runs on the programs' allocator.

pysplice_programs::program_allocator!();

fn main() -> std::process::ExitCode {
    pysplice_sglang::programs::hs_dump::main()
}
