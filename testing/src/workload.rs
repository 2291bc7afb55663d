//! Workload generators: realistic pods of two shapes ([`PodShape`]: about 5 KB and about 18 KB
//! of JSON), pure JSON with no server or HTTP behind them. The churn driver that writes them to a fake API server is
//! `kcache_testing_server::Churn`.

use kcache_store::DynamicObject;
use serde_json::{Value, json};
use std::collections::BTreeMap;

use crate::generated::{rfc3339, suffix, uuid};

const APPS: [&str; 8] = [
    "web",
    "api",
    "worker",
    "cache",
    "db-proxy",
    "ingest",
    "scheduler",
    "metrics",
];
const IMAGES: [&str; 4] = [
    "registry.example.com/app/server",
    "registry.example.com/app/worker",
    "docker.io/library/nginx",
    "quay.io/prometheus/node-exporter",
];

/// What the generated pods look like.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum PodShape {
    /// About 5 KB of JSON: two containers with a readiness probe, a projected volume,
    /// `managedFields` of two managers (about a fifth of the bytes), four conditions.
    #[default]
    Light,
    /// About 18 KB of JSON, as a pod of a service mesh or an operator-managed workload is: an
    /// init container and three containers with three probes each, secret, config map and
    /// projected volumes, `managedFields` of four managers listing every field they own (over a
    /// third of the bytes), five conditions and a status per container.
    Heavy,
}

impl PodShape {
    /// The shape named `name` (`light` or `heavy`).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "light" => Some(Self::Light),
            "heavy" => Some(Self::Heavy),
            _ => None,
        }
    }

    /// Its name, as [`parse`](Self::parse) takes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Light => "light",
            Self::Heavy => "heavy",
        }
    }
}

/// A seeded source of realistic pods: same seed, same pods.
#[derive(Debug, Clone)]
pub struct PodGenerator {
    rng: fastrand::Rng,
    namespaces: usize,
    next: u64,
    shape: PodShape,
}

impl PodGenerator {
    /// Pods spread over `namespaces` namespaces named `ns-0`, `ns-1`, ... (at least one).
    pub fn new(seed: u64, namespaces: usize) -> Self {
        Self::with_shape(seed, namespaces, PodShape::Light)
    }

    /// Pods of `shape` spread over `namespaces` namespaces (see [`new`](Self::new)).
    pub fn with_shape(seed: u64, namespaces: usize, shape: PodShape) -> Self {
        Self {
            rng: fastrand::Rng::with_seed(seed),
            namespaces: namespaces.max(1),
            next: 0,
            shape,
        }
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        let i = usize::try_from(self.rng.u64(..) % items.len() as u64).unwrap_or(0);
        items[i]
    }

    /// The next pod, named `<app>-<hash>-<suffix>` in one of the namespaces.
    pub fn next_pod(&mut self) -> DynamicObject {
        let ns_index = self.rng.u64(..) % self.namespaces as u64;
        let namespace = format!("ns-{ns_index}");
        let app = self.pick(&APPS);
        let hash = format!("{:08x}", self.rng.u64(..) & 0xFFFF_FFFF);
        let name = format!("{app}-{hash}-{}{}", suffix(&mut self.rng), self.next);
        self.next += 1;
        match self.shape {
            PodShape::Light => pod(&mut self.rng, &namespace, &name, app),
            PodShape::Heavy => heavy_pod(&mut self.rng, &namespace, &name, app),
        }
    }

    /// A changed copy of `pod`: a new status (phase, restart count, condition times) and
    /// annotation, as a kubelet or controller would write.
    pub fn mutate(&mut self, pod: &DynamicObject) -> DynamicObject {
        let mut pod = pod.clone();
        pod.metadata.resource_version = None;
        let n = self.rng.u64(..);
        let annotations = pod.metadata.annotations.get_or_insert_with(BTreeMap::new);
        annotations.insert(
            "kcache.example.com/revision".into(),
            (n % 100_000).to_string(),
        );
        if let Some(status) = pod.data.get_mut("status") {
            status["phase"] = json!(if n.is_multiple_of(7) {
                "Pending"
            } else {
                "Running"
            });
            if let Some(statuses) = status["containerStatuses"].as_array_mut() {
                for s in statuses {
                    let restarts = s["restartCount"].as_u64().unwrap_or(0);
                    s["restartCount"] = json!(restarts + (n % 2));
                }
            }
            let t = rfc3339(1_750_000_000 + n % 10_000_000);
            if let Some(conditions) = status["conditions"].as_array_mut() {
                for c in conditions {
                    c["lastTransitionTime"] = json!(t);
                }
            }
        }
        pod
    }
}

