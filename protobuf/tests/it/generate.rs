//! Random JSON objects of any message of the table, from a seed: every field kind, the special
//! types in their canonical JSON forms, inlined messages' fields in their parent.

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss,
    reason = "random numbers folded into each field's range"
)]

use kcache_protobuf::table::{Field, Kind, MapValue, Message, Special, message};
use kcache_protobuf::time;
use serde_json::{Map, Value, json};

/// A small deterministic generator (xorshift64*).
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub(crate) fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    pub(crate) fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn string(&mut self) -> String {
        const WORDS: [&str; 8] = ["web", "a-b", "é", "x.y/z", "", "0", "kube-system", "日本"];
        let mut s = String::new();
        for _ in 0..=self.below(3) {
            s.push_str(WORDS[self.below(WORDS.len() as u64) as usize]);
        }
        s
    }

    fn base64(&mut self) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        (0..4 * self.below(4))
            .map(|_| char::from(ALPHABET[self.below(64) as usize]))
            .collect()
    }
}

/// A random JSON value of `message`, `depth` levels below the top.
pub(crate) fn value(rng: &mut Rng, message: &'static Message, depth: usize) -> Value {
    match message.special {
        Special::None => {
            let mut object = Map::new();
            fill(rng, message, depth, &mut object);
            Value::Object(object)
        }
        Special::Time => Value::String(time::format_rfc3339(rng.below(4_000_000_000) as i64, None)),
        Special::MicroTime => Value::String(time::format_rfc3339(
            rng.below(4_000_000_000) as i64,
            Some(rng.below(1_000_000) as u32),
        )),
        Special::Duration => {
            Value::String(time::format_duration(rng.next() as i64 >> rng.below(60)))
        }
        Special::RawJson => {
            json!({"f:metadata": {"f:labels": {".": {}, "k": rng.string()}}, "n": rng.below(9)})
        }
        Special::Quantity => {
            Value::String(["100m", "1Gi", "0", "1.5", "2e3"][rng.below(5) as usize].to_owned())
        }
        Special::IntOrString => {
            if rng.chance(50) {
                json!(rng.below(70_000))
            } else {
                Value::String(rng.string())
            }
        }
        Special::StringList => Value::Array(
            (0..=rng.below(2))
                .map(|_| Value::String(rng.string()))
                .collect(),
        ),
    }
}

/// Random fields of `message` into `object` (inlined messages' fields too).
fn fill(rng: &mut Rng, message: &'static Message, depth: usize, object: &mut Map<String, Value>) {
    for field in message.fields {
        if field.inline {
            if let Kind::Message(inner) = field.kind {
                fill(rng, message_of(inner), depth, object);
            }
            continue;
        }
        let nested = matches!(field.kind, Kind::Message(m) if message_of(m).special == Special::None)
            || matches!(field.kind, Kind::Map(MapValue::Message(_)));
        let percent = if nested {
            60u64.saturating_sub(depth as u64 * 12)
        } else {
            60
        };
        if !field.required && !rng.chance(percent) {
            continue;
        }
        let mut v = field_value(rng, field, depth);
        // Empty plain metadata fields are read as absent (Go's JSON leaves them out).
        while field.omit_zero && (v == json!("") || v == json!(0)) {
            v = field_value(rng, field, depth);
        }
        object.insert(field.json.to_owned(), v);
    }
}

fn message_of(i: u16) -> &'static Message {
    message(i)
}

fn single(rng: &mut Rng, kind: Kind, depth: usize) -> Value {
    match kind {
        Kind::String => Value::String(rng.string()),
        Kind::Bytes => Value::String(rng.base64()),
        Kind::Int32 => json!(rng.next() as i32),
        Kind::Int64 => json!(rng.next() as i64),
        Kind::Bool => json!(rng.chance(50)),
        Kind::Double => json!((rng.next() % 1_000_000) as f64 / 8.0),
        Kind::Message(m) => value(rng, message_of(m), depth + 1),
        Kind::Map(_) => Value::Null,
    }
}

fn field_value(rng: &mut Rng, field: &Field, depth: usize) -> Value {
    match field.kind {
        Kind::Map(map_value) => {
            let kind = match map_value {
                MapValue::String => Kind::String,
                MapValue::Bytes => Kind::Bytes,
                MapValue::Message(m) => Kind::Message(m),
            };
            let mut map = Map::new();
            for i in 0..=rng.below(2) {
                map.insert(format!("k{i}-{}", rng.string()), single(rng, kind, depth));
            }
            Value::Object(map)
        }
        kind if field.repeated => Value::Array(
            (0..=rng.below(2))
                .map(|_| single(rng, kind, depth))
                .collect(),
        ),
        kind => single(rng, kind, depth),
    }
}

/// A random object of the kind `kind` in `api_version`, with its `apiVersion` and `kind`.
pub(crate) fn object(rng: &mut Rng, api_version: &str, kind: &str) -> Value {
    let message = kcache_protobuf::table::message_for_kind(api_version, kind).unwrap();
    let mut v = value(rng, message, 0);
    let o = v.as_object_mut().unwrap();
    o.insert("apiVersion".to_owned(), json!(api_version));
    o.insert("kind".to_owned(), json!(kind));
    v
}
