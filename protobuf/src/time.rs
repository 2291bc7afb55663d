//! The JSON forms of `meta/v1` `Time`, `MicroTime` and `Duration`: RFC 3339 in UTC (to the
//! second, or with six fraction digits) and Go's duration text (`1h2m3.5s`), written from and
//! read back to the seconds, nanoseconds and durations the protobuf form holds.

use std::fmt::Write as _;

/// Days from 1970-01-01 to the civil date `y-m-d` (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of `days` since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Room for the longest time [`write_rfc3339`] writes.
pub const RFC3339_MAX: usize = 40;

/// Writes `seconds` since the epoch as `2006-01-02T15:04:05Z` (with `.000000` microseconds
/// when `micros` is given) into `buf`, without allocating; the text written. Years outside
/// 0000..=9999 are written by [`format_rfc3339`] instead (this returns `None`).
pub fn write_rfc3339(
    buf: &mut [u8; RFC3339_MAX],
    seconds: i64,
    micros: Option<u32>,
) -> Option<&str> {
    let days = seconds.div_euclid(86_400);
    let rem = seconds.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    if !(0..=9999).contains(&y) {
        return None;
    }
    let mut at = 0;
    let mut put = |value: i64, width: usize, after: u8| {
        let mut v = value;
        for i in (0..width).rev() {
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "one decimal digit"
            )]
            {
                buf[at + i] = b'0' + (v % 10) as u8;
            }
            v /= 10;
        }
        at += width;
        if after != 0 {
            buf[at] = after;
            at += 1;
        }
    };
    put(y, 4, b'-');
    put(m, 2, b'-');
    put(d, 2, b'T');
    put(rem / 3600, 2, b':');
    put(rem % 3600 / 60, 2, b':');
    match micros {
        Some(us) => {
            put(rem % 60, 2, b'.');
            put(i64::from(us.min(999_999)), 6, b'Z');
        }
        None => put(rem % 60, 2, b'Z'),
    }
    std::str::from_utf8(&buf[..at]).ok()
}

/// `seconds` since the epoch as `2006-01-02T15:04:05Z`, with `.000000` microseconds when
/// `micros` is given.
#[must_use]
pub fn format_rfc3339(seconds: i64, micros: Option<u32>) -> String {
    let days = seconds.div_euclid(86_400);
    let rem = seconds.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let (hh, mm, ss) = (rem / 3600, rem % 3600 / 60, rem % 60);
    match micros {
        Some(us) => format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}.{us:06}Z"),
        None => format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z"),
    }
}

/// Seconds since the epoch and nanoseconds of an RFC 3339 time (`Z` or a `±hh:mm` offset,
/// any number of fraction digits).
#[must_use]
#[allow(
    clippy::many_single_char_names,
    reason = "the date's fields, as RFC 3339 names them"
)]
pub fn parse_rfc3339(text: &str) -> Option<(i64, u32)> {
    let b = text.as_bytes();
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let s = text.get(range)?;
        if s.bytes().all(|c| c.is_ascii_digit()) {
            s.parse().ok()
        } else {
            None
        }
    };
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut i = 19;
    let mut nanos = 0u32;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            if i - start < 9 {
                nanos = nanos * 10 + u32::from(b[i] - b'0');
            }
            i += 1;
        }
        if i == start {
            return None;
        }
        for _ in (i - start).min(9)..9 {
            nanos *= 10;
        }
    }
    let offset = match b.get(i) {
        Some(b'Z' | b'z') if i + 1 == b.len() => 0,
        Some(sign @ (b'+' | b'-')) if i + 6 == b.len() && b[i + 3] == b':' => {
            let secs = num(i + 1..i + 3)? * 3600 + num(i + 4..i + 6)? * 60;
            if *sign == b'+' { secs } else { -secs }
        }
        _ => return None,
    };
    let seconds = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s - offset;
    Some((seconds, nanos))
}

