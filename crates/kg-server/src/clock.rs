//! Time: where "now" comes from, and how the server prints it.

use std::path::PathBuf;

/// Where "now" comes from. Logic never reads the system clock itself.
#[derive(Debug, Clone)]
pub enum Clock {
    System,
    /// Read from a file on every call (tests freeze and move time this way).
    File(PathBuf),
}

impl Clock {
    pub fn now(&self) -> f64 {
        let system = || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64())
        };
        match self {
            Clock::System => system(),
            Clock::File(path) => std::fs::read_to_string(path)
                .ok()
                .and_then(|t| t.trim().parse().ok())
                .unwrap_or_else(system),
        }
    }
}

/// A wall clock that moved this much more (or less) than the steady clock between two
/// looks has jumped: set by hand, corrected by NTP after a dead battery, a restored VM.
const JUMP_SECS: f64 = 3600.0;

/// Watches the wall clock against a steady one that never jumps (on Linux the boot
/// clock, which also counts time asleep, so a laptop's night in suspend is no jump).
#[derive(Debug, Default)]
pub struct ClockWatch {
    last: Option<(f64, f64)>,
}

impl ClockWatch {
    /// Look at the clock reading `now`: a jump since the last look, in words.
    pub fn look(&mut self, now: f64) -> Option<String> {
        let steady = steady_secs();
        let jump = self.last.and_then(|(then, then_steady)| {
            let off = (now - then) - (steady - then_steady);
            (off.abs() > JUMP_SECS).then(|| {
                let days = off.abs() / 86_400.0;
                let size = if days >= 1.0 {
                    format!("{days:.0} day(s)")
                } else {
                    format!("{:.0} minute(s)", off.abs() / 60.0)
                };
                let way = if off > 0.0 { "forward" } else { "back" };
                format!(
                    "the system clock jumped {way} by {size} (from {} to {})",
                    iso_utc(then + (steady - then_steady)),
                    iso_utc(now)
                )
            })
        });
        self.last = Some((now, steady));
        jump
    }
}

/// Seconds on a clock that only moves forward, at one second per second.
fn steady_secs() -> f64 {
    #[cfg(target_os = "linux")]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid timespec the call writes into; nothing else is touched.
        if unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) } == 0 {
            return ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9;
        }
    }
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_secs_f64()
}

/// `2026-11-20T12:00:00Z`-style UTC time. Plain arithmetic rather than jiff: it prints
/// every second an `f64` can name (a sessions file may hold any number), where jiff
/// stops at the years -9999 and 9999.
pub fn iso_utc(ts: f64) -> String {
    let secs = ts.floor() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since the epoch (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// `YYYY-MM-DD HH:MM` in local time: the zone `TZ` names, else the system's. A moment
/// outside the years -9999 to 9999 is printed in UTC, marked `UTC`.
pub fn local_minute(ts: f64) -> String {
    minute_in(ts, &jiff::tz::TimeZone::system())
}

fn minute_in(ts: f64, zone: &jiff::tz::TimeZone) -> String {
    match jiff::Timestamp::from_second(ts as i64) {
        Ok(t) => {
            let local = zone.to_datetime(t);
            format!(
                "{:04}-{:02}-{:02} {:02}:{:02}",
                local.year(),
                local.month(),
                local.day(),
                local.hour(),
                local.minute()
            )
        }
        Err(_) => {
            let iso = iso_utc(ts);
            format!("{} {} UTC", &iso[..10], &iso[11..16])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_dates() {
        assert_eq!(iso_utc(1_795_176_000.0), "2026-11-20T12:00:00Z");
        assert_eq!(iso_utc(0.0), "1970-01-01T00:00:00Z");
        assert_eq!(iso_utc(951_782_400.0), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn minute_stamp_has_the_reference_shape() {
        let s = local_minute(1_795_176_000.0);
        assert_eq!(&s[4..5], "-");
        assert_eq!(&s[13..14], ":");
    }

    #[test]
    fn minute_stamp_in_a_zone_with_summer_time() {
        let paris = jiff::tz::TimeZone::posix("CET-1CEST,M3.5.0,M10.5.0/3").expect("rule");
        // 2026-11-20T12:00:00Z is winter (UTC+1), 2026-07-01T12:00:00Z summer (UTC+2).
        assert_eq!(minute_in(1_795_176_000.0, &paris), "2026-11-20 13:00");
        assert_eq!(minute_in(1_782_907_200.0, &paris), "2026-07-01 14:00");
        assert_eq!(
            minute_in(59.9, &jiff::tz::TimeZone::UTC),
            "1970-01-01 00:00"
        );
        assert_eq!(
            minute_in(-0.5, &jiff::tz::TimeZone::UTC),
            "1970-01-01 00:00"
        );
        assert_eq!(
            minute_in(-61.0, &jiff::tz::TimeZone::UTC),
            "1969-12-31 23:58"
        );
    }
}
