//! Wall-clock formatting for transcripts and rollout file names, without a date crate.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A UTC calendar time with milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Utc {
    /// Year.
    pub year: i64,
    /// Month, 1–12.
    pub month: u32,
    /// Day of the month, 1–31.
    pub day: u32,
    /// Hour, 0–23.
    pub hour: u32,
    /// Minute.
    pub minute: u32,
    /// Second.
    pub second: u32,
    /// Millisecond.
    pub milli: u32,
}

impl Utc {
    /// The calendar time of `t` (times before 1970 clamp to the epoch).
    pub fn of(t: SystemTime) -> Utc {
        let since = t.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
        let secs = since.as_secs() as i64;
        let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
        let rem = secs.rem_euclid(86_400) as u32;
        Utc {
            year,
            month,
            day,
            hour: rem / 3600,
            minute: rem / 60 % 60,
            second: rem % 60,
            milli: since.subsec_millis(),
        }
    }

    /// `2026-11-23T15:02:27.030Z`, the form both CLIs write in their JSONL.
    pub fn iso(&self) -> String {
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second, self.milli
        )
    }

    /// `2026-11-23T15-02-15`, the stamp in a Codex rollout file name.
    pub fn file_stamp(&self) -> String {
        format!(
            "{:04}-{:02}-{:02}T{:02}-{:02}-{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }
}

/// The current time as `Utc`.
pub fn now() -> Utc {
    Utc::of(SystemTime::now())
}

/// Seconds since the epoch, now.
pub fn unix_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        let t = UNIX_EPOCH + Duration::from_millis(1_795_446_147_030);
        let u = Utc::of(t);
        assert_eq!(u.iso(), "2026-11-23T15:02:27.030Z");
        assert_eq!(u.file_stamp(), "2026-11-23T15-02-27");
        assert_eq!(Utc::of(UNIX_EPOCH).iso(), "1970-01-01T00:00:00.000Z");
        // A leap day.
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(Utc::of(leap).iso(), "2000-02-29T00:00:00.000Z");
    }
}
