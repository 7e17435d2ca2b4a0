//! kg-core integration tests.

mod golden;
mod golden_match;
mod support;
