//! The defaults kube-apiserver gives the built-in kinds when they are written over HTTP, for
//! the fields clients and controllers rely on: a pod's `restartPolicy`, `dnsPolicy`,
//! `schedulerName`, `terminationGracePeriodSeconds`, its containers' `imagePullPolicy`,
//! `terminationMessagePath` and port `protocol`, and `status.phase: Pending` at create; a
//! service's `type`, `clusterIP` (allocated), `sessionAffinity`, IP families and each port's
//! `protocol` and `targetPort`; a secret's `type` and its `stringData` folded into `data`
//! (base64); a deployment's or replica set's `replicas`, strategy and history limits, and
//! their pod templates as pods.
//!
//! Only what is missing is set, and only on HTTP writes: objects written through the Rust
//! handle are stored as given, as a test seeds a cluster's state.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use kcache_store::DynamicObject;
use serde_json::{Map, Value, json};

use super::served_resource::ServedResource;

/// Sets the defaults of `resource`'s kind on `obj`; `create` for a create (a pod's phase).
/// `next_ip` gives a service its cluster IP when it has none.
pub(crate) fn apply(
    resource: &ServedResource,
    obj: &mut DynamicObject,
    create: bool,
    next_ip: &mut dyn FnMut() -> String,
) {
    let data = &mut obj.data;
    match (resource.api.group.as_str(), resource.kind.as_str()) {
        ("", "Pod") => {
            if let Some(spec) = data.get_mut("spec").and_then(Value::as_object_mut) {
                pod_spec(spec);
            }
            if create {
                let qos = qos_class(data.get("spec"));
                if let Some(status) = object_at(data, "status") {
                    status.entry("phase").or_insert_with(|| json!("Pending"));
                    status.entry("qosClass").or_insert_with(|| json!(qos));
                }
            }
        }
        ("", "Service") => {
            if let Some(spec) = data.get_mut("spec").and_then(Value::as_object_mut) {
                service_spec(spec, next_ip);
            }
        }
        ("", "Secret") => secret(data),
        ("apps", "Deployment" | "ReplicaSet") => {
            let deployment = resource.kind == "Deployment";
            let Some(spec) = data.get_mut("spec").and_then(Value::as_object_mut) else {
                return;
            };
            spec.entry("replicas").or_insert_with(|| json!(1));
            if deployment {
                spec.entry("revisionHistoryLimit")
                    .or_insert_with(|| json!(10));
                spec.entry("progressDeadlineSeconds")
                    .or_insert_with(|| json!(600));
                if let Some(strategy) = object_at(spec, "strategy") {
                    strategy
                        .entry("type")
                        .or_insert_with(|| json!("RollingUpdate"));
                    if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
                        && let Some(rolling) = object_at(strategy, "rollingUpdate")
                    {
                        rolling
                            .entry("maxUnavailable")
                            .or_insert_with(|| json!("25%"));
                        rolling.entry("maxSurge").or_insert_with(|| json!("25%"));
                    }
                }
            }
            if let Some(pod) = spec
                .get_mut("template")
                .and_then(|t| t.get_mut("spec"))
                .and_then(Value::as_object_mut)
            {
                pod_spec(pod);
            }
        }
        _ => {}
    }
}

/// The object member `key` of `map`, made an empty object if it is missing or not one.
fn object_at<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    let slot = map.entry(key).or_insert_with(|| Value::Object(Map::new()));
    if !slot.is_object() {
        *slot = Value::Object(Map::new());
    }
    slot.as_object_mut()
}

/// The quality-of-service class of a pod spec: `Guaranteed` when every container limits CPU
/// and memory and requests no other amounts, `BestEffort` when none requests or limits
/// anything, `Burstable` otherwise.
fn qos_class(spec: Option<&Value>) -> &'static str {
    let containers: Vec<&Value> = spec
        .and_then(|s| s.get("containers"))
        .and_then(Value::as_array)
        .map(|c| c.iter().collect())
        .unwrap_or_default();
    let amounts = |c: &Value, which: &str| -> Map<String, Value> {
        c.get("resources")
            .and_then(|r| r.get(which))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let any = containers
        .iter()
        .any(|c| !amounts(c, "requests").is_empty() || !amounts(c, "limits").is_empty());
    if !any {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        let limits = amounts(c, "limits");
        let requests = amounts(c, "requests");
        ["cpu", "memory"].iter().all(|r| limits.contains_key(*r))
            && requests.iter().all(|(k, v)| limits.get(k) == Some(v))
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// A pod spec's defaults, its containers' included.
fn pod_spec(spec: &mut Map<String, Value>) {
    for (key, value) in [
        ("restartPolicy", json!("Always")),
        ("dnsPolicy", json!("ClusterFirst")),
        ("schedulerName", json!("default-scheduler")),
        ("terminationGracePeriodSeconds", json!(30)),
        ("securityContext", json!({})),
        ("enableServiceLinks", json!(true)),
    ] {
        spec.entry(key).or_insert(value);
    }
    for list in ["initContainers", "containers"] {
        if let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for container in containers.iter_mut().filter_map(Value::as_object_mut) {
                container_defaults(container);
            }
        }
    }
}

/// A container's defaults: its image pull policy (`Always` for an untagged or `latest` image),
/// termination message path and policy, resources, and each port's protocol.
fn container_defaults(container: &mut Map<String, Value>) {
    let image = container
        .get("image")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let last = image.rsplit('/').next().unwrap_or_default();
    let tag = last
        .split_once('@')
        .map_or_else(|| last.split_once(':').map(|(_, t)| t), |_| Some("digest"));
    let policy = if tag.is_none_or(|t| t == "latest") {
        "Always"
    } else {
        "IfNotPresent"
    };
    container
        .entry("imagePullPolicy")
        .or_insert_with(|| json!(policy));
    container
        .entry("terminationMessagePath")
        .or_insert_with(|| json!("/dev/termination-log"));
    container
        .entry("terminationMessagePolicy")
        .or_insert_with(|| json!("File"));
    container.entry("resources").or_insert_with(|| json!({}));
    if let Some(ports) = container.get_mut("ports").and_then(Value::as_array_mut) {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            port.entry("protocol").or_insert_with(|| json!("TCP"));
        }
    }
}

