//! The log setup of the `kg-memory` binary and the tray app: one line per event on
//! standard error, `LEVEL message`, from KG Memory's own crates only, at the level
//! `KG_LOG_LEVEL` names.
//!
//! The crates log with the `log` macros (kg-core depends on nothing else); tracing-log
//! carries those records into the one `tracing` subscriber set up here, beside the
//! native `tracing` events.

use std::fmt;
use tracing::{Event, Subscriber};
use tracing_subscriber::Layer as _;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt as _;

/// The variable that sets how much is logged.
pub const LEVEL_VAR: &str = "KG_LOG_LEVEL";

/// Log from here on, at the level `KG_LOG_LEVEL` names (see [`level`]). Only the first
/// call in a process takes effect.
pub fn init() {
    let level = level(std::env::var(LEVEL_VAR).ok().as_deref());
    // Targets match by prefix: kg_core, kg_server, kg_cli, kg_memory (the binary) and
    // kg_memory_app (the tray); the libraries underneath stay quiet.
    let ours = Targets::new()
        .with_target("kg_", level)
        .with_target("kg-memory", level);
    let lines = tracing_subscriber::fmt::layer()
        .event_format(Line)
        .with_writer(std::io::stderr)
        .with_filter(ours);
    // Fails only when a subscriber or a `log` logger is already set: keep that one.
    let _ = tracing_subscriber::registry().with(lines).try_init();
}

/// The level a `KG_LOG_LEVEL` value names, in any case: the Python implementation's
/// names (`DEBUG`, `INFO`, `WARNING`, `ERROR`, `CRITICAL`) and Rust's (`trace`, `debug`,
/// `info`, `warn`, `error`). Anything else, or no value, is INFO.
pub fn level(name: Option<&str>) -> LevelFilter {
    match name.map(str::to_ascii_lowercase).as_deref() {
        Some("trace") => LevelFilter::TRACE,
        Some("debug") => LevelFilter::DEBUG,
        Some("warning" | "warn") => LevelFilter::WARN,
        Some("error" | "critical") => LevelFilter::ERROR,
        _ => LevelFilter::INFO,
    }
}

/// `INFO message`: the level, a space, the message (and any other fields), no time.
#[derive(Debug)]
struct Line;

impl<S, N> FormatEvent<S, N> for Line
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        write!(writer, "{} ", event.metadata().level())?;
        ctx.format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_and_rust_level_names_in_any_case() {
        for (name, want) in [
            ("DEBUG", LevelFilter::DEBUG),
            ("debug", LevelFilter::DEBUG),
            ("INFO", LevelFilter::INFO),
            ("WARNING", LevelFilter::WARN),
            ("Warn", LevelFilter::WARN),
            ("ERROR", LevelFilter::ERROR),
            ("CRITICAL", LevelFilter::ERROR),
            ("trace", LevelFilter::TRACE),
        ] {
            assert_eq!(level(Some(name)), want, "{name}");
        }
        assert_eq!(level(None), LevelFilter::INFO);
        assert_eq!(level(Some("loud")), LevelFilter::INFO);
    }
}
