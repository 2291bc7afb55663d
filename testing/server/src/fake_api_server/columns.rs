//! The columns of `kubectl get` for the kinds the fake server knows, as kube-apiserver's table
//! printers define them (`pkg/printers/internalversion`): names, types, priorities (1 = shown
//! only with `-o wide`) and the cells computed from the object's JSON. A field that is missing
//! prints as kubectl prints it there (`<none>`, `0/0`, an empty cell). Kinds without a printer
//! get `NAME AGE`, like a custom resource without printer columns.

use kcache_store::{DynamicObject, Selector};
use serde_json::{Map, Value, json};

use super::served_resource::ServedResource;
use super::util::{human_age, parse_rfc3339, value_at};

/// One column: its definition and how a cell is computed.
pub(crate) struct Column {
    /// Header as the API server names it (`Up-to-date`); kubectl prints it in capitals.
    pub(crate) name: &'static str,
    /// `string` or `integer`.
    pub(crate) kind: &'static str,
    /// 0 = always shown, 1 = `-o wide` only.
    pub(crate) priority: u8,
    /// The cell of one object, given the current time in Unix seconds.
    pub(crate) cell: fn(&DynamicObject, u64) -> Value,
}

impl Column {
    const fn new(name: &'static str, cell: fn(&DynamicObject, u64) -> Value) -> Self {
        Self {
            name,
            kind: "string",
            priority: 0,
            cell,
        }
    }

    const fn integer(mut self) -> Self {
        self.kind = "integer";
        self
    }

    const fn wide(mut self) -> Self {
        self.priority = 1;
        self
    }

    /// The `TableColumnDefinition` JSON.
    pub(crate) fn definition(&self) -> Value {
        let format = if self.name == "Name" { "name" } else { "" };
        json!({
            "name": self.name,
            "type": self.kind,
            "format": format,
            "description": self.name,
            "priority": self.priority,
        })
    }
}

/// The columns for `resource`'s kind.
pub(crate) fn columns(resource: &ServedResource) -> Vec<Column> {
    let name = Column::new("Name", |o, _| {
        json!(o.metadata.name.as_deref().unwrap_or(""))
    });
    let age = Column::new("Age", |o, now| json!(age(o, now)));
    let mut columns = match (resource.api.group.as_str(), resource.kind.as_str()) {
        ("", "Pod") => pod_columns(),
        ("apps", "Deployment") => deployment_columns(),
        ("apps", "ReplicaSet") => replica_set_columns(),
        ("", "Service") => service_columns(),
        ("", "Event") => return event_columns(),
        ("", "Node") => node_columns(),
        ("coordination.k8s.io", "Lease") => vec![Column::new("Holder", |o, _| {
            json!(str_at(o, &["spec", "holderIdentity"]))
        })],
        ("", "Namespace") => vec![Column::new("Status", |o, _| {
            json!(str_at(o, &["status", "phase"]))
        })],
        ("", "ConfigMap") => vec![
            Column::new("Data", |o, _| {
                json!(len_at(o, "data") + len_at(o, "binaryData"))
            })
            .integer(),
        ],
        ("", "Secret") => vec![
            Column::new("Type", |o, _| json!(str_at(o, &["type"]))),
            Column::new("Data", |o, _| json!(len_at(o, "data"))).integer(),
        ],
        ("", "ServiceAccount") => {
            vec![Column::new("Secrets", |o, _| json!(len_at(o, "secrets"))).integer()]
        }
        _ => Vec::new(),
    };
    // NAME first; AGE after the columns always shown (but before a node's VERSION), before the
    // wide ones.
    let at = columns
        .iter()
        .position(|c| c.priority > 0 || c.name == "Version")
        .unwrap_or(columns.len());
    columns.insert(at, age);
    columns.insert(0, name);
    columns
}

fn pod_columns() -> Vec<Column> {
    vec![
        Column::new("Ready", pod_ready),
        Column::new("Status", pod_status),
        Column::new("Restarts", pod_restarts),
        Column::new("IP", |o, _| none_if_empty(str_at(o, &["status", "podIP"]))).wide(),
        Column::new("Node", |o, _| {
            none_if_empty(str_at(o, &["spec", "nodeName"]))
        })
        .wide(),
        Column::new("Nominated Node", |o, _| {
            none_if_empty(str_at(o, &["status", "nominatedNodeName"]))
        })
        .wide(),
        Column::new("Readiness Gates", pod_readiness_gates).wide(),
    ]
}

