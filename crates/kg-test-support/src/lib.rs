//! What KG Memory's tests and benches share (a dev-dependency, never published):
//!
//! - [`kg_memory_bin`]: the `kg-memory` binary, built if need be;
//! - [`golden`]: the reference fixtures, the comparison with their golden outputs, and
//!   [`reference_cases!`], one test per case;
//! - [`home`]: temporary homes and storage roots, empty or copied from the fixtures;
//! - [`hook`]: Claude Code's hook JSON, read and answered for in-process ambient tests;
//! - [`graphs`]: realistic graphs for kg-core's benchmarks;
//! - [`layering`]: the check that a crate's modules import each other without a circle;
//! - [`structure`]: the check that no Rust file is over 800 lines of code;
//! - with the `server` feature, for kg-server's tests and benches: [`serve`] (the
//!   `kg-memory serve` child process), [`http`] (raw HTTP/1.1 and MCP over it) and
//!   [`ws`] (WebSocket clients).

mod binary;
pub mod golden;
pub mod graphs;
pub mod home;
pub mod hook;
#[cfg(feature = "server")]
pub mod http;
pub mod layering;
#[cfg(feature = "server")]
pub mod serve;
pub mod structure;
#[cfg(feature = "server")]
pub mod ws;

pub use binary::kg_memory_bin;
pub use home::{TempHome, open_store, open_store_with, temp_home};

/// The frozen instant of the fixtures: 2026-11-20 12:00:00 UTC.
pub const T: f64 = 1_795_176_000.0;
