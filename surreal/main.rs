//! `helpnow-surreal start --user root --pass ... --bind 127.0.0.1:8000 surrealkv://data/surreal`:
//! the SurrealDB server itself, the `surreal` binary's entry point from the `surrealdb-server`
//! crate, built with only the storage the product uses.

// The server's query engine nests deep async functions; a release build needs the same limit
// as the surreal binary's own crate.
#![recursion_limit = "256"]

use std::process::ExitCode;

use surrealdb_server::core::CommunityComposer;

/// A tuned allocator, as SurrealDB's own binary has (jemalloc there, through surrealdb-core's
/// `allocator` feature; that feature would also reach the product's build, which has its own):
/// mimalloc, as the product uses.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    surrealdb_server::init(CommunityComposer())
}
