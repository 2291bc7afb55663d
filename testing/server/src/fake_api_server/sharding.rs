//! Server-side sharded list and watch (Kubernetes 1.36, KEP-5866, kube-apiserver's
//! `ShardedListAndWatch` feature gate): the `shardSelector` parameter of lists, watches and
//! streaming lists, and the `shardInfo` their lists answer with.
//!
//! A request naming `shardSelector=shardRange(object.metadata.uid, '0x0000000000000000',
//! '0x8000000000000000')` gets only the objects whose field (`metadata.uid` or
//! `metadata.namespace`) hashes (64-bit FNV-1a) into one of the selector's ranges: list items,
//! watch events and a streaming list's initial events alike, the selector combined with the label
//! and field selectors as one more of them. Every list answered to it carries
//! `metadata.shardInfo: {"selector": "<the selector as the request wrote it>"}`. The selector's
//! grammar, its error messages and the hash are `kcache_reflector`'s [`ShardSelector`], which
//! follows kube-apiserver's; a malformed one is 400 `invalid shard selector: <why>`, an empty one
//! the same as none.
//!
//! With the feature off ([`FakeApiServerBuilder::sharded_list_watch`](super::FakeApiServerBuilder::sharded_list_watch)),
//! the parameter is ignored altogether, as by a kube-apiserver without it.

use kcache_reflector::ShardSelector;
use kcache_store::DynamicObject;
use serde_json::{Map, Value, json};

use super::status::ApiError;

/// The name of [`shard_info`](ShardFilter::shard_info) in `ListMeta`'s JSON form.
pub(crate) const SHARD_INFO: &str = "shardInfo";

/// `ListMeta`'s field number of `shardInfo` in protobuf.
const LIST_META_SHARD_INFO: u32 = 5;

/// `ShardInfo`'s field number of `selector` in protobuf.
const SHARD_INFO_SELECTOR: u32 = 1;

/// A request's shard selector: what it selects, and how the request wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShardFilter {
    selector: ShardSelector,
    /// The parameter's value, echoed in `shardInfo`.
    text: String,
}

impl ShardFilter {
    /// Reads the value of a `shardSelector` parameter: `None` when the server does not shard
    /// (`enabled` false) or the value is empty (`omitempty`: not set).
    ///
    /// # Errors
    ///
    /// 400 `invalid shard selector: <why>` when it does not parse.
    pub(crate) fn parse(value: &str, enabled: bool) -> Result<Option<Self>, ApiError> {
        if !enabled || value.is_empty() {
            return Ok(None);
        }
        let selector = ShardSelector::parse(value)
            .map_err(|e| ApiError::bad_request(&format!("invalid shard selector: {e}")))?;
        Ok(Some(Self {
            selector,
            text: value.to_owned(),
        }))
    }

    /// Whether `obj` is in the shard.
    pub(crate) fn selects(&self, obj: &DynamicObject) -> bool {
        self.selector.matches(obj)
    }

    /// The list's `metadata.shardInfo`: `{"selector": <the request's text>}`.
    pub(crate) fn shard_info(&self) -> Value {
        json!({ "selector": self.text })
    }
}

/// Appends `ListMeta`'s `shardInfo` (field 5, a `ShardInfo { selector = 1 }` message) to the
/// protobuf `list_meta` encoded from `meta`, when `meta` has one and the protobuf table's
/// `ListMeta` (`list_meta_fields`) does not carry the field itself: its number is past every
/// other `ListMeta` field, so appended is in field order.
pub(crate) fn append_protobuf_shard_info(
    list_meta: &mut Vec<u8>,
    list_meta_fields: &[kcache_protobuf::table::Field],
    meta: &Map<String, Value>,
) {
    if list_meta_fields
        .iter()
        .any(|f| f.number == LIST_META_SHARD_INFO)
    {
        return;
    }
    let Some(selector) = meta
        .get(SHARD_INFO)
        .and_then(|info| info.get("selector"))
        .and_then(Value::as_str)
    else {
        return;
    };
    let mut info = Vec::with_capacity(selector.len() + 4);
    kcache_protobuf::wire::put_bytes(&mut info, SHARD_INFO_SELECTOR, selector.as_bytes());
    kcache_protobuf::wire::put_bytes(list_meta, LIST_META_SHARD_INFO, &info);
}

