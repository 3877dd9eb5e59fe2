//! `helpnow-surreal start --user root --pass ... --bind 127.0.0.1:8000 surrealkv://data/surreal`:
//! the SurrealDB server itself, the `surreal` binary's entry point from the `surrealdb-server`
//! crate, built with only the storage the product uses.

use std::process::ExitCode;

use surrealdb_server::core::CommunityComposer;

fn main() -> ExitCode {
    surrealdb_server::init(CommunityComposer())
}