/// CONTAINERS, IMAGES and SELECTOR of a workload with a pod template (wide).
fn template_columns() -> [Column; 3] {
    [
        Column::new("Containers", |o, _| template_containers(o, "name")).wide(),
        Column::new("Images", |o, _| template_containers(o, "image")).wide(),
        Column::new("Selector", |o, _| {
            label_selector(at(o, &["spec", "selector"]))
        })
        .wide(),
    ]
}

fn deployment_columns() -> Vec<Column> {
    let mut columns = vec![
        Column::new("Ready", |o, _| {
            json!(format!(
                "{}/{}",
                int_at(o, &["status", "readyReplicas"]),
                int_at(o, &["spec", "replicas"])
            ))
        }),
        Column::new("Up-to-date", |o, _| {
            json!(int_at(o, &["status", "updatedReplicas"]))
        })
        .integer(),
        Column::new("Available", |o, _| {
            json!(int_at(o, &["status", "availableReplicas"]))
        })
        .integer(),
    ];
    columns.extend(template_columns());
    columns
}

fn replica_set_columns() -> Vec<Column> {
    let mut columns = vec![
        Column::new("Desired", |o, _| json!(int_at(o, &["spec", "replicas"]))).integer(),
        Column::new("Current", |o, _| json!(int_at(o, &["status", "replicas"]))).integer(),
        Column::new("Ready", |o, _| {
            json!(int_at(o, &["status", "readyReplicas"]))
        })
        .integer(),
    ];
    columns.extend(template_columns());
    columns
}

fn service_columns() -> Vec<Column> {
    vec![
        Column::new("Type", |o, _| json!(service_type(o))),
        Column::new("Cluster-IP", |o, _| {
            none_if_empty(str_at(o, &["spec", "clusterIP"]))
        }),
        Column::new("External-IP", service_external_ip),
        Column::new("Port(s)", service_ports),
        Column::new("Selector", |o, _| match at(o, &["spec", "selector"]) {
            Some(Value::Object(m)) => format_labels(m),
            _ => json!("<none>"),
        })
        .wide(),
    ]
}

/// Events have no NAME first and no AGE: they print when they were last and first seen.
fn event_columns() -> Vec<Column> {
    vec![
        Column::new("Last Seen", event_last_seen),
        Column::new("Type", |o, _| json!(str_at(o, &["type"]))),
        Column::new("Reason", |o, _| json!(str_at(o, &["reason"]))),
        Column::new("Object", |o, _| {
            json!(format!(
                "{}/{}",
                str_at(o, &["involvedObject", "kind"]).to_lowercase(),
                str_at(o, &["involvedObject", "name"])
            ))
        }),
        Column::new("Subobject", |o, _| {
            json!(str_at(o, &["involvedObject", "fieldPath"]))
        })
        .wide(),
        Column::new("Source", event_source).wide(),
        Column::new("Message", |o, _| json!(str_at(o, &["message"]))),
        Column::new("First Seen", |o, now| {
            json!(since(o, &[&["firstTimestamp"], &["eventTime"]], now))
        })
        .wide(),
        Column::new("Count", |o, _| json!(int_at(o, &["count"])))
            .integer()
            .wide(),
        Column::new("Name", |o, _| {
            json!(o.metadata.name.as_deref().unwrap_or(""))
        })
        .wide(),
    ]
}

fn node_columns() -> Vec<Column> {
    vec![
        Column::new("Status", node_status),
        Column::new("Roles", node_roles),
        Column::new("Version", |o, _| {
            json!(str_at(o, &["status", "nodeInfo", "kubeletVersion"]))
        }),
        Column::new("Internal-IP", |o, _| node_address(o, "InternalIP")).wide(),
        Column::new("External-IP", |o, _| node_address(o, "ExternalIP")).wide(),
        Column::new("OS-Image", |o, _| node_info(o, "osImage")).wide(),
        Column::new("Kernel-Version", |o, _| node_info(o, "kernelVersion")).wide(),
        Column::new("Container-Runtime", |o, _| {
            node_info(o, "containerRuntimeVersion")
        })
        .wide(),
    ]
}

/// The value at `path` in the object's non-metadata fields.
fn at<'o>(o: &'o DynamicObject, path: &[&str]) -> Option<&'o Value> {
    value_at(o, path.iter().copied())
}

fn str_at<'o>(o: &'o DynamicObject, path: &[&str]) -> &'o str {
    at(o, path).and_then(Value::as_str).unwrap_or("")
}