/// `count` pods from [`PodGenerator::new(seed, namespaces)`](PodGenerator::new).
pub fn pods(seed: u64, count: usize, namespaces: usize) -> Vec<DynamicObject> {
    shaped_pods(PodShape::Light, seed, count, namespaces)
}

/// `count` pods of `shape` from [`PodGenerator::with_shape`].
pub fn shaped_pods(
    shape: PodShape,
    seed: u64,
    count: usize,
    namespaces: usize,
) -> Vec<DynamicObject> {
    let mut generator = PodGenerator::with_shape(seed, namespaces, shape);
    (0..count).map(|_| generator.next_pod()).collect()
}

fn managed_field(manager: &str, operation: &str, time: &str, fields: &Value) -> Value {
    json!({
        "manager": manager,
        "operation": operation,
        "apiVersion": "v1",
        "time": time,
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    })
}

fn container(rng: &mut fastrand::Rng, name: &str, image: &str, port: u64) -> Value {
    json!({
        "name": name,
        "image": format!("{image}:v1.{}.{}", rng.u64(..) % 30, rng.u64(..) % 10),
        "imagePullPolicy": "IfNotPresent",
        "args": ["--port", port.to_string(), "--log-level=info"],
        "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"}],
        "env": [
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
            {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}},
            {"name": "GOMAXPROCS", "value": "2"},
        ],
        "resources": {
            "limits": {"cpu": "500m", "memory": "512Mi"},
            "requests": {"cpu": "100m", "memory": "128Mi"},
        },
        "readinessProbe": {
            "httpGet": {"path": "/healthz", "port": port, "scheme": "HTTP"},
            "initialDelaySeconds": 5, "periodSeconds": 10, "timeoutSeconds": 1,
            "successThreshold": 1, "failureThreshold": 3,
        },
        "volumeMounts": [{
            "name": "kube-api-access",
            "readOnly": true,
            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
        }],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    })
}

fn container_status(rng: &mut fastrand::Rng, name: &str, image: &str, started: &str) -> Value {
    json!({
        "name": name,
        "state": {"running": {"startedAt": started}},
        "lastState": {},
        "ready": true,
        "restartCount": rng.u64(..) % 3,
        "image": image,
        "imageID": format!("{image}@sha256:{:016x}{:016x}{:016x}{:016x}",
            rng.u64(..), rng.u64(..), rng.u64(..), rng.u64(..)),
        "containerID": format!("containerd://{:016x}{:016x}{:016x}{:016x}",
            rng.u64(..), rng.u64(..), rng.u64(..), rng.u64(..)),
        "started": true,
    })
}

