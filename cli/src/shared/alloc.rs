//! The programs' allocator. A run builds and frees two syntax trees of a large file, a great
//! many small blocks, in a process that lives some tens of milliseconds: mimalloc serves those
//! faster than the system allocator (`scripts/bench-dry-run.sh` measures it). The library itself
//! leaves the allocator to whoever links it.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