#[cfg(test)]
mod tests {
    use kcache_reflector::{ShardField, shard_hash, shard_index};

    use super::*;

    fn object(namespace: &str, uid: &str) -> DynamicObject {
        let mut obj = DynamicObject::new(Some(namespace), "o");
        obj.metadata.uid = Some(uid.to_owned());
        obj
    }

    fn filter(text: &str) -> ShardFilter {
        ShardFilter::parse(text, true)
            .expect("parses")
            .expect("a filter")
    }

    #[test]
    fn empty_or_disabled_is_no_filter_and_malformed_is_a_bad_request() {
        assert_eq!(ShardFilter::parse("", true), Ok(None));
        assert_eq!(ShardFilter::parse("garbage(", false), Ok(None));
        let e = ShardFilter::parse("shardRange(object.metadata.name, '0x0', '0x1')", true)
            .expect_err("refused");
        assert_eq!(e.code, 400);
        let status = e.status();
        assert_eq!(status.reason.as_deref(), Some("BadRequest"));
        assert!(
            status
                .message
                .as_deref()
                .is_some_and(|m| m.starts_with("invalid shard selector: unsupported field path")),
            "{status:?}"
        );
    }

    #[test]
    fn the_echo_is_the_text_as_written() {
        let text = "( shardRange(object.metadata.uid,'0x0000000000000000','0x8000000000000000') )";
        assert_eq!(filter(text).shard_info(), json!({ "selector": text }));
    }

    #[test]
    fn fnv_vectors_decide_the_shard() {
        // shard_hash("") = 0xcbf29ce484222325: the last quarter, not the first three.
        let empty_ns = object("", "u");
        let field = ShardField::Namespace;
        assert_eq!(shard_index(shard_hash(""), 4), 3);
        for (value, hash) in [
            ("", 0xcbf2_9ce4_8422_2325_u64),
            ("a", 0xaf63_dc4c_8601_ec8c),
            ("foobar", 0x8594_4171_f739_67e8),
        ] {
            assert_eq!(shard_hash(value), hash);
            let obj = object("ns", value);
            let exact = format!(
                "shardRange(object.metadata.uid, '0x{hash:016x}', '0x{:016x}')",
                u128::from(hash) + 1
            );
            assert!(filter(&exact).selects(&obj), "{value:?}");
            let below =
                format!("shardRange(object.metadata.uid, '0x0000000000000000', '0x{hash:016x}')");
            assert!(!filter(&below).selects(&obj), "{value:?}");
        }
        let last = ShardSelector::shard(field, 3, 4).to_string();
        assert!(filter(&last).selects(&empty_ns));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 256,
            rng_seed: proptest::test_runner::RngSeed::Fixed(0x6b63_6163_6865),
            failure_persistence: None,
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// Shard `i` of `n`, as the server reads it from the wire, selects an object exactly
        /// when `shard_index(shard_hash(value), n) == i`, whatever its uid or namespace.
        #[test]
        fn the_wire_form_of_shard_i_selects_shard_index_i(
            uid in ".{0,40}",
            namespace in "[a-z0-9-]{0,20}",
            shards in 1u32..17,
        ) {
            let obj = object(&namespace, &uid);
            for (field, value) in [(ShardField::Uid, &uid), (ShardField::Namespace, &namespace)] {
                let index = shard_index(shard_hash(value), shards);
                for i in 0..shards {
                    let shard = filter(&ShardSelector::shard(field, i, shards).to_string());
                    proptest::prop_assert_eq!(shard.selects(&obj), i == index, "{:?}", field);
                }
            }
        }
    }

    #[test]
    fn protobuf_shard_info_is_field_five_after_the_others() {
        let mut meta = Map::new();
        meta.insert(SHARD_INFO.into(), json!({ "selector": "s" }));
        let mut out = vec![0x12, 0x01, b'7'];
        append_protobuf_shard_info(&mut out, &[], &meta);
        assert_eq!(out, [0x12, 0x01, b'7', 0x2a, 0x03, 0x0a, 0x01, b's']);
        let mut without = vec![0x12, 0x01, b'7'];
        append_protobuf_shard_info(&mut without, &[], &Map::new());
        assert_eq!(without, [0x12, 0x01, b'7']);
    }
}
