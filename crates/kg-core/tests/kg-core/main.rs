//! kg-core integration tests.

mod ambient;
mod compaction;
mod crash;
mod golden;
mod golden_match;
mod lossless;
mod storage;
mod support;