/// A service spec's defaults; `next_ip` allocates its cluster IP.
fn service_spec(spec: &mut Map<String, Value>, next_ip: &mut dyn FnMut() -> String) {
    spec.entry("type").or_insert_with(|| json!("ClusterIP"));
    spec.entry("sessionAffinity")
        .or_insert_with(|| json!("None"));
    let headless_or_external = spec.get("type").and_then(Value::as_str) == Some("ExternalName");
    if !headless_or_external {
        let ip = spec
            .get("clusterIP")
            .and_then(Value::as_str)
            .filter(|ip| !ip.is_empty())
            .map_or_else(&mut *next_ip, str::to_owned);
        spec.insert("clusterIP".into(), json!(ip));
        spec.entry("clusterIPs").or_insert_with(|| json!([ip]));
        spec.entry("ipFamilies").or_insert_with(|| json!(["IPv4"]));
        spec.entry("ipFamilyPolicy")
            .or_insert_with(|| json!("SingleStack"));
        spec.entry("internalTrafficPolicy")
            .or_insert_with(|| json!("Cluster"));
    }
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            port.entry("protocol").or_insert_with(|| json!("TCP"));
            if let Some(number) = port.get("port").cloned() {
                port.entry("targetPort").or_insert(number);
            }
        }
    }
}

/// A secret's defaults: `type: Opaque`, and `stringData` moved into `data`, base64-encoded
/// (a key in both takes `stringData`'s value, as on kube-apiserver).
fn secret(data: &mut Map<String, Value>) {
    data.entry("type").or_insert_with(|| json!("Opaque"));
    let Some(Value::Object(strings)) = data.remove("stringData") else {
        return;
    };
    let Some(encoded) = object_at(data, "data") else {
        return;
    };
    for (key, value) in strings {
        if let Value::String(text) = value {
            encoded.insert(key, json!(STANDARD.encode(text)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaulted(resource: &ServedResource, body: Value) -> Value {
        let mut obj: DynamicObject = serde_json::from_value(body).unwrap();
        let mut n = 0;
        apply(resource, &mut obj, true, &mut || {
            n += 1;
            format!("10.96.0.{n}")
        });
        serde_json::to_value(&obj).unwrap()
    }

    #[test]
    fn a_pod_is_defaulted_as_kube_apiserver_does() {
        let pod = defaulted(
            &ServedResource::pods(),
            json!({"metadata": {"name": "p"}, "spec": {"containers": [
                {"name": "a", "image": "nginx", "ports": [{"containerPort": 80}]},
                {"name": "b", "image": "registry.local:5000/app:1.2"},
            ]}}),
        );
        assert_eq!(pod["spec"]["restartPolicy"], "Always");
        assert_eq!(pod["spec"]["dnsPolicy"], "ClusterFirst");
        assert_eq!(pod["spec"]["terminationGracePeriodSeconds"], 30);
        assert_eq!(pod["spec"]["containers"][0]["imagePullPolicy"], "Always");
        assert_eq!(
            pod["spec"]["containers"][1]["imagePullPolicy"],
            "IfNotPresent"
        );
        assert_eq!(pod["spec"]["containers"][0]["ports"][0]["protocol"], "TCP");
        assert_eq!(
            pod["spec"]["containers"][0]["terminationMessagePath"],
            "/dev/termination-log"
        );
        assert_eq!(pod["status"]["phase"], "Pending");
        assert_eq!(pod["status"]["qosClass"], "BestEffort");
    }

    #[test]
    fn a_service_gets_a_cluster_ip_and_its_ports_a_protocol_and_target() {
        let svc = defaulted(
            &ServedResource::services(),
            json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}),
        );
        assert_eq!(svc["spec"]["type"], "ClusterIP");
        assert_eq!(svc["spec"]["clusterIP"], "10.96.0.1");
        assert_eq!(svc["spec"]["clusterIPs"], json!(["10.96.0.1"]));
        assert_eq!(svc["spec"]["ports"][0]["protocol"], "TCP");
        assert_eq!(svc["spec"]["ports"][0]["targetPort"], 80);
        assert_eq!(svc["spec"]["sessionAffinity"], "None");
    }

    #[test]
    fn a_secrets_string_data_is_folded_into_data() {
        let secret = defaulted(
            &ServedResource::secrets(),
            json!({"metadata": {"name": "s"}, "data": {"a": "eA=="}, "stringData": {"b": "hello"}}),
        );
        assert_eq!(secret["type"], "Opaque");
        assert_eq!(secret["data"], json!({"a": "eA==", "b": "aGVsbG8="}));
        assert!(secret.get("stringData").is_none());
    }

    #[test]
    fn a_deployment_gets_replicas_strategy_and_a_defaulted_template() {
        let d = defaulted(
            &ServedResource::deployments(),
            json!({"metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [
                {"name": "a", "image": "nginx:1.27"}
            ]}}}}),
        );
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(d["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "IfNotPresent"
        );
    }
}