/// One realistic pod: labels, an owner `ReplicaSet`, `managedFields`, two containers, status with
/// conditions and container statuses. About 5 KB of JSON.
fn pod(rng: &mut fastrand::Rng, namespace: &str, name: &str, app: &str) -> DynamicObject {
    let created = rfc3339(1_750_000_000 + rng.u64(..) % 1_000_000);
    let node = format!("node-{}", rng.u64(..) % 50);
    let hash = name.rsplit('-').nth(1).unwrap_or("0").to_owned();
    let image = IMAGES[usize::try_from(rng.u64(..) % 4).unwrap_or(0)];
    let containers = vec![
        container(rng, app, image, 8080),
        container(rng, "sidecar", "registry.example.com/infra/envoy", 15001),
    ];
    let statuses = vec![
        container_status(rng, app, image, &created),
        container_status(rng, "sidecar", "registry.example.com/infra/envoy", &created),
    ];
    let owner_uid = uuid(rng);
    let pod_ip = format!(
        "10.{}.{}.{}",
        rng.u64(..) % 256,
        rng.u64(..) % 256,
        rng.u64(..) % 254 + 1
    );
    let value = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "generateName": format!("{app}-{hash}-"),
            "namespace": namespace,
            "labels": {
                "app": app,
                "pod-template-hash": hash,
                "tier": if rng.u64(..).is_multiple_of(2) { "frontend" } else { "backend" },
                "app.kubernetes.io/managed-by": "kcache-workload",
            },
            "annotations": {
                "kubectl.kubernetes.io/restartedAt": created,
                "prometheus.io/scrape": "true",
            },
            "ownerReferences": [{
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": format!("{app}-{hash}"),
                "uid": owner_uid,
                "controller": true,
                "blockOwnerDeletion": true,
            }],
            "managedFields": [
                managed_field("kube-controller-manager", "Update", &created, &json!({
                    "f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}, "f:tier": {}},
                        "f:ownerReferences": {".": {}, "k:{\"uid\":\"owner\"}": {}}},
                    "f:spec": {"f:containers": {"k:{\"name\":\"main\"}": {".": {}, "f:args": {}, "f:env": {}, "f:image": {},
                        "f:imagePullPolicy": {}, "f:name": {}, "f:ports": {}, "f:readinessProbe": {}, "f:resources": {}},
                        "k:{\"name\":\"sidecar\"}": {".": {}, "f:image": {}, "f:name": {}}},
                        "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {}, "f:schedulerName": {},
                        "f:securityContext": {}, "f:terminationGracePeriodSeconds": {}},
                })),
                managed_field("kubelet", "Update", &created, &json!({
                    "f:status": {"f:conditions": {"k:{\"type\":\"ContainersReady\"}": {".": {}, "f:lastProbeTime": {},
                        "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}},
                        "k:{\"type\":\"Initialized\"}": {".": {}, "f:status": {}, "f:type": {}},
                        "k:{\"type\":\"Ready\"}": {".": {}, "f:status": {}, "f:type": {}}},
                        "f:containerStatuses": {}, "f:hostIP": {}, "f:phase": {}, "f:podIP": {}, "f:podIPs": {}, "f:startTime": {}},
                })),
            ],
        },
        "spec": {
            "containers": containers,
            "volumes": [{"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            ]}}],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "nodeName": node,
            "securityContext": {"runAsNonRoot": true},
            "schedulerName": "default-scheduler",
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            ],
            "priority": 0,
            "enableServiceLinks": true,
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "Initialized", "status": "True", "lastProbeTime": null, "lastTransitionTime": created},
                {"type": "Ready", "status": "True", "lastProbeTime": null, "lastTransitionTime": created},
                {"type": "ContainersReady", "status": "True", "lastProbeTime": null, "lastTransitionTime": created},
                {"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": created},
            ],
            "hostIP": format!("192.168.{}.{}", rng.u64(..) % 256, rng.u64(..) % 254 + 1),
            "podIP": pod_ip,
            "podIPs": [{"ip": pod_ip}],
            "startTime": created,
            "containerStatuses": statuses,
            "qosClass": "Burstable",
        },
    });
    serde_json::from_value(value).unwrap_or_default()
}

/// The `fieldsV1` of a container as its manager owns it: every field it set.
fn container_fields() -> Value {
    let probe = json!({".": {}, "f:failureThreshold": {}, "f:httpGet": {".": {}, "f:path": {}, "f:port": {},
        "f:scheme": {}}, "f:initialDelaySeconds": {}, "f:periodSeconds": {}, "f:successThreshold": {},
        "f:timeoutSeconds": {}});
    json!({".": {}, "f:args": {}, "f:env": {".": {}, "k:{\"name\":\"POD_NAME\"}": {".": {}, "f:name": {},
        "f:valueFrom": {".": {}, "f:fieldRef": {}}}, "k:{\"name\":\"POD_NAMESPACE\"}": {".": {}, "f:name": {},
        "f:valueFrom": {".": {}, "f:fieldRef": {}}}, "k:{\"name\":\"GOMAXPROCS\"}": {".": {}, "f:name": {},
        "f:value": {}}}, "f:image": {}, "f:imagePullPolicy": {}, "f:livenessProbe": probe.clone(),
        "f:name": {}, "f:ports": {".": {}, "k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {".": {},
        "f:containerPort": {}, "f:name": {}, "f:protocol": {}}}, "f:readinessProbe": probe.clone(),
        "f:resources": {".": {}, "f:limits": {".": {}, "f:cpu": {}, "f:memory": {}}, "f:requests": {".": {},
        "f:cpu": {}, "f:memory": {}}}, "f:securityContext": {".": {}, "f:allowPrivilegeEscalation": {},
        "f:capabilities": {".": {}, "f:drop": {}}, "f:readOnlyRootFilesystem": {}},
        "f:startupProbe": probe, "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {},
        "f:volumeMounts": {".": {}, "k:{\"mountPath\":\"/etc/config\"}": {".": {}, "f:mountPath": {},
        "f:name": {}}}})
}

