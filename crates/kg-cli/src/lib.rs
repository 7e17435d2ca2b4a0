//! KG Memory's command line: what the `kg-memory` binary's subcommands do beyond
//! running the server (kg-server) and talking to it (kg-client): the hook courier,
//! the stdio bridge, `status` and `doctor`'s checks, `setup`, `import` and `sync`.

pub mod doctor;
pub mod hook;
pub mod import;
pub mod route_check;
pub mod session_notice;
pub mod setup_cli;
pub mod stdio;
pub mod sync_cli;
