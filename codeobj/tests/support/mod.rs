//! What the code-object reader's integration tests share.

/// A committed seed of fuzz target `target` (`codeobj/fuzz/seeds/<target>/<name>`).
pub fn seed(target: &str, name: &str) -> Vec<u8> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(target)
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}
