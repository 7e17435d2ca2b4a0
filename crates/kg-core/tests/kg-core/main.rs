//! kg-core integration tests.

mod ambient;
mod compaction;
mod crash;
mod flood;
mod golden;
mod invariants;
mod lossless;
mod ours_golden;
mod snapshots;
mod steps;
mod storage;
mod trust;
