//! [`FieldSet`]: a set of field paths of an object, as `metadata.managedFields[].fieldsV1`
//! records the fields a field manager owns, with its set operations and its `FieldsV1` JSON.
//!
//! A path is a list of [`PathElement`]s: a map field (`f:<name>`), an entry of a list whose
//! items are keyed by some of their fields (`k:{"name":"x"}`, the key fields in name order), an
//! entry of a list of unique scalars (`v:"x"`), or an index (`i:<n>`, never written for the
//! kinds served here). In the JSON each element is an object member; a member with no content
//! is an owned leaf, and `".": {}` inside a non-empty member says the node itself is owned too
//! (a list entry, whose presence is owned as well as its fields).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};

use serde_json::{Map, Value};

/// A scalar in a path element (a key field's value, a set entry), ordered null, booleans,
/// numbers (by value), strings, then anything else by its JSON.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Scalar(pub(crate) Value);

impl Eq for Scalar {}

impl Scalar {
    /// The rank of the value's type in the order.
    fn rank(&self) -> u8 {
        match self.0 {
            Value::Null => 0,
            Value::Bool(_) => 1,
            Value::Number(_) => 2,
            Value::String(_) => 3,
            Value::Array(_) | Value::Object(_) => 4,
        }
    }
}

impl Ord for Scalar {
    fn cmp(&self, other: &Self) -> Ordering {
        let by_value = match (&self.0, &other.0) {
            (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
            (Value::Number(a), Value::Number(b)) => a
                .as_f64()
                .partial_cmp(&b.as_f64())
                .unwrap_or(Ordering::Equal),
            (Value::String(a), Value::String(b)) => a.cmp(b),
            _ => Ordering::Equal,
        };
        self.rank()
            .cmp(&other.rank())
            .then(by_value)
            // Equal numbers written differently (1 and 1.0) and composite values stay apart.
            .then_with(|| self.0.to_string().cmp(&other.0.to_string()))
    }
}

impl PartialOrd for Scalar {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// One step of a field path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum PathElement {
    /// A field of a map: `f:<name>`.
    Field(String),
    /// An entry of a list keyed by some of its fields, in name order: `k:{...}`.
    Key(Vec<(String, Scalar)>),
    /// An entry of a list of unique scalars: `v:<json>`.
    Value(Scalar),
    /// An entry of a list by position: `i:<n>`.
    Index(usize),
}

impl PathElement {
    /// The element as a `FieldsV1` member name (`f:spec`, `k:{"name":"a"}`, ...).
    fn fields_v1_key(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(fields) => {
                let object: Map<String, Value> = fields
                    .iter()
                    .map(|(name, value)| (name.clone(), value.0.clone()))
                    .collect();
                format!("k:{}", Value::Object(object))
            }
            PathElement::Value(value) => format!("v:{}", value.0),
            PathElement::Index(index) => format!("i:{index}"),
        }
    }

    /// The element of a `FieldsV1` member name.
    fn from_fields_v1_key(key: &str) -> Result<Self, String> {
        let bad = || format!("invalid fieldsV1 key {key:?}");
        let (prefix, rest) = key.split_once(':').ok_or_else(bad)?;
        match prefix {
            "f" => Ok(PathElement::Field(rest.to_owned())),
            "k" => match serde_json::from_str::<Value>(rest).map_err(|_| bad())? {
                Value::Object(fields) => Ok(PathElement::Key(
                    fields
                        .into_iter()
                        .map(|(name, value)| (name, Scalar(value)))
                        .collect(),
                )),
                _ => Err(bad()),
            },
            "v" => serde_json::from_str(rest)
                .map(|v| PathElement::Value(Scalar(v)))
                .map_err(|_| bad()),
            "i" => rest.parse().map(PathElement::Index).map_err(|_| bad()),
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for PathElement {
    /// As conflict messages print it: `.name`, `[name="a",port=80]`, `[="x"]`, `[3]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                f.write_char('[')?;
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_char(',')?;
                    }
                    write!(f, "{name}={}", value.0)?;
                }
                f.write_char(']')
            }
            PathElement::Value(value) => write!(f, "[={}]", value.0),
            PathElement::Index(index) => write!(f, "[{index}]"),
        }
    }
}

