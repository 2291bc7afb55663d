//! [`PackedOwners`]: a [`Compact`](super::Compact) object's `ownerReferences`, packed into one
//! allocation.
//!
//! A reference as an [`OwnerReference`] is a 104-byte entry of a boxed slice and four strings
//! of their own: five allocations, about 250 bytes with the allocator's headers, for a pod's one
//! `ReplicaSet`. [`Object::owner_references`](crate::Object::owner_references) hands out
//! owned references anyway, so the compact form keeps the four strings of each entry
//! back to back, each after its length, and builds the references when asked.

use std::borrow::Cow;

use serde::Deserialize;

use crate::OwnerReference;

/// One `ownerReferences` entry as read, its strings borrowed from the input where they need no
/// unescaping: what is packed, without building an [`OwnerReference`] first. It accepts
/// exactly what [`OwnerReference`] accepts (every field optional, unknown fields ignored).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OwnerFields<'a> {
    #[serde(default, borrow)]
    api_version: Cow<'a, str>,
    #[serde(default, borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    name: Cow<'a, str>,
    #[serde(default, borrow)]
    uid: Cow<'a, str>,
    #[serde(default)]
    controller: Option<bool>,
}

/// `ownerReferences` in one allocation: per entry, a tag for `controller` (0 unset, 1 false,
/// 2 true), then `apiVersion`, `kind`, `name` and `uid`, each as a little-endian `u32` length
/// and its UTF-8 bytes. No references: no allocation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PackedOwners(Box<[u8]>);

impl PackedOwners {
    /// `references`, packed. A string longer than `u32::MAX` bytes (which no object read
    /// within kcache's size limits holds) leaves its reference out.
    pub(crate) fn pack(references: &[OwnerFields<'_>]) -> Self {
        let mut bytes = Vec::with_capacity(
            references
                .iter()
                .map(|r| 1 + r.strings().iter().map(|f| 4 + f.len()).sum::<usize>())
                .sum(),
        );
        for r in references {
            let strings = r.strings();
            let Some(lengths) = lengths(strings) else {
                continue;
            };
            bytes.push(match r.controller {
                None => 0,
                Some(false) => 1,
                Some(true) => 2,
            });
            for (text, len) in strings.iter().zip(lengths) {
                bytes.extend_from_slice(&len.to_le_bytes());
                bytes.extend_from_slice(text.as_bytes());
            }
        }
        Self(bytes.into_boxed_slice())
    }

    /// The references, built.
    pub(crate) fn unpack(&self) -> Vec<OwnerReference> {
        let mut out = Vec::new();
        let mut rest: &[u8] = &self.0;
        while let Some((&tag, after)) = rest.split_first() {
            rest = after;
            let mut fields: [String; 4] = Default::default();
            for field in &mut fields {
                // Cannot fail: `pack` wrote every length and string. Were the bytes ever cut
                // short, the references read so far are returned.
                let Some((text, after)) = take_string(rest) else {
                    return out;
                };
                *field = text;
                rest = after;
            }
            let [api_version, kind, name, uid] = fields;
            out.push(OwnerReference {
                api_version,
                kind,
                name,
                uid,
                controller: match tag {
                    0 => None,
                    1 => Some(false),
                    _ => Some(true),
                },
            });
        }
        out
    }

    /// Whether there are no references.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl OwnerFields<'_> {
    /// `apiVersion`, `kind`, `name`, `uid`, in the order they are packed.
    fn strings(&self) -> [&str; 4] {
        [&self.api_version, &self.kind, &self.name, &self.uid]
    }
}

/// The lengths of `strings` as `u32`s, if each fits.
fn lengths(strings: [&str; 4]) -> Option<[u32; 4]> {
    let mut out = [0; 4];
    for (len, text) in out.iter_mut().zip(strings) {
        *len = u32::try_from(text.len()).ok()?;
    }
    Some(out)
}

/// One length-prefixed string at the start of `bytes`, and what follows it.
fn take_string(bytes: &[u8]) -> Option<(String, &[u8])> {
    let (len, rest) = bytes.split_first_chunk::<4>()?;
    let len = usize::try_from(u32::from_le_bytes(*len)).ok()?;
    let (text, rest) = rest.split_at_checked(len)?;
    Some((String::from_utf8(text.to_vec()).ok()?, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The entry's strings, borrowed from `reference`.
    fn of(reference: &OwnerReference) -> OwnerFields<'_> {
        OwnerFields {
            api_version: Cow::Borrowed(&reference.api_version),
            kind: Cow::Borrowed(&reference.kind),
            name: Cow::Borrowed(&reference.name),
            uid: Cow::Borrowed(&reference.uid),
            controller: reference.controller,
        }
    }

    fn pack(references: &[OwnerReference]) -> PackedOwners {
        let fields: Vec<OwnerFields<'_>> = references.iter().map(of).collect();
        PackedOwners::pack(&fields)
    }

    #[test]
    fn entries_are_read_as_owner_references_read_them() {
        for json in [
            r#"{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"a","uid":"u","controller":true}"#,
            r#"{"kind":"Node","extra":[1,2],"name":"n\u00e9"}"#,
            "{}",
            r#"{"kind":5}"#,
            r#"{"controller":"yes"}"#,
            "[]",
        ] {
            let reference = serde_json::from_str::<OwnerReference>(json).ok();
            let fields = serde_json::from_str::<OwnerFields<'_>>(json).ok();
            assert_eq!(fields.is_some(), reference.is_some(), "{json}");
            if let (Some(fields), Some(reference)) = (fields, reference) {
                assert_eq!(
                    PackedOwners::pack(&[fields]).unpack(),
                    [reference],
                    "{json}"
                );
            }
        }
    }

    #[test]
    fn references_come_back_as_they_were_packed() {
        let references = vec![
            OwnerReference::new("apps/v1", "ReplicaSet", "web-5d4").controlled(),
            OwnerReference {
                uid: "8f0e-ü".to_owned(),
                controller: Some(false),
                ..OwnerReference::new("v1", "Node", "")
            },
            OwnerReference::default(),
        ];
        let packed = pack(&references);
        assert_eq!(packed.unpack(), references);
        assert_eq!(
            packed.0.len(),
            3 * 17 + "apps/v1ReplicaSetweb-5d4".len() + "v1Node8f0e-ü".len()
        );
    }

    #[test]
    fn no_references_allocate_nothing() {
        let packed = PackedOwners::pack(&[]);
        assert!(packed.is_empty());
        assert!(packed.unpack().is_empty());
        assert_eq!(packed, PackedOwners::default());
    }

    #[test]
    fn cut_bytes_give_the_references_read_so_far() {
        let references = vec![
            OwnerReference::new("apps/v1", "ReplicaSet", "a"),
            OwnerReference::new("apps/v1", "ReplicaSet", "b"),
        ];
        let packed = pack(&references);
        let cut = PackedOwners(packed.0[..packed.0.len() - 1].into());
        assert_eq!(cut.unpack(), references[..1]);
    }
}
