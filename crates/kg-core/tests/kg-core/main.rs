//! kg-core integration tests.

mod ambient;
mod compaction;
mod crash;
mod drop_in;
mod flood;
mod golden;
mod incoming;
mod invariants;
mod locks;
mod lossless;
mod ours_golden;
mod paths;
mod push;
mod rename;
mod secrets;
mod snapshot_fixtures;
mod snapshots;
mod stale_debt;
mod steps;
mod storage;
mod trust;
mod views;