/// A path as conflict messages print it: `.spec.containers[name="a"].image`.
pub(crate) fn path_string(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

/// A set of paths, as a tree: the elements owned at this level (`members`) and the sets under
/// elements with owned paths below them (`children`, never empty).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FieldSet {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    /// Whether the set has no path.
    pub(crate) fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    /// Adds `path` (nothing for an empty one).
    pub(crate) fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// Whether `path` is in the set.
    #[cfg(test)]
    pub(crate) fn contains(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.contains(rest)),
        }
    }

    /// Whether the element is owned here or has owned paths below it.
    pub(crate) fn has(&self, element: &PathElement) -> bool {
        self.members.contains(element) || self.children.contains_key(element)
    }

    /// The set below `element`, if it has paths below it.
    pub(crate) fn child(&self, element: &PathElement) -> Option<&FieldSet> {
        self.children.get(element)
    }

    /// Every element owned here or with paths below it, in order.
    pub(crate) fn elements(&self) -> BTreeSet<&PathElement> {
        self.members.iter().chain(self.children.keys()).collect()
    }

    /// The paths in this set or in `other`.
    pub(crate) fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.union_with(other);
        out
    }

    /// Adds the paths of `other`.
    pub(crate) fn union_with(&mut self, other: &FieldSet) {
        self.members.extend(other.members.iter().cloned());
        for (element, child) in &other.children {
            self.children
                .entry(element.clone())
                .or_default()
                .union_with(child);
        }
    }

    /// The paths in this set and not in `other`.
    pub(crate) fn difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(element, child)| {
                let rest = match other.children.get(element) {
                    Some(o) => child.difference(o),
                    None => child.clone(),
                };
                (!rest.is_empty()).then(|| (element.clone(), rest))
            })
            .collect();
        FieldSet { members, children }
    }

    /// The paths in both sets.
    pub(crate) fn intersection(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.intersection(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(element, child)| {
                let both = child.intersection(other.children.get(element)?);
                (!both.is_empty()).then(|| (element.clone(), both))
            })
            .collect();
        FieldSet { members, children }
    }

    /// Every path, this level's members first, then those below each child, in order.
    pub(crate) fn paths(&self) -> Vec<Vec<PathElement>> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Vec<PathElement>>) {
        for member in &self.members {
            let mut path = prefix.clone();
            path.push(member.clone());
            out.push(path);
        }
        for (element, child) in &self.children {
            prefix.push(element.clone());
            child.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// The set as `FieldsV1` JSON.
    pub(crate) fn to_fields_v1(&self) -> Value {
        let mut out = Map::new();
        for element in self.elements() {
            let value = match self.children.get(element) {
                Some(child) => {
                    let Value::Object(mut inner) = child.to_fields_v1() else {
                        continue;
                    };
                    if self.members.contains(element) {
                        inner.insert(".".to_owned(), Value::Object(Map::new()));
                    }
                    Value::Object(inner)
                }
                None => Value::Object(Map::new()),
            };
            out.insert(element.fields_v1_key(), value);
        }
        Value::Object(out)
    }

    /// The set of `FieldsV1` JSON.
    ///
    /// # Errors
    ///
    /// A member name that is no path element, or a member that is not an object.
    pub(crate) fn from_fields_v1(value: &Value) -> Result<FieldSet, String> {
        let Value::Object(members) = value else {
            return Err("fieldsV1 is not an object".to_owned());
        };
        let mut set = FieldSet::default();
        for (key, inner) in members {
            if key == "." {
                continue;
            }
            let element = PathElement::from_fields_v1_key(key)?;
            let Value::Object(inner_members) = inner else {
                return Err(format!("fieldsV1 member {key:?} is not an object"));
            };
            let child = FieldSet::from_fields_v1(inner)?;
            if inner_members.is_empty() || inner_members.contains_key(".") {
                set.members.insert(element.clone());
            }
            if !child.is_empty() {
                set.children.insert(element, child);
            }
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn field(name: &str) -> PathElement {
        PathElement::Field(name.to_owned())
    }

    fn key(name: &str, value: Value) -> PathElement {
        PathElement::Key(vec![(name.to_owned(), Scalar(value))])
    }

    #[test]
    fn fields_v1_round_trips_with_dots_for_owned_nodes() {
        let json = json!({
            "f:metadata": {"f:labels": {"f:app": {}}, "f:finalizers": {"v:\"a/b\"": {}}},
            "f:spec": {
                "f:replicas": {},
                "f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:name": {},
                        "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {}}},
                }}},
            },
        });
        let set = FieldSet::from_fields_v1(&json).unwrap();
        assert_eq!(set.to_fields_v1(), json);
        let container = [
            field("spec"),
            field("template"),
            field("spec"),
            field("containers"),
            key("name", json!("web")),
        ];
        assert!(set.contains(&container));
        let mut image = container.to_vec();
        image.push(field("image"));
        assert!(set.contains(&image));
        assert_eq!(
            path_string(&image),
            ".spec.template.spec.containers[name=\"web\"].image"
        );
        assert!(!set.contains(&[field("spec")]));
        assert!(FieldSet::from_fields_v1(&json!({"x:y": {}})).is_err());
        assert!(FieldSet::from_fields_v1(&json!({"f:a": 1})).is_err());
    }

    #[test]
    fn set_operations() {
        let set = |v: Value| FieldSet::from_fields_v1(&v).unwrap();
        let a = set(json!({"f:spec": {"f:a": {}, "f:b": {}}, "f:data": {"f:x": {}}}));
        let b = set(json!({"f:spec": {"f:b": {}, "f:c": {}}}));
        assert_eq!(
            a.union(&b),
            set(json!({"f:spec": {"f:a": {}, "f:b": {}, "f:c": {}}, "f:data": {"f:x": {}}}))
        );
        assert_eq!(
            a.difference(&b),
            set(json!({"f:spec": {"f:a": {}}, "f:data": {"f:x": {}}}))
        );
        assert_eq!(a.intersection(&b), set(json!({"f:spec": {"f:b": {}}})));
        assert!(a.difference(&a).is_empty());
        let paths: Vec<String> = a.paths().iter().map(|p| path_string(p)).collect();
        assert_eq!(paths, [".data.x", ".spec.a", ".spec.b"]);
    }

    #[test]
    fn numbers_order_by_value() {
        let mut keys = [
            key("containerPort", json!(8080)),
            key("containerPort", json!(80)),
            key("containerPort", json!(443)),
        ];
        keys.sort();
        let shown: Vec<String> = keys.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "[containerPort=80]",
                "[containerPort=443]",
                "[containerPort=8080]"
            ]
        );
    }
}