/// A container of a [`PodShape::Heavy`] pod: three probes, a security context, three mounts.
fn heavy_container(rng: &mut fastrand::Rng, name: &str, image: &str, port: u64) -> Value {
    let mut c = container(rng, name, image, port);
    let probe = |path: &str, delay: u64| {
        json!({"httpGet": {"path": path, "port": port, "scheme": "HTTP"}, "initialDelaySeconds": delay,
            "periodSeconds": 10, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3})
    };
    c["livenessProbe"] = probe("/livez", 15);
    c["startupProbe"] = probe("/startz", 0);
    c["securityContext"] = json!({"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
        "capabilities": {"drop": ["ALL"]}});
    if let Some(mounts) = c["volumeMounts"].as_array_mut() {
        mounts.push(json!({"name": "config", "mountPath": "/etc/config"}));
        mounts.push(json!({"name": "tls", "mountPath": "/etc/tls", "readOnly": true}));
    }
    c
}

/// The `managedFields` of a [`PodShape::Heavy`] pod: four managers, each listing every field
/// it owns.
fn heavy_managed_fields(created: &str, per_container: &serde_json::Map<String, Value>) -> Value {
    let condition_fields = json!({".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {},
        "f:message": {}, "f:reason": {}, "f:status": {}, "f:type": {}});
    let conditions: serde_json::Map<String, Value> = [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ]
    .iter()
    .map(|t| (format!("k:{{\"type\":\"{t}\"}}"), condition_fields.clone()))
    .collect();
    let managed = json!([
        managed_field(
            "kube-controller-manager",
            "Update",
            created,
            &json!({
                "f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {},
                    "f:tier": {}, "f:app.kubernetes.io/managed-by": {}}, "f:ownerReferences": {".": {},
                    "k:{\"uid\":\"owner\"}": {}}},
                "f:spec": {"f:containers": per_container, "f:initContainers": {"k:{\"name\":\"init-config\"}":
                    container_fields()}, "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {},
                    "f:schedulerName": {}, "f:securityContext": {}, "f:terminationGracePeriodSeconds": {},
                    "f:volumes": {".": {}, "k:{\"name\":\"config\"}": {".": {}, "f:configMap": {}, "f:name": {}},
                    "k:{\"name\":\"tls\"}": {".": {}, "f:name": {}, "f:secret": {}}}},
            })
        ),
        managed_field(
            "kube-scheduler",
            "Update",
            created,
            &json!({
                "f:status": {"f:conditions": {".": {}, "k:{\"type\":\"PodScheduled\"}": condition_fields}},
            })
        ),
        managed_field(
            "kubelet",
            "Update",
            created,
            &json!({
                "f:status": {"f:conditions": conditions, "f:containerStatuses": {}, "f:hostIP": {}, "f:hostIPs": {},
                    "f:initContainerStatuses": {}, "f:phase": {}, "f:podIP": {}, "f:podIPs": {".": {},
                    "k:{\"ip\":\"10.0.0.1\"}": {".": {}, "f:ip": {}}}, "f:startTime": {}},
            })
        ),
        managed_field(
            "istio-sidecar-injector",
            "Update",
            created,
            &json!({
                "f:metadata": {"f:annotations": {".": {}, "f:sidecar.istio.io/status": {},
                    "f:prometheus.io/path": {}, "f:prometheus.io/port": {}}, "f:labels": {"f:security.istio.io/tlsMode": {},
                    "f:service.istio.io/canonical-name": {}}},
            })
        ),
    ]);
    managed
}

