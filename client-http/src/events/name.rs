//! Event names: `<regarding name>.<time in hex>` as client-go writes them, unique within a
//! recorder, and a random name when that would not be a valid object name.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The longest object name (a DNS subdomain).
const MAX_NAME_BYTES: usize = 253;

/// Hands out Event names for one recorder.
#[derive(Debug, Default)]
pub(crate) struct Names {
    /// The last time stamp used, in nanoseconds since the epoch.
    last: AtomicU64,
}

impl Names {
    /// A name for an Event about `regarding` first seen at `now`: `<regarding>.<nanoseconds
    /// since the epoch in hex>` (client-go's `GenerateEventName`). The time stamp is one past
    /// the last one used when the clock has not moved on (a coarse or fixed clock), so a
    /// recorder never names two Events alike. A name that would not be a DNS subdomain (a
    /// regarding name with capitals or `_`, or too long) is a random one instead, as with
    /// client-go (a UUID there).
    pub(crate) fn next(&self, regarding: &str, now: SystemTime) -> String {
        let nanos = now
            .duration_since(UNIX_EPOCH)
            .ok()
            .and_then(|d| u64::try_from(d.as_nanos()).ok())
            .unwrap_or_default();
        let previous = self
            .last
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |last| {
                Some(nanos.max(last.saturating_add(1)))
            })
            .unwrap_or_default();
        let stamp = nanos.max(previous.saturating_add(1));
        let name = format!("{regarding}.{stamp:x}");
        if is_dns_subdomain(&name) {
            return name;
        }
        let (a, b) = (random_u64(), random_u64());
        // A version 4 UUID's layout.
        format!(
            "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            0x8000 | ((b >> 48) & 0x3fff),
            b & 0xffff_ffff_ffff
        )
    }
}

/// Whether `name` is a DNS subdomain (RFC 1123), as object names must be: at most 253 bytes
/// of dot-separated labels of lowercase letters, digits and `-`, each starting and ending with
/// a letter or digit.
pub(crate) fn is_dns_subdomain(name: &str) -> bool {
    name.len() <= MAX_NAME_BYTES
        && name.split('.').all(|label| {
            let bytes = label.as_bytes();
            let alphanumeric = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
            bytes.first().is_some_and(alphanumeric)
                && bytes.last().is_some_and(alphanumeric)
                && bytes.iter().all(|b| alphanumeric(b) || *b == b'-')
        })
}

/// 64 random bits, from the standard library's randomly keyed hasher: enough for a name no
/// other recorder picks and for retry jitter, without a random number crate.
pub(crate) fn random_u64() -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos().into())
            .unwrap_or_default(),
    );
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn names_are_the_regarding_name_and_a_unique_hex_time() {
        let names = Names::default();
        let at = UNIX_EPOCH + Duration::from_nanos(0x17a0_0000_0000_0000);
        assert_eq!(names.next("web", at), "web.17a0000000000000");
        // The clock did not move: the next stamp is one past.
        assert_eq!(names.next("web", at), "web.17a0000000000001");
        assert_eq!(names.next("db", at), "db.17a0000000000002");
        let later = at + Duration::from_secs(1);
        assert_eq!(names.next("web", later), "web.17a000003b9aca00");
    }

    #[test]
    fn an_invalid_name_becomes_a_random_uuid() {
        let names = Names::default();
        let name = names.next("Web_1", SystemTime::now());
        assert_eq!(name.len(), 36, "{name}");
        assert!(is_dns_subdomain(&name), "{name}");
        assert_eq!(&name[14..15], "4");
        assert_ne!(name, names.next("Web_1", SystemTime::now()));
        let long = "a".repeat(250);
        assert_eq!(names.next(&long, SystemTime::now()).len(), 36);
    }

    #[test]
    fn dns_subdomains() {
        for ok in ["a", "web.17", "a-b.c-d", "0"] {
            assert!(is_dns_subdomain(ok), "{ok}");
        }
        for bad in ["", ".a", "a.", "a..b", "-a", "a-", "A", "a_b", "ä"] {
            assert!(!is_dns_subdomain(bad), "{bad}");
        }
        assert!(!is_dns_subdomain(&"a".repeat(254)));
    }
}