/// A duration in nanoseconds as Go's `time.Duration.String` writes it.
#[must_use]
pub fn format_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".to_owned();
    }
    let negative = nanos < 0;
    let u = nanos.unsigned_abs();
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    if u < 1_000_000_000 {
        // Below a second: the largest unit of ns, µs, ms that keeps the number above one.
        let (unit, scale) = if u < 1_000 {
            ("ns", 1)
        } else if u < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        push_fraction(&mut out, u, scale);
        out.push_str(unit);
        return out;
    }
    let hours = u / 3_600_000_000_000;
    let minutes = u / 60_000_000_000 % 60;
    let rest = u % 60_000_000_000;
    if hours > 0 {
        let _ = write!(out, "{hours}h");
    }
    if hours > 0 || minutes > 0 {
        let _ = write!(out, "{minutes}m");
    }
    push_fraction(&mut out, rest, 1_000_000_000);
    out.push('s');
    out
}

/// `value / scale` with the fraction's trailing zeros (and a bare point) trimmed.
fn push_fraction(out: &mut String, value: u64, scale: u64) {
    out.push_str(&(value / scale).to_string());
    let frac = value % scale;
    if frac > 0 {
        let digits = scale.ilog10() as usize;
        let text = format!("{frac:0digits$}");
        out.push('.');
        out.push_str(text.trim_end_matches('0'));
    }
}

/// Nanoseconds of a Go duration text (`1h2m3.5s`, `300ms`, `-1.5h`).
#[must_use]
pub fn parse_duration(text: &str) -> Option<i64> {
    let (negative, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let digits_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .filter(|&e| e > 0)?;
        let (whole, fraction) = rest[..digits_end]
            .split_once('.')
            .unwrap_or((&rest[..digits_end], ""));
        if whole.is_empty() && fraction.is_empty() {
            return None;
        }
        let whole: u128 = if whole.is_empty() {
            0
        } else {
            whole.parse().ok()?
        };
        rest = &rest[digits_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale: u128 = match &rest[..unit_end] {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        rest = &rest[unit_end..];
        let mut frac_value: u128 = 0;
        let mut frac_scale: u128 = 1;
        for c in fraction.bytes().take(30) {
            if !c.is_ascii_digit() {
                return None;
            }
            frac_value = frac_value * 10 + u128::from(c - b'0');
            frac_scale *= 10;
        }
        total = total
            .checked_add(whole.checked_mul(scale)?)?
            .checked_add(frac_value * scale / frac_scale)?;
    }
    let nanos = i64::try_from(total).ok()?;
    Some(if negative { -nanos } else { nanos })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip() {
        assert_eq!(format_rfc3339(0, None), "1970-01-01T00:00:00Z");
        assert_eq!(format_rfc3339(1_700_000_000, None), "2023-11-14T22:13:20Z");
        assert_eq!(
            format_rfc3339(-62_135_596_800, None),
            "0001-01-01T00:00:00Z"
        );
        assert_eq!(
            format_rfc3339(951_782_400, Some(5)),
            "2000-02-29T00:00:00.000005Z"
        );
        for s in [0i64, 1_700_000_000, -1, 951_782_400, 4_102_444_800] {
            assert_eq!(parse_rfc3339(&format_rfc3339(s, None)), Some((s, 0)));
        }
        assert_eq!(
            parse_rfc3339("2023-11-14T23:13:20.5+01:00"),
            Some((1_700_000_000, 500_000_000))
        );
        assert_eq!(parse_rfc3339("2023-11-14 23:13:20Z"), None);
        assert_eq!(parse_rfc3339("2023-13-14T23:13:20Z"), None);
    }

    #[test]
    fn durations_are_written_as_go_writes_them() {
        for (nanos, text) in [
            (0, "0s"),
            (1, "1ns"),
            (1_100, "1.1µs"),
            (2_200_000, "2.2ms"),
            (3_300_000_000, "3.3s"),
            (4 * 60_000_000_000 + 5_000_000_000, "4m5s"),
            (3_600_000_000_000, "1h0m0s"),
            (-90_000_000_000, "-1m30s"),
        ] {
            assert_eq!(format_duration(nanos), text);
            assert_eq!(parse_duration(text), Some(nanos), "{text}");
        }
        assert_eq!(parse_duration("1x"), None);
        assert_eq!(parse_duration(""), None);
    }
}
