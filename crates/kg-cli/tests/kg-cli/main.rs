//! kg-cli's own tests. The subcommands are tested end to end against a real server in
//! kg-server's test target (crates/kg-server/tests/kg-server/), which runs this
//! package's `kg-memory`.

mod layering;
