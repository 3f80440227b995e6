//! Time: deadlines that saturate instead of overflowing, and the calendar (jiff) for run ids,
//! HTTP dates and the reset times agents print. Reads the clock only where a caller asks for
//! `now`; decides nothing.

use std::time::{Duration, Instant, SystemTime};

use jiff::civil::DateTime;
use jiff::fmt::friendly::SpanParser;
use jiff::tz::TimeZone;
use jiff::{SpanRelativeTo, Timestamp};

/// Far enough to mean "never" for any deadline swarm keeps.
const FAR: Duration = Duration::from_secs(100 * 365 * 86_400);

/// `after` past `from`; a duration past what the clock can hold gives a deadline a century out
/// instead of a panic.
pub(crate) fn deadline(from: Instant, after: Duration) -> Instant {
    from.checked_add(after)
        .or_else(|| from.checked_add(FAR))
        .unwrap_or(from)
}

/// The moment, and the zone a time said without one is read in.
#[derive(Debug, Clone)]
pub struct Now {
    pub at: Timestamp,
    pub zone: TimeZone,
}

impl Now {
    /// The clock and the machine's zone (`TZ`, else `/etc/localtime`, else UTC), as the agents'
    /// CLIs print their times in it.
    pub fn here() -> Self {
        Self {
            at: Timestamp::now(),
            zone: TimeZone::system(),
        }
    }

    /// A fixed moment read in UTC (tests).
    pub fn utc(at: SystemTime) -> Self {
        Self {
            at: Timestamp::try_from(at).unwrap_or(Timestamp::UNIX_EPOCH),
            zone: TimeZone::UTC,
        }
    }
}

/// A duration in jiff's friendly format: numbers with units, largest first (`90s`, `1h30m`,
/// `1h 30m`, `2d`, `500ms`, a fraction on the last unit as in `1.5h`, long names as in
/// `1 hour 30 minutes`, or `01:30:00`), a day being 24 hours and a week 7 days: the length of
/// time meant, not a span of the calendar. `None` when it is none of these, is negative, or
/// names months or years.
pub(crate) fn friendly_duration(text: &str) -> Option<Duration> {
    const PARSER: SpanParser = SpanParser::new();
    let span = PARSER.parse_span(text).ok()?;
    let signed = span.to_duration(SpanRelativeTo::days_are_24_hours()).ok()?;
    Duration::try_from(signed).ok()
}

/// An HTTP date in any of the three forms RFC 9110 §5.6.7 has recipients accept: the
/// IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`, the obsolete RFC 850 `Sunday, 06-Nov-94
/// 08:49:37 GMT` and asctime's `Sun Nov  6 08:49:37 1994`.
pub(crate) fn http_date(value: &str) -> Option<SystemTime> {
    let value = value.trim();
    if let Ok(z) = jiff::fmt::rfc2822::parse(value) {
        return Some(z.timestamp().into());
    }
    // asctime pads a one-digit day with a space; jiff's `%e` takes it without.
    let single_spaced = value.split_ascii_whitespace().collect::<Vec<_>>().join(" ");
    for format in ["%A, %d-%b-%y %H:%M:%S GMT", "%a %b %e %H:%M:%S %Y"] {
        if let Ok(dt) = DateTime::strptime(format, &single_spaced) {
            return dt
                .to_zoned(TimeZone::UTC)
                .ok()
                .map(|z| z.timestamp().into());
        }
    }
    None
}

/// A run id's time part: UTC, `20261129-071300`.
pub(crate) fn run_id_stamp(at: Timestamp) -> String {
    at.strftime("%Y%m%d-%H%M%S").to_string()
}

/// A time the board holds (milliseconds since the epoch) in the machine's zone, to the minute:
/// `2026-11-29 07:13`.
pub(crate) fn local_minute(ms: i64) -> String {
    local(ms, "%Y-%m-%d %H:%M", &TimeZone::system())
}

/// The same to the second: `2026-11-29 07:13:02`.
pub(crate) fn local_second(ms: i64) -> String {
    local(ms, "%Y-%m-%d %H:%M:%S", &TimeZone::system())
}

fn local(ms: i64, format: &str, zone: &TimeZone) -> String {
    Timestamp::from_millisecond(ms).map_or_else(
        |_| "?".to_owned(),
        |t| t.to_zoned(zone.clone()).strftime(format).to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(v: &str) -> Option<u64> {
        http_date(v).map(|t| t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs())
    }

    #[test]
    fn http_dates_are_read_in_all_three_forms() {
        assert_eq!(secs("Sun, 06 Nov 1994 08:49:37 GMT"), Some(784_111_777));
        assert_eq!(secs("Sunday, 06-Nov-94 08:49:37 GMT"), Some(784_111_777));
        assert_eq!(secs("Sun Nov  6 08:49:37 1994"), Some(784_111_777));
        assert_eq!(secs("Thu, 29 Feb 2024 23:59:59 GMT"), Some(1_709_251_199));
        assert_eq!(secs("Wed, 21 Foo 2015 07:28:00 GMT"), None);
        assert_eq!(secs("Fri, 30 Feb 2024 00:00:00 GMT"), None);
        assert_eq!(secs("soon"), None);
    }

    #[test]
    fn a_deadline_past_the_clock_saturates() {
        let now = Instant::now();
        assert_eq!(
            deadline(now, Duration::from_secs(5)),
            now + Duration::from_secs(5)
        );
        assert!(deadline(now, Duration::MAX) > now + Duration::from_secs(86_400 * 365));
    }

    #[test]
    fn run_ids_carry_the_utc_time() {
        let at = Timestamp::from_second(1_795_000_000).unwrap();
        assert_eq!(run_id_stamp(at), "20261118-110640");
    }

    #[test]
    fn board_times_read_in_a_zone() {
        let zone = TimeZone::get("Europe/Paris").unwrap();
        assert_eq!(
            local(1_795_000_000_000, "%Y-%m-%d %H:%M", &zone),
            "2026-11-18 12:06"
        );
        assert_eq!(local(i64::MAX, "%Y", &zone), "?");
    }
}
