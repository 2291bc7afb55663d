//! A [`LeaseRecord`] to and from a `coordination.k8s.io/v1` Lease's `spec` as JSON
//! ([`LeaseRecord::from_spec`], [`LeaseRecord::write_spec`]), mapped by hand so that no
//! k8s-openapi type is needed: what an HTTP lease lock reads and writes, and what a test of
//! one (or a fake server's Lease) can check against.

use serde_json::{Map, Value};

use crate::{DecodeError, Error, LeaseRecord};

/// The `spec` fields of a Lease that hold the record.
const HOLDER_IDENTITY: &str = "holderIdentity";
const LEASE_DURATION_SECONDS: &str = "leaseDurationSeconds";
const ACQUIRE_TIME: &str = "acquireTime";
const RENEW_TIME: &str = "renewTime";
const LEASE_TRANSITIONS: &str = "leaseTransitions";

impl LeaseRecord {
    /// The record in a Lease's `spec`: its five fields (`holderIdentity`,
    /// `leaseDurationSeconds`, `acquireTime`, `renewTime`, `leaseTransitions`), each `None` when
    /// absent or `null`; other fields (`preferredHolder`, `strategy`) are ignored. A `null` spec
    /// (or a missing one, passed as [`Value::Null`]) is the empty record.
    ///
    /// ```
    /// use kcache_reflector::LeaseRecord;
    /// use serde_json::json;
    ///
    /// let spec = json!({"holderIdentity": "pod-a", "leaseDurationSeconds": 15,
    ///                   "preferredHolder": "pod-b"});
    /// let record = LeaseRecord::from_spec(&spec)?;
    /// assert_eq!(record.holder(), Some("pod-a"));
    /// assert_eq!(record.lease_duration_seconds, Some(15));
    ///
    /// let e = LeaseRecord::from_spec(&json!({"holderIdentity": 7})).unwrap_err();
    /// assert_eq!(
    ///     e.to_string(),
    ///     "could not decode lease: spec.holderIdentity is not of the type a Lease has"
    /// );
    /// # Ok::<(), kcache_reflector::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// An [`Error::Decode`] whose [`DecodeError`] (context `lease`) names the first field of
    /// the wrong type (never its value), or says the spec is not an object. Add the Lease's
    /// identity with [`DecodeError::with_object`].
    pub fn from_spec(spec: &Value) -> Result<Self, Error> {
        let spec = match spec {
            Value::Null => return Ok(Self::default()),
            Value::Object(spec) => spec,
            _ => {
                return Err(Error::decode(DecodeError::new(
                    "lease",
                    "spec is not an object",
                )));
            }
        };
        Self::from_fields(spec).map_err(|field| {
            Error::decode(DecodeError::new(
                "lease",
                format!("spec.{field} is not of the type a Lease has"),
            ))
        })
    }

    /// The record in the fields of a `spec`; `Err` names the first field of the wrong type.
    fn from_fields(spec: &Map<String, Value>) -> Result<Self, &'static str> {
        let string = |field: &'static str| match spec.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(field),
        };
        let int = |field: &'static str| match spec.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .map(Some)
                .ok_or(field),
        };
        Ok(Self {
            holder_identity: string(HOLDER_IDENTITY)?,
            lease_duration_seconds: int(LEASE_DURATION_SECONDS)?,
            acquire_time: string(ACQUIRE_TIME)?,
            renew_time: string(RENEW_TIME)?,
            lease_transitions: int(LEASE_TRANSITIONS)?,
        })
    }

    /// Writes the record into a Lease's `spec`: each of its five fields the record sets is
    /// written, each it does not set (`None`) is removed, and every other field of `spec`
    /// (`preferredHolder`, `strategy`, fields of later API versions) is kept.
    ///
    /// ```
    /// use kcache_reflector::LeaseRecord;
    /// use serde_json::json;
    ///
    /// let mut spec = json!({"holderIdentity": "pod-a", "leaseTransitions": 1,
    ///                       "preferredHolder": "pod-b"});
    /// let mut released = LeaseRecord::default();
    /// released.lease_transitions = Some(1);
    /// released.write_spec(spec.as_object_mut().expect("an object"));
    /// assert_eq!(spec, json!({"leaseTransitions": 1, "preferredHolder": "pod-b"}));
    /// ```
    pub fn write_spec(&self, spec: &mut Map<String, Value>) {
        let mut set = |field: &str, value: Option<Value>| match value {
            Some(v) => {
                spec.insert(field.to_owned(), v);
            }
            None => {
                spec.remove(field);
            }
        };
        set(
            HOLDER_IDENTITY,
            self.holder_identity.clone().map(Value::from),
        );
        set(
            LEASE_DURATION_SECONDS,
            self.lease_duration_seconds.map(Value::from),
        );
        set(ACQUIRE_TIME, self.acquire_time.clone().map(Value::from));
        set(RENEW_TIME, self.renew_time.clone().map(Value::from));
        set(LEASE_TRANSITIONS, self.lease_transitions.map(Value::from));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn full() -> LeaseRecord {
        LeaseRecord {
            holder_identity: Some("a".into()),
            lease_duration_seconds: Some(15),
            acquire_time: Some("2026-01-01T00:00:00.000000Z".into()),
            renew_time: Some("2026-01-01T00:00:05.000000Z".into()),
            lease_transitions: Some(2),
        }
    }

    #[test]
    fn records_map_to_the_spec_and_back_keeping_other_fields() {
        let mut spec = json!({"preferredHolder": "b", "holderIdentity": "old"});
        full().write_spec(spec.as_object_mut().unwrap());
        assert_eq!(
            spec,
            json!({
                "preferredHolder": "b", "holderIdentity": "a", "leaseDurationSeconds": 15,
                "acquireTime": "2026-01-01T00:00:00.000000Z",
                "renewTime": "2026-01-01T00:00:05.000000Z", "leaseTransitions": 2,
            })
        );
        assert_eq!(LeaseRecord::from_spec(&spec).unwrap(), full());
    }

    #[test]
    fn unset_fields_are_removed_and_null_reads_as_unset() {
        let mut spec = json!({"holderIdentity": "a", "leaseTransitions": 1});
        LeaseRecord::default().write_spec(spec.as_object_mut().unwrap());
        assert_eq!(spec, json!({}));
        assert_eq!(
            LeaseRecord::from_spec(&Value::Null).unwrap(),
            LeaseRecord::default()
        );
        let nulls = json!({"holderIdentity": null, "leaseDurationSeconds": null});
        assert_eq!(
            LeaseRecord::from_spec(&nulls).unwrap(),
            LeaseRecord::default()
        );
    }

    #[test]
    fn a_spec_of_the_wrong_shape_names_the_field_not_its_value() {
        let e = LeaseRecord::from_spec(&json!({"renewTime": 12345})).unwrap_err();
        assert_eq!(
            e.to_string(),
            "could not decode lease: spec.renewTime is not of the type a Lease has"
        );
        let e = LeaseRecord::from_spec(&json!({"leaseDurationSeconds": 1e12})).unwrap_err();
        assert!(e.to_string().contains("spec.leaseDurationSeconds"), "{e}");
        let e =
            LeaseRecord::from_spec(&json!({"leaseTransitions": 5_000_000_000_i64})).unwrap_err();
        assert!(e.to_string().contains("spec.leaseTransitions"), "{e}");
        let e = LeaseRecord::from_spec(&json!("x")).unwrap_err();
        assert!(e.to_string().ends_with("spec is not an object"), "{e}");
    }
}
