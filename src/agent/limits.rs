//! Usage limits as the coding-agent CLIs report them: which messages name one, whether any wait
//! ends it, and when it resets, from the forms the CLIs print (a Unix time, "in 3 hours", a
//! clock time with or without a date and zone).

use std::sync::LazyLock;
use std::time::SystemTime;

use jiff::civil::{Date, Time};
use jiff::tz::{Offset, TimeZone};
use jiff::{SignedDuration, Timestamp};
use regex::Regex;

use super::cli::{Now, UsageLimit};

// The patterns below are constants that a unit test compiles; one that failed to would match
// nothing rather than stop a run.

/// Phrases that mean the account is out of usage (not a transient rate limit such as
/// `API Error: Rate limit reached` or `529 Overloaded`, which a retry may cure).
static LIMIT: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)usage limit (?:has been )?reached|hit your (?:[\w'’-]+ ){0,4}limit|\b(?:5-hour|five-hour|weekly|session|opus|sonnet) limit reached|limit reached\s*\|\s*\d|out of (?:extra )?(?:usage|credits)|credit balance is too low|(?:spend|usage credit) limit reached|quota exceeded|usage_limit_reached",
    )
    .ok()
});

/// Limits that no wait ends: a spend cap or credits, raised or bought by a person. Without a
/// reset time in the message, the run stops for them instead of waiting.
static LASTING: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)spend limit|usage credit limit|credit balance|out of credits").ok()
});

/// How a usage-limit message opens when it is the whole of a result.
pub(super) static LIMIT_OPENING: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^(?:claude ai usage limit reached|claude usage limit reached|usage limit reached|you've hit your|you have hit your|you're out of|(?:5-hour|five-hour|weekly|session|opus|sonnet) limit reached)",
    )
    .ok()
});

/// `Claude AI usage limit reached|1749924000`.
static EPOCH: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?i)limit[^|\n]*\|\s*(\d{9,12})\b").ok());

/// `try again in 3 days 2 hours 11 minutes`, `resets in 45 minutes`.
static RELATIVE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:try again|retry|resets?)\s+in\s+((?:\d+\s*(?:days?|hours?|hrs?|minutes?|mins?|seconds?|secs?|[dhms])\b[\s,]*(?:and\s+)?)+)",
    )
    .ok()
});

static RELATIVE_PART: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?i)(\d+)\s*([dhms])").ok());

/// `try again at Mar 10th, 2026 3:39 AM`, `try again at 3:42 PM`, `resets 3pm`,
/// `resets Apr 23 at 4pm (America/Recife)`, `will reset at 1pm (Etc/GMT+5)`.
static CLOCK: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?ix)
        \b(?:try\ again\ at|resets?\ at|resets)\s+
        (?:(?P<mon>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+
           (?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s*
           (?:(?P<year>\d{4}),?\s*)?
           (?:at\s+)?)?
        (?P<hour>\d{1,2})(?::(?P<min>\d{2}))?\s*(?P<ampm>[ap]\.?m\.?)?
        (?:\s*\((?P<zone>[^)]+)\))?",
    )
    .ok()
});

pub(super) fn usage_limit(message: &str, now: &Now) -> Option<UsageLimit> {
    LIMIT
        .as_ref()
        .is_some_and(|r| r.is_match(message))
        .then(|| limit_of(message, now))
}

/// The usage limit a message names, known to be one.
pub(super) fn limit_of(message: &str, now: &Now) -> UsageLimit {
    let resets_at = reset_time(message, now);
    UsageLimit {
        message: message.trim().to_owned(),
        lasting: resets_at.is_none() && LASTING.as_ref().is_some_and(|r| r.is_match(message)),
        resets_at,
    }
}

