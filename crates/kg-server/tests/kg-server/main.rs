//! kg-server end-to-end tests: the real binary over real HTTP.

mod activity;
mod concurrency;
mod conflicts;
mod connections;
mod crash;
mod cross_site;
mod faults;
mod golden_wire;
mod hooks;
mod hostile;
mod http;
mod import;
mod load;
mod rename_lock;
mod rmcp_client;
mod root_lock;
mod router;
mod server;
mod stable_paths;
mod stale;
mod steps;
mod sync;
mod sync_live;
mod view_grace;
mod wire;
mod wiring;
