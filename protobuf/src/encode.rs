//! Writing a JSON object in protobuf by the field table: what a server (the fake API server)
//! sends a client that asked for protobuf, and what the property tests round-trip.
//!
//! Fields are written in field-number order, as Kubernetes' encoder writes them; a field absent
//! from the JSON (or `null`) is not written; map entries are sorted by key. The JSON forms of
//! [`Special`] types are read back to their protobuf form (RFC 3339 to seconds and nanoseconds,
//! Go durations to nanoseconds, base64 to bytes, `RawExtension` JSON to its bytes).

use serde_json::{Map, Value};

use crate::table::{Field, Kind, MapValue, Message, Special, message};
use crate::wire::{FIXED64, put_bytes, put_nested, put_tag, put_varint_field};
use crate::{Error, MAX_DEPTH, base64, time};

/// Appends the protobuf form of `value` (an object of `message`'s JSON form) to `out`.
///
/// # Errors
/// [`Error::Unencodable`] for a value the field's kind cannot carry (a string where a number
/// belongs, a time that is not RFC 3339), [`Error::TooDeep`] past [`MAX_DEPTH`].
pub fn encode(value: &Value, message: &'static Message, out: &mut Vec<u8>) -> Result<(), Error> {
    encode_message(value, message, out, 0)
}

/// The protobuf form of `value` as a new buffer.
///
/// # Errors
/// As [`encode`].
pub fn to_vec(value: &Value, message: &'static Message) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    encode(value, message, &mut out)?;
    Ok(out)
}

fn unencodable(message: &'static Message, field: &str, reason: impl Into<String>) -> Error {
    Error::Unencodable {
        message: message.name,
        field: field.to_owned(),
        reason: reason.into(),
    }
}

fn encode_message(
    value: &Value,
    message: &'static Message,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), Error> {
    if depth > MAX_DEPTH {
        return Err(Error::TooDeep(MAX_DEPTH));
    }
    match message.special {
        Special::None => {}
        special => return encode_special(value, message, special, out),
    }
    let empty = Map::new();
    let object = match value {
        Value::Object(o) => o,
        Value::Null => &empty,
        other => {
            return Err(unencodable(
                message,
                "",
                format!("expected an object, found {}", kind_of(other)),
            ));
        }
    };
    for field in message.fields {
        if field.inline {
            let Kind::Message(inner) = field.kind else {
                continue;
            };
            // The embedded struct's fields sit in this object.
            put_nested(out, field.number, |o| {
                encode_message(value, message_of(inner), o, depth + 1)
            })?;
            continue;
        }
        let Some(v) = object.get(field.json) else {
            continue;
        };
        if v.is_null() {
            continue;
        }
        match field.kind {
            Kind::Map(map_value) => {
                let Value::Object(entries) = v else {
                    return Err(unencodable(
                        message,
                        field.json,
                        "expected an object (a map)",
                    ));
                };
                let mut keys: Vec<&String> = entries.keys().collect();
                keys.sort_unstable();
                for key in keys {
                    let item = &entries[key];
                    put_nested(out, field.number, |o| {
                        put_bytes(o, 1, key.as_bytes());
                        match map_value {
                            MapValue::String => {
                                put_bytes(o, 2, string_of(message, field, item)?.as_bytes());
                            }
                            MapValue::Bytes => put_bytes(o, 2, &bytes_of(message, field, item)?),
                            MapValue::Message(m) => {
                                put_nested(o, 2, |o| {
                                    encode_message(item, message_of(m), o, depth + 1)
                                })?;
                            }
                        }
                        Ok(())
                    })?;
                }
            }
            _ if field.repeated => {
                let Value::Array(items) = v else {
                    return Err(unencodable(message, field.json, "expected an array"));
                };
                for item in items {
                    encode_single(item, message, field, out, depth)?;
                }
            }
            _ => encode_single(v, message, field, out, depth)?,
        }
    }
    Ok(())
}

fn message_of(index: u16) -> &'static Message {
    message(index)
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn string_of<'v>(message: &'static Message, field: &Field, v: &'v Value) -> Result<&'v str, Error> {
    v.as_str().ok_or_else(|| {
        unencodable(
            message,
            field.json,
            format!("expected a string, found {}", kind_of(v)),
        )
    })
}

fn bytes_of(message: &'static Message, field: &Field, v: &Value) -> Result<Vec<u8>, Error> {
    base64::decode(string_of(message, field, v)?)
        .ok_or_else(|| unencodable(message, field.json, "not base64"))
}

