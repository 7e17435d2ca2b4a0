//! KG Memory's server: the memory store behind MCP (stateless streamable HTTP), a REST
//! API, a WebSocket of live changes and background maintenance. The `kg-memory`
//! binary runs it headless; the tray app runs it in-process.

pub mod activity;
pub mod agent_files;
pub mod app;
pub mod clock;
pub mod config;
pub mod connections;
pub mod doctor;
pub mod hook;
pub mod import;
pub mod install;
pub mod launch;
pub mod listener;
pub mod logging;
pub mod mcp;
pub mod payload;
pub mod permissions;
pub mod renames;
pub mod rest;
pub mod root_lock;
pub mod route_check;
pub mod session_notice;
pub mod setup_cli;
pub mod state;
pub mod stdio;
pub mod steps;
pub mod sync;
pub mod sync_cli;
pub mod sync_routes;
pub mod tasks;
pub mod terminal;
mod tools;
pub mod view;
pub mod ws;

pub use app::{ServeError, bind, serve};
pub use config::Settings;
pub use state::{AppState, OpenError, VERSION};
