//! Small helpers over crates in the tree: query-string decoding (`percent-encoding`), RFC 3339
//! parsing (`jiff`), the clock, kubectl-style ages, a small hash, the value at a path in an
//! object and the length of a JSON encoding up to a limit.

use std::io;
use std::time::{SystemTime, UNIX_EPOCH};

use kcache_store::DynamicObject;
use serde::Serialize;
use serde_json::Value;

/// Decodes one `application/x-www-form-urlencoded` component: `+` is a space (a `%2B` stays a
/// plus), invalid escapes are kept as written and invalid UTF-8 becomes U+FFFD.
pub(crate) fn form_decode(input: &str) -> String {
    percent_encoding::percent_decode_str(&input.replace('+', " "))
        .decode_utf8_lossy()
        .into_owned()
}

/// Splits a query string into decoded `(name, value)` pairs, in order.
pub(crate) fn parse_query(query: Option<&str>) -> Vec<(String, String)> {
    query
        .unwrap_or_default()
        .split('&')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let (k, v) = part.split_once('=').unwrap_or((part, ""));
            (form_decode(k), form_decode(v))
        })
        .collect()
}

/// Seconds since the Unix epoch, now.
pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Parses an RFC 3339 timestamp (what `kcache_testing::generated::rfc3339` writes) to Unix
/// seconds; `None` for anything else or a time before the epoch.
pub(crate) fn parse_rfc3339(s: &str) -> Option<u64> {
    let t: jiff::Timestamp = s.parse().ok()?;
    u64::try_from(t.as_second()).ok()
}

/// An age as the API server's table printers write it (apimachinery's
/// `duration.HumanDuration`): `45s`, `3m20s`, `15m`, `5h3m`, `20h`, `3d4h`, `30d`, `2y10d`.
pub(crate) fn human_age(secs: u64) -> String {
    let (minutes, hours) = (secs / 60, secs / 3600);
    let days = hours / 24;
    let with = |big: u64, big_unit: &str, small: u64, small_unit: &str| {
        if small == 0 {
            format!("{big}{big_unit}")
        } else {
            format!("{big}{big_unit}{small}{small_unit}")
        }
    };
    match secs {
        0..120 => format!("{secs}s"),
        _ if minutes < 10 => with(minutes, "m", secs % 60, "s"),
        _ if minutes < 180 => format!("{minutes}m"),
        _ if hours < 8 => with(hours, "h", minutes % 60, "m"),
        _ if hours < 48 => format!("{hours}h"),
        _ if hours < 24 * 8 => with(days, "d", hours % 24, "h"),
        _ if hours < 24 * 365 * 2 => format!("{days}d"),
        _ if hours < 24 * 365 * 8 => with(days / 365, "y", days % 365, "d"),
        _ => format!("{}y", days / 365),
    }
}

/// FNV-1a (64 bits) of `bytes`, its offset basis mixed with `salt`: a small stable hash.
pub(crate) fn fnv1a(bytes: &[u8], salt: u64) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325 ^ salt, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The value at `path` (field names, outermost first) among the object's non-metadata fields
/// (`spec`, `status`, ...), `None` if a field on the way is missing or not an object.
pub(crate) fn value_at<'o, 'p>(
    obj: &'o DynamicObject,
    path: impl IntoIterator<Item = &'p str>,
) -> Option<&'o Value> {
    let mut path = path.into_iter();
    let first = obj.data.get(path.next()?)?;
    path.try_fold(first, |v, field| v.get(field))
}

/// The length of `value`'s JSON encoding, or `None` when it is over `limit` bytes: the encoding
/// stops there, so an object of any size costs at most `limit` bytes of work.
pub(crate) fn json_len_within(value: &impl Serialize, limit: usize) -> Option<usize> {
    /// Counts what is written; fails past the limit, which ends the encoding.
    struct Counter {
        written: usize,
        limit: usize,
    }
    impl io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.written = self.written.saturating_add(buf.len());
            if self.written > self.limit {
                return Err(io::Error::other("over the limit"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter { written: 0, limit };
    serde_json::to_writer(&mut counter, value).ok()?;
    Some(counter.written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_round_trips() {
        use kcache_testing::generated::rfc3339;

        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_714_557_600), "2024-05-01T10:00:00Z");
        assert_eq!(parse_rfc3339("2024-05-01T10:00:00Z"), Some(1_714_557_600));
        assert_eq!(
            parse_rfc3339("2024-05-01T12:00:00+02:00"),
            Some(1_714_557_600)
        );
        assert_eq!(parse_rfc3339("1969-12-31T23:59:59Z"), None);
        assert_eq!(parse_rfc3339("2024-05-01"), None);
    }

    #[test]
    fn ages_as_kubectl_prints_them() {
        let cases = [
            (0, "0s"),
            (119, "119s"),
            (200, "3m20s"),
            (300, "5m"),
            (900, "15m"),
            (3 * 3600 + 5 * 60, "3h5m"),
            (20 * 3600, "20h"),
            (3 * 86_400 + 4 * 3600, "3d4h"),
            (30 * 86_400, "30d"),
            (740 * 86_400, "2y10d"),
            (9 * 365 * 86_400, "9y"),
        ];
        for (secs, age) in cases {
            assert_eq!(human_age(secs), age, "{secs} s");
        }
    }

    #[test]
    fn values_at_paths_and_bounded_lengths() {
        let mut obj = DynamicObject::new(Some("ns"), "p");
        obj.data.insert(
            "spec".to_owned(),
            serde_json::json!({"nodeName": "n1", "selector": {"app": "web"}}),
        );
        assert_eq!(
            value_at(&obj, "spec.nodeName".split('.')),
            Some(&Value::from("n1"))
        );
        assert_eq!(
            value_at(&obj, ["spec", "selector", "app"]),
            Some(&Value::from("web"))
        );
        assert_eq!(value_at(&obj, ["spec", "nodeName", "x"]), None);
        assert_eq!(value_at(&obj, ["status"]), None);
        assert_eq!(value_at(&obj, []), None);
        let value = serde_json::json!({"a": "xyz"});
        assert_eq!(json_len_within(&value, 100), Some(11));
        assert_eq!(json_len_within(&value, 11), Some(11));
        assert_eq!(json_len_within(&value, 10), None);
    }

    #[test]
    fn query_decoding() {
        assert_eq!(
            parse_query(Some("a=b%3Dc&w&x=1+2&p=%2B&bad=%zz%4")),
            [
                ("a".into(), "b=c".into()),
                ("w".into(), String::new()),
                ("x".into(), "1 2".into()),
                ("p".into(), "+".into()),
                ("bad".into(), "%zz%4".into()),
            ]
        );
    }
}