fn encode_single(
    v: &Value,
    message: &'static Message,
    field: &'static Field,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), Error> {
    let number = field.number;
    match field.kind {
        Kind::String => put_bytes(out, number, string_of(message, field, v)?.as_bytes()),
        Kind::Bytes => put_bytes(out, number, &bytes_of(message, field, v)?),
        Kind::Int32 | Kind::Int64 => {
            let n = v.as_i64().ok_or_else(|| {
                unencodable(
                    message,
                    field.json,
                    format!("expected an integer, found {}", kind_of(v)),
                )
            })?;
            let n = if field.kind == Kind::Int32 {
                i64::from(
                    i32::try_from(n)
                        .map_err(|_| unencodable(message, field.json, "out of int32's range"))?,
                )
            } else {
                n
            };
            #[allow(
                clippy::cast_sign_loss,
                reason = "two's complement, as protobuf writes negatives"
            )]
            put_varint_field(out, number, n as u64);
        }
        Kind::Bool => {
            let b = v.as_bool().ok_or_else(|| {
                unencodable(
                    message,
                    field.json,
                    format!("expected a boolean, found {}", kind_of(v)),
                )
            })?;
            put_varint_field(out, number, u64::from(b));
        }
        Kind::Double => {
            let f = v.as_f64().ok_or_else(|| {
                unencodable(
                    message,
                    field.json,
                    format!("expected a number, found {}", kind_of(v)),
                )
            })?;
            put_tag(out, number, FIXED64);
            out.extend_from_slice(&f.to_bits().to_le_bytes());
        }
        Kind::Message(m) => {
            put_nested(out, number, |o| {
                encode_message(v, message_of(m), o, depth + 1)
            })?;
        }
        Kind::Map(_) => {
            return Err(unencodable(
                message,
                field.json,
                "a map inside a repeated field",
            ));
        }
    }
    Ok(())
}

fn encode_special(
    value: &Value,
    message: &'static Message,
    special: Special,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let name = message.name;
    let bad = |reason: &str| {
        unencodable(
            message,
            name.rsplit('.').next().unwrap_or(name),
            reason.to_owned(),
        )
    };
    match special {
        Special::None => {}
        Special::Time | Special::MicroTime => {
            let Value::String(text) = value else {
                return Err(bad("expected an RFC 3339 time"));
            };
            let (seconds, nanos) =
                time::parse_rfc3339(text).ok_or_else(|| bad("not an RFC 3339 time"))?;
            #[allow(clippy::cast_sign_loss, reason = "two's complement")]
            put_varint_field(out, 1, seconds as u64);
            if special == Special::MicroTime {
                // Microseconds, as kube-apiserver truncates them.
                put_varint_field(out, 2, u64::from(nanos / 1000 * 1000));
            }
        }
        Special::Duration => {
            let Value::String(text) = value else {
                return Err(bad("expected a duration"));
            };
            let nanos = time::parse_duration(text).ok_or_else(|| bad("not a duration"))?;
            #[allow(clippy::cast_sign_loss, reason = "two's complement")]
            put_varint_field(out, 1, nanos as u64);
        }
        Special::RawJson => {
            let raw = serde_json::to_vec(value).map_err(|e| bad(&e.to_string()))?;
            put_bytes(out, 1, &raw);
        }
        Special::Quantity => match value {
            Value::String(s) => put_bytes(out, 1, s.as_bytes()),
            Value::Number(n) => put_bytes(out, 1, n.to_string().as_bytes()),
            _ => return Err(bad("expected a quantity")),
        },
        Special::IntOrString => match value {
            Value::Number(n) => {
                let n = n
                    .as_i64()
                    .and_then(|n| i32::try_from(n).ok())
                    .ok_or_else(|| bad("expected an int32"))?;
                put_varint_field(out, 1, 0);
                #[allow(clippy::cast_sign_loss, reason = "two's complement")]
                put_varint_field(out, 2, i64::from(n) as u64);
                put_bytes(out, 3, b"");
            }
            Value::String(s) => {
                put_varint_field(out, 1, 1);
                put_varint_field(out, 2, 0);
                put_bytes(out, 3, s.as_bytes());
            }
            _ => return Err(bad("expected a number or a string")),
        },
        Special::StringList => {
            let Value::Array(items) = value else {
                return Err(bad("expected an array of strings"));
            };
            for item in items {
                let s = item
                    .as_str()
                    .ok_or_else(|| bad("expected an array of strings"))?;
                put_bytes(out, 1, s.as_bytes());
            }
        }
    }
    Ok(())
}