/// A [`PodShape::Heavy`] pod: about 18 KB of JSON.
fn heavy_pod(rng: &mut fastrand::Rng, namespace: &str, name: &str, app: &str) -> DynamicObject {
    let mut pod = pod(rng, namespace, name, app);
    let created = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("kubectl.kubernetes.io/restartedAt"))
        .cloned()
        .unwrap_or_default();
    let image = IMAGES[usize::try_from(rng.u64(..) % 4).unwrap_or(0)];
    let names = [app, "sidecar", "log-shipper"];
    let containers: Vec<Value> = names
        .iter()
        .zip([8080, 15001, 2020])
        .map(|(n, port)| heavy_container(rng, n, image, port))
        .collect();
    let init = heavy_container(rng, "init-config", "registry.example.com/infra/init", 9000);
    let statuses: Vec<Value> = names
        .iter()
        .map(|n| container_status(rng, n, image, &created))
        .collect();
    let init_status = container_status(
        rng,
        "init-config",
        "registry.example.com/infra/init",
        &created,
    );
    let per_container: serde_json::Map<String, Value> = names
        .iter()
        .map(|n| (format!("k:{{\"name\":\"{n}\"}}"), container_fields()))
        .collect();
    let managed = heavy_managed_fields(&created, &per_container);
    pod.metadata.other.insert("managedFields".into(), managed);
    let annotations = pod.metadata.annotations.get_or_insert_with(BTreeMap::new);
    annotations.insert(
        "sidecar.istio.io/status".into(),
        r#"{"initContainers":["init-config"],"containers":["sidecar"],"volumes":["tls","config"]}"#
            .into(),
    );
    annotations.insert("prometheus.io/path".into(), "/stats/prometheus".into());
    annotations.insert("prometheus.io/port".into(), "15020".into());
    if let Some(spec) = pod.data.get_mut("spec") {
        spec["containers"] = Value::Array(containers);
        spec["initContainers"] = json!([init]);
        if let Some(volumes) = spec["volumes"].as_array_mut() {
            volumes.push(json!({"name": "config", "configMap": {"name": format!("{app}-config"), "defaultMode": 420}}));
            volumes.push(json!({"name": "tls", "secret": {"secretName": format!("{app}-tls"), "defaultMode": 420}}));
        }
    }
    if let Some(status) = pod.data.get_mut("status") {
        status["containerStatuses"] = Value::Array(statuses);
        status["initContainerStatuses"] = json!([init_status]);
        if let Some(conditions) = status["conditions"].as_array_mut() {
            conditions.insert(
                0,
                json!({"type": "PodReadyToStartContainers", "status": "True",
                "lastProbeTime": null, "lastTransitionTime": created}),
            );
        }
    }
    pod
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_are_realistic_and_deterministic() {
        let a = pods(7, 3, 2);
        let b = pods(7, 3, 2);
        assert_eq!(a, b);
        let size = serde_json::to_vec(&a[0]).unwrap().len();
        assert!((4000..7000).contains(&size), "pod is {size} bytes");
        assert_eq!(a[0].data["spec"]["containers"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn heavy_pods_are_bigger_and_mostly_managed_fields() {
        let a = shaped_pods(PodShape::Heavy, 7, 3, 2);
        assert_eq!(a, shaped_pods(PodShape::Heavy, 7, 3, 2));
        let size = serde_json::to_vec(&a[0]).unwrap().len();
        assert!((15_000..22_000).contains(&size), "pod is {size} bytes");
        let managed = serde_json::to_vec(&a[0].metadata.other["managedFields"])
            .unwrap()
            .len();
        assert!(
            managed * 3 > size,
            "managedFields are {managed} of {size} bytes"
        );
        assert_eq!(a[0].data["spec"]["containers"].as_array().unwrap().len(), 3);
        // A mutation still changes the status of every container.
        let mut g = PodGenerator::with_shape(1, 2, PodShape::Heavy);
        let changed = g.mutate(&a[0]);
        assert_ne!(changed, a[0]);
        assert_eq!(PodShape::parse("heavy"), Some(PodShape::Heavy));
        assert_eq!(
            PodShape::parse(PodShape::Light.name()),
            Some(PodShape::Light)
        );
    }
}