/// When a usage limit resets, from what the agent said. Times too far out for the calendar are
/// the calendar's end: a reset that far away stops the run like any other too long to wait.
fn reset_time(message: &str, now: &Now) -> Option<SystemTime> {
    if let Some(c) = EPOCH.as_ref().and_then(|r| r.captures(message)) {
        let secs: i64 = c[1].parse().ok()?;
        return Timestamp::from_second(secs).ok().map(SystemTime::from);
    }
    if let Some(c) = RELATIVE.as_ref().and_then(|r| r.captures(message)) {
        let secs = RELATIVE_PART
            .iter()
            .flat_map(|r| r.captures_iter(&c[1]))
            .fold(0_i64, |sum, p| {
                let n: i64 = p[1].parse().unwrap_or(i64::MAX);
                let unit = match p[2].to_ascii_lowercase().as_str() {
                    "d" => 86_400,
                    "h" => 3_600,
                    "m" => 60,
                    _ => 1,
                };
                sum.saturating_add(n.saturating_mul(unit))
            });
        let at = now
            .at
            .checked_add(SignedDuration::from_secs(secs))
            .unwrap_or(Timestamp::MAX);
        return Some(at.into());
    }
    let c = CLOCK.as_ref()?.captures(message)?;
    let mut hour: i8 = c["hour"].parse().ok()?;
    let minute: i8 = c.name("min").map_or(Some(0), |m| m.as_str().parse().ok())?;
    match c.name("ampm").map(|m| m.as_str().to_ascii_lowercase()) {
        Some(ampm) if (1..=12).contains(&hour) => {
            hour %= 12;
            if ampm.starts_with('p') {
                hour += 12;
            }
        }
        Some(_) => return None,
        // A bare number ("resets 3") is no time; "15:00" is.
        None if c.name("min").is_none() => return None,
        None => {}
    }
    // Printed to the minute: the reset falls somewhere in it, so the wait is to its end.
    let time = Time::new(hour, minute, 0, 0).ok()?;
    let end_of_minute = SignedDuration::from_secs(60);
    // Neither CLI names a zone every time: codex prints the machine's local time, Claude Code
    // sometimes just "resets 3pm"; a time without a zone is read in the machine's zone. A zone
    // the database does not know leaves the reset time unknown rather than wrong by hours.
    let zone = match c.name("zone") {
        None => now.zone.clone(),
        Some(zone) => zone_named(zone.as_str())?,
    };
    let here = now.at.to_zoned(zone.clone());
    let at = if let Some(mon) = c.name("mon") {
        let month = month_number(mon.as_str())?;
        let day: i8 = c["day"].parse().ok()?;
        let said_year: Option<i16> = c.name("year").and_then(|y| y.as_str().parse().ok());
        let on = |year: i16| {
            Date::new(year, month, day)
                .ok()?
                .to_datetime(time)
                .to_zoned(zone.clone())
                .ok()
        };
        let first = on(said_year.unwrap_or(here.year()))?
            .checked_add(end_of_minute)
            .ok()?;
        // "resets Jan 2" said on Dec 30 means next year.
        if said_year.is_none() && first.timestamp() + SignedDuration::from_hours(24) < now.at {
            on(here.year().checked_add(1)?)?
                .checked_add(end_of_minute)
                .ok()?
        } else {
            first
        }
    } else {
        let today = here
            .date()
            .to_datetime(time)
            .to_zoned(zone)
            .ok()?
            .checked_add(end_of_minute)
            .ok()?;
        if today.timestamp() > now.at {
            today
        } else if now.at.duration_since(today.timestamp()) < SignedDuration::from_hours(1) {
            // A reset just past by this machine's clock, said by an agent whose provider has not
            // reset yet: the clocks differ a little, not by a day. Another minute, not tomorrow.
            return Some((now.at + end_of_minute).into());
        } else {
            today.tomorrow().ok()?
        }
    };
    Some(at.timestamp().into())
}

/// A zone named as UTC or a fixed offset from it.
static FIXED: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)^(etc/)?(?:utc|gmt|z|zulu|universal)(?:([+-])(\d{1,2})(?::?(\d{2}))?)?$").ok()
});

/// The zone of `UTC`, `GMT`, `Etc/GMT+5` (POSIX sign: five hours *west*), `UTC+2`,
/// `GMT-03:30`, or a name of the zone database (`America/Recife`).
fn zone_named(zone: &str) -> Option<TimeZone> {
    let zone = zone.trim();
    let Some(c) = FIXED.as_ref()?.captures(zone) else {
        return TimeZone::get(zone).ok();
    };
    let Some(sign) = c.get(2) else {
        return Some(TimeZone::UTC);
    };
    let hours: i32 = c[3].parse().ok()?;
    let minutes: i32 = c.get(4).map_or(Some(0), |m| m.as_str().parse().ok())?;
    let east = if sign.as_str() == "+" { 1 } else { -1 };
    let posix = if c.get(1).is_some() { -1 } else { 1 };
    let offset = Offset::from_seconds(east * posix * (hours * 3_600 + minutes * 60)).ok()?;
    Some(TimeZone::fixed(offset))
}

fn month_number(name: &str) -> Option<i8> {
    let months = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let lower = name.to_ascii_lowercase();
    let i = months.iter().position(|m| lower.starts_with(m))?;
    i8::try_from(i + 1).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_are_fixed_offsets_or_names_of_the_database() {
        let offset =
            |z: &str| zone_named(z).map(|tz| tz.to_offset(jiff::Timestamp::UNIX_EPOCH).seconds());
        assert_eq!(offset("UTC"), Some(0));
        assert_eq!(offset("Etc/GMT+5"), Some(-5 * 3_600));
        assert_eq!(offset("GMT-03:30"), Some(-(3 * 3_600 + 30 * 60)));
        assert_eq!(offset("America/Recife"), Some(-3 * 3_600));
        assert_eq!(offset("Mars/Olympus_Mons"), None);
    }

    #[test]
    fn every_usage_limit_pattern_compiles() {
        for pattern in [
            &LIMIT,
            &LIMIT_OPENING,
            &EPOCH,
            &RELATIVE,
            &RELATIVE_PART,
            &CLOCK,
            &FIXED,
            &LASTING,
        ] {
            assert!(pattern.is_some());
        }
    }
}
