//! Small helpers over crates in the tree: query-string decoding (`percent-encoding`), RFC 3339
//! parsing (`jiff`), the clock and kubectl-style ages.

use std::time::{SystemTime, UNIX_EPOCH};

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

/// A short human age like kubectl prints: `5s`, `3m`, `2h`, `4d`.
pub(crate) fn human_age(secs: u64) -> String {
    match secs {
        0..120 => format!("{secs}s"),
        120..7200 => format!("{}m", secs / 60),
        7200..172_800 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86_400),
    }
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
