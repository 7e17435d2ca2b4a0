//! The `kg-memory` binary for tests and benches outside kg-cli, the package that owns
//! it (cargo gives `CARGO_BIN_EXE_kg-memory` only to that package's own targets).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// `KG_MEMORY_BIN` when set (scripts/test.sh sets it after building every binary);
/// else the `kg-memory` beside this test's own build (`target/debug/kg-memory`),
/// built first with cargo so it is never older than the code under test.
pub fn kg_memory_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(bin) = std::env::var_os("KG_MEMORY_BIN") {
            return bin.into();
        }
        let exe = std::env::current_exe().expect("this test's path");
        // target/<profile>/deps/<test> → target/<profile>
        let dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("the test's target folder");
        let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
        cargo.args(["build", "--quiet", "-p", "kg-cli", "--bin", "kg-memory"]);
        if dir.file_name().is_some_and(|n| n == "release") {
            cargo.arg("--release");
        }
        let built = cargo.status().is_ok_and(|s| s.success());
        let bin = dir.join(format!("kg-memory{}", std::env::consts::EXE_SUFFIX));
        assert!(
            built && bin.exists(),
            "cannot build {}: run `cargo build -p kg-cli --bin kg-memory` (or set \
             KG_MEMORY_BIN to a built one)",
            bin.display()
        );
        bin
    })
}