fn int_at(o: &DynamicObject, path: &[&str]) -> i64 {
    at(o, path).and_then(Value::as_i64).unwrap_or(0)
}

/// Entries of the map or list at top-level field `field`.
fn len_at(o: &DynamicObject, field: &str) -> usize {
    match o.data.get(field) {
        Some(Value::Object(m)) => m.len(),
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    }
}

fn none_if_empty(s: &str) -> Value {
    json!(if s.is_empty() { "<none>" } else { s })
}

fn items(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// Age since creation, `<unknown>` without a creation timestamp.
fn age(o: &DynamicObject, now: u64) -> String {
    o.metadata
        .creation_timestamp
        .as_deref()
        .and_then(parse_rfc3339)
        .map_or_else(
            || "<unknown>".to_owned(),
            |t| human_age(now.saturating_sub(t)),
        )
}

/// Age since the first timestamp found at `paths`, else since creation.
fn since(o: &DynamicObject, paths: &[&[&str]], now: u64) -> String {
    paths
        .iter()
        .find_map(|p| at(o, p).and_then(Value::as_str).and_then(parse_rfc3339))
        .map_or_else(|| age(o, now), |t| human_age(now.saturating_sub(t)))
}

fn pod_ready(o: &DynamicObject, _: u64) -> Value {
    let total = items(at(o, &["spec", "containers"])).len();
    let ready = items(at(o, &["status", "containerStatuses"]))
        .iter()
        .filter(|s| {
            s.get("ready").and_then(Value::as_bool) == Some(true)
                && s.get("state").and_then(|st| st.get("running")).is_some()
        })
        .count();
    json!(format!("{ready}/{total}"))
}

/// The pod's phase, refined as kubectl's `printPod` does: the pod's reason, then a container's
/// waiting or terminated reason, `Terminating` once deleted.
fn pod_status(o: &DynamicObject, _: u64) -> Value {
    let mut reason = str_at(o, &["status", "phase"]).to_owned();
    let pod_reason = str_at(o, &["status", "reason"]);
    if !pod_reason.is_empty() {
        pod_reason.clone_into(&mut reason);
    }
    let mut running = false;
    for status in items(at(o, &["status", "containerStatuses"])).iter().rev() {
        let state = status.get("state");
        let of = |s: &str, field: &str| {
            state
                .and_then(|st| st.get(s))
                .and_then(|st| st.get(field))
                .and_then(Value::as_str)
                .filter(|r| !r.is_empty())
                .map(str::to_owned)
        };
        if let Some(waiting) = of("waiting", "reason") {
            reason = waiting;
        } else if let Some(terminated) = of("terminated", "reason") {
            reason = terminated;
        } else if state.and_then(|st| st.get("running")).is_some()
            && status.get("ready").and_then(Value::as_bool) == Some(true)
        {
            running = true;
        }
    }
    if reason == "Completed" && running {
        "Running".clone_into(&mut reason);
    }
    if o.metadata.deletion_timestamp.is_some() {
        reason = if pod_reason == "NodeLost" {
            "Unknown".to_owned()
        } else {
            "Terminating".to_owned()
        };
    }
    json!(reason)
}

/// Restarts summed over the containers, with the last one's age: `2 (5m ago)`.
fn pod_restarts(o: &DynamicObject, now: u64) -> Value {
    let statuses = items(at(o, &["status", "containerStatuses"]));
    let restarts: i64 = statuses
        .iter()
        .filter_map(|s| s.get("restartCount").and_then(Value::as_i64))
        .sum();
    let last = statuses
        .iter()
        .filter_map(|s| {
            s.get("lastState")?
                .get("terminated")?
                .get("finishedAt")?
                .as_str()
                .and_then(parse_rfc3339)
        })
        .max();
    json!(match last {
        Some(t) if restarts > 0 => format!("{restarts} ({} ago)", human_age(now.saturating_sub(t))),
        _ => restarts.to_string(),
    })
}

fn pod_readiness_gates(o: &DynamicObject, _: u64) -> Value {
    let gates = items(at(o, &["spec", "readinessGates"]));
    if gates.is_empty() {
        return json!("<none>");
    }
    let conditions = items(at(o, &["status", "conditions"]));
    let true_count = gates
        .iter()
        .filter(|g| {
            let kind = g.get("conditionType");
            conditions
                .iter()
                .any(|c| c.get("type") == kind && c.get("status") == Some(&json!("True")))
        })
        .count();
    json!(format!("{true_count}/{}", gates.len()))
}

/// `field` of each container of the pod template, comma-separated.
fn template_containers(o: &DynamicObject, field: &str) -> Value {
    let names: Vec<&str> = items(at(o, &["spec", "template", "spec", "containers"]))
        .iter()
        .filter_map(|c| c.get(field).and_then(Value::as_str))
        .collect();
    json!(names.join(","))
}

/// A selector map (a service's `spec.selector`) as `labels.FormatLabels` writes it: `k=v`
/// terms sorted by key (through kcache's [`Selector`], which prints as Kubernetes does),
/// `<none>` when empty.
fn format_labels(labels: &Map<String, Value>) -> Value {
    let pairs = labels
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")));
    none_if_empty(&Selector::from_labels(pairs).to_string())
}

/// A `LabelSelector` as `metav1.FormatLabelSelector` writes it: its requirements sorted by key
/// and their values sorted (through kcache's [`Selector`], which prints as Kubernetes does);
/// `<none>` when absent or empty, `<error>` when it is not a valid selector.
fn label_selector(selector: Option<&Value>) -> Value {
    let Some(selector) = selector else {
        return json!("<none>");
    };
    match selector_text(selector).and_then(|text| Selector::parse(&text).ok()) {
        Some(parsed) => none_if_empty(&parsed.to_string()),
        None => json!("<error>"),
    }
}

/// The selector syntax of a `LabelSelector`'s `matchLabels` and `matchExpressions`, to be
/// parsed into a [`Selector`]; `None` for what `metav1.LabelSelectorAsSelector` refuses: an
/// unknown operator, values with `Exists`/`DoesNotExist` or none with `In`/`NotIn`, a key or a
/// value that is not a string of label characters.
fn selector_text(selector: &Value) -> Option<String> {
    let mut terms = Vec::new();
    if let Some(labels) = selector.get("matchLabels").filter(|l| !l.is_null()) {
        for (key, value) in labels.as_object()? {
            let value = label_word(value.as_str()?)?;
            terms.push(format!("{}={value}", label_word(key)?));
        }
    }
    for expr in items(selector.get("matchExpressions")) {
        let key = label_word(expr.get("key")?.as_str()?)?;
        let values = items(expr.get("values"))
            .iter()
            .map(|v| v.as_str().and_then(label_word))
            .collect::<Option<Vec<&str>>>()?;
        terms.push(match (expr.get("operator")?.as_str()?, values.is_empty()) {
            ("In", false) => format!("{key} in ({})", values.join(",")),
            ("NotIn", false) => format!("{key} notin ({})", values.join(",")),
            ("Exists", true) => key.to_owned(),
            ("DoesNotExist", true) => format!("!{key}"),
            _ => return None,
        });
    }
    Some(terms.join(","))
}

/// `word` if it is made of label characters (letters, digits, `-`, `_`, `.`, `/`): nothing the
/// selector syntax would read as an operator or a separator.
fn label_word(word: &str) -> Option<&str> {
    word.bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/'))
        .then_some(word)
}

/// `spec.type`, `ClusterIP` (the API server's default) when unset.
fn service_type(o: &DynamicObject) -> &str {
    match str_at(o, &["spec", "type"]) {
        "" => "ClusterIP",
        t => t,
    }
}

fn service_external_ip(o: &DynamicObject, _: u64) -> Value {
    let external: Vec<&str> = items(at(o, &["spec", "externalIPs"]))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    match service_type(o) {
        "ExternalName" => json!(str_at(o, &["spec", "externalName"])),
        "LoadBalancer" => {
            let mut ips: Vec<&str> = items(at(o, &["status", "loadBalancer", "ingress"]))
                .iter()
                .filter_map(|i| {
                    i.get("ip")
                        .or_else(|| i.get("hostname"))
                        .and_then(Value::as_str)
                })
                .collect();
            ips.extend(&external);
            if ips.is_empty() {
                json!("<pending>")
            } else {
                json!(ips.join(","))
            }
        }
        _ if external.is_empty() => json!("<none>"),
        _ => json!(external.join(",")),
    }
}

fn service_ports(o: &DynamicObject, _: u64) -> Value {
    let ports: Vec<String> = items(at(o, &["spec", "ports"]))
        .iter()
        .map(|p| {
            let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
            let protocol = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
            match p.get("nodePort").and_then(Value::as_i64) {
                Some(node) if node > 0 => format!("{port}:{node}/{protocol}"),
                _ => format!("{port}/{protocol}"),
            }
        })
        .collect();
    if ports.is_empty() {
        json!("<none>")
    } else {
        json!(ports.join(","))
    }
}

fn event_last_seen(o: &DynamicObject, now: u64) -> Value {
    let paths: [&[&str]; 3] = [&["lastTimestamp"], &["eventTime"], &["firstTimestamp"]];
    json!(since(o, &paths, now))
}

/// `component, host`, as kubectl's `formatEventSource`.
fn event_source(o: &DynamicObject, _: u64) -> Value {
    let component = match str_at(o, &["source", "component"]) {
        "" => str_at(o, &["reportingComponent"]),
        c => c,
    };
    let host = match str_at(o, &["source", "host"]) {
        "" => str_at(o, &["reportingInstance"]),
        h => h,
    };
    json!(match (component, host) {
        (c, "") => c.to_owned(),
        (c, h) => format!("{c}, {h}"),
    })
}

/// `Ready`, `NotReady` or `Unknown` from the `Ready` condition, `,SchedulingDisabled` when
/// cordoned.
fn node_status(o: &DynamicObject, _: u64) -> Value {
    let ready = items(at(o, &["status", "conditions"]))
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
        .and_then(|c| c.get("status").and_then(Value::as_str));
    let mut status = match ready {
        Some("True") => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }
    .to_owned();
    if at(o, &["spec", "unschedulable"]).and_then(Value::as_bool) == Some(true) {
        status.push_str(",SchedulingDisabled");
    }
    json!(status)
}

/// The roles from `node-role.kubernetes.io/<role>` and `kubernetes.io/role` labels.
fn node_roles(o: &DynamicObject, _: u64) -> Value {
    let mut roles: Vec<&str> = o
        .metadata
        .labels
        .iter()
        .flatten()
        .filter_map(|(k, v)| match k.strip_prefix("node-role.kubernetes.io/") {
            Some(role) if !role.is_empty() => Some(role),
            _ if k == "kubernetes.io/role" && !v.is_empty() => Some(v.as_str()),
            _ => None,
        })
        .collect();
    roles.sort_unstable();
    roles.dedup();
    none_if_empty(&roles.join(","))
}

fn node_address(o: &DynamicObject, kind: &str) -> Value {
    let address = items(at(o, &["status", "addresses"]))
        .iter()
        .find(|a| a.get("type").and_then(Value::as_str) == Some(kind))
        .and_then(|a| a.get("address").and_then(Value::as_str))
        .unwrap_or("");
    none_if_empty(address)
}

fn node_info(o: &DynamicObject, field: &str) -> Value {
    match str_at(o, &["status", "nodeInfo", field]) {
        "" => json!("<unknown>"),
        v => json!(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selector_maps_print_sorted_by_key() {
        let labels = json!({"b": "2", "a.b": "x", "a": "1"});
        let Value::Object(labels) = labels else {
            unreachable!()
        };
        // By key, as kubectl prints them: "a" before "a.b" (sorting "k=v" strings would not).
        assert_eq!(format_labels(&labels), json!("a=1,a.b=x,b=2"));
        assert_eq!(format_labels(&Map::new()), json!("<none>"));
    }

    #[test]
    fn label_selectors_print_as_format_label_selector() {
        let selector = json!({
            "matchLabels": {"tier": "web", "app": "x"},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "dev"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "zone", "operator": "NotIn", "values": ["b", "a"]},
                {"key": "track", "operator": "Exists", "values": []},
            ],
        });
        assert_eq!(
            label_selector(Some(&selector)),
            json!("app=x,!canary,env in (dev,prod),tier=web,track,zone notin (a,b)")
        );
        assert_eq!(label_selector(None), json!("<none>"));
        assert_eq!(label_selector(Some(&json!({}))), json!("<none>"));
        assert_eq!(
            label_selector(Some(
                &json!({"matchLabels": null, "matchExpressions": null})
            )),
            json!("<none>")
        );
        for invalid in [
            json!({"matchExpressions": [{"key": "a", "operator": "Near", "values": ["b"]}]}),
            json!({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}),
            json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["b"]}]}),
            json!({"matchLabels": {"a": "b,c"}}),
            json!({"matchLabels": {"a b": "c"}}),
        ] {
            assert_eq!(
                label_selector(Some(&invalid)),
                json!("<error>"),
                "{invalid}"
            );
        }
    }
}
