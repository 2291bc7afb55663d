//! Workload generators: realistic pods (about 5 KB of JSON each), pure JSON with no server or
//! HTTP behind them. The churn driver that writes them to a fake API server is
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

/// A seeded source of realistic pods: same seed, same pods.
#[derive(Debug, Clone)]
pub struct PodGenerator {
    rng: fastrand::Rng,
    namespaces: usize,
    next: u64,
}

impl PodGenerator {
    /// Pods spread over `namespaces` namespaces named `ns-0`, `ns-1`, ... (at least one).
    pub fn new(seed: u64, namespaces: usize) -> Self {
        Self {
            rng: fastrand::Rng::with_seed(seed),
            namespaces: namespaces.max(1),
            next: 0,
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
        pod(&mut self.rng, &namespace, &name, app)
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
    let mut generator = PodGenerator::new(seed, namespaces);
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
}
