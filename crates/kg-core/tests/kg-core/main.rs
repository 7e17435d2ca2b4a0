//! kg-core integration tests.

mod ambient;
mod compaction;
mod crash;
mod golden;
mod golden_match;
mod invariants;
mod lossless;
mod snapshots;
mod storage;
mod support;
mod trust;
