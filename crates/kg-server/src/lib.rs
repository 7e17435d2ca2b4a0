//! KG Memory's server: the memory store behind MCP (stateless streamable HTTP), a REST
//! API, a WebSocket of live changes and background maintenance, and what the front
//! ends share to reach it (settings, the root lock, how a server is launched). The
//! `kg-memory` binary (crates/kg-cli) runs it headless; the tray app runs it in-process.

mod activity;
mod agent_files;
pub mod app;
pub mod clock;
pub mod config;
mod connections;
mod hook_json;
pub mod import;
pub mod launch;
pub mod listener;
pub mod logging;
mod mcp;
pub mod payload;
mod permissions;
mod renames;
mod rest;
pub mod root_lock;
mod state;
mod steps;
pub mod sync;
mod sync_routes;
mod tasks;
pub mod terminal;
mod tools;
mod view;
mod ws;

// What the binary, the tray and the tests use is public; the routers, the shared
// state's internals and the helpers behind them are not.
pub use app::{ServeError, bind, serve};
pub use config::Settings;
pub use state::{AppState, OpenError, VERSION};
