//! Values the API server generates for an object, made from a seeded RNG so runs repeat: UIDs,
//! `generateName` suffixes and RFC 3339 timestamps. The workloads and the fake API server both
//! use them.

/// RFC 3339 UTC with seconds, e.g. `2024-05-01T10:00:00Z` (times past the end of 9999 are
/// clamped to the last second a `jiff::Timestamp` holds).
pub fn rfc3339(secs: u64) -> String {
    let last = jiff::Timestamp::MAX.as_second();
    let secs = i64::try_from(secs).map_or(last, |s| s.min(last));
    jiff::Timestamp::from_second(secs)
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
        .to_string()
}

/// A `UUIDv4` string from `rng`.
///
/// Written by hand: 16 seeded random bytes with the version and variant bits set, formatted
/// `8-4-4-4-12`. The `uuid` crate is not in the tree, and its seeded constructor
/// (`Builder::from_random_bytes`) would only replace these few lines with a dependency.
pub fn uuid(rng: &mut fastrand::Rng) -> String {
    let a = rng.u64(..);
    let b = rng.u64(..);
    let a = (a & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000;
    let b = (b & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xFFFF,
        a & 0xFFFF,
        b >> 48,
        b & 0xFFFF_FFFF_FFFF
    )
}

/// Five lowercase alphanumerics from `rng`, like `generateName` suffixes.
pub fn suffix(rng: &mut fastrand::Rng) -> String {
    const CHARS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5)
        .map(|_| char::from(CHARS[rng.usize(..CHARS.len())]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_look_like_the_api_servers() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_714_557_600), "2024-05-01T10:00:00Z");
        assert_eq!(rfc3339(u64::MAX), "9999-12-30T22:00:00Z");
        let mut rng = fastrand::Rng::with_seed(1);
        let uid = uuid(&mut rng);
        assert_eq!(uid.len(), 36);
        assert_eq!(uid.as_bytes()[14], b'4');
        assert_eq!(suffix(&mut rng).len(), 5);
    }
}
