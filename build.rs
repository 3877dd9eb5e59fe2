//! Embeds every `surreal/migrations/NNNN_name.surql` into the binary, in name order, so a deployed
//! binary carries its own schema and a new migration needs no code change.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    // The manifest's folder as Cargo gives it to this run, not as it was when this script was
    // compiled: two checkouts sharing a target folder share the compiled script too.
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = Path::new(&manifest).join("surreal").join("migrations");
    println!("cargo:rerun-if-changed={}", dir.display());

    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "surql"))
        .collect();
    files.sort();

    let mut code = String::from("pub static MIGRATIONS: &[Migration] = &[\n");
    for path in &files {
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_owned();
        let valid = name.len() > 5
            && name.as_bytes()[..4].iter().all(u8::is_ascii_digit)
            && name.as_bytes()[4] == b'_';
        assert!(
            valid,
            "migration file {} must be named NNNN_name.surql",
            path.display()
        );
        println!("cargo:rerun-if-changed={}", path.display());
        writeln!(
            code,
            "    Migration {{ name: {name:?}, sql: include_str!({:?}) }},",
            path.display().to_string()
        )
        .expect("writing to a String cannot fail");
    }
    code.push_str("];\n");

    let out =
        Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("migrations.rs");
    std::fs::write(&out, code)
        .unwrap_or_else(|err| panic!("cannot write {}: {err}", out.display()));
}
