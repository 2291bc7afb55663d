//! The real kubectl writing to the fake API server, with its default client-side checks
//! (no `--validate=false`): `create -f`, `apply -f` twice, `apply --server-side`, `label`,
//! `annotate`, `patch` of each type, `delete`, and `get` of the default kinds, `-o wide`
//! included; `apply --server-side` by two field managers (the conflict kubectl reports, then
//! `--force-conflicts`) and the `managedFields` kubectl shows, with the managers its other
//! writes name.
//!
//! Like the other kubectl tests they need `/usr/bin/kubectl`, and pass saying they did not run
//! without it unless `KCACHE_REQUIRE_KUBECTL` is set.

use kcache_testing_server::fake_api_server::ServedResource;
use serde_json::{Value, json};

use crate::fake_api_server::pod;
use crate::fake_api_server_kubectl::{Env, Manifest, env, kubectl, kubectl_available, run};

const DEPLOYMENT_AND_CONFIGMAP: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        ports:
        - containerPort: 80
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: fast
";

/// A deployment, a service and a lease in namespace `shop`.
const SHOP: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  namespace: shop
spec:
  replicas: 1
  selector:
    matchLabels:
      app: api
  template:
    metadata:
      labels:
        app: api
    spec:
      containers:
      - name: api
        image: api:1
---
apiVersion: v1
kind: Service
metadata:
  name: api
  namespace: shop
spec:
  clusterIP: 10.96.0.20
  selector:
    app: api
  ports:
  - port: 8080
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: api-leader
  namespace: shop
spec:
  holderIdentity: api-0
";

/// The stored object as JSON.
fn stored(env: &Env, resource: &ServedResource, ns: Option<&str>, name: &str) -> Value {
    let obj = env.server.get(resource, ns, name).unwrap();
    serde_json::to_value(&*obj).unwrap()
}

#[tokio::test]
async fn kubectl_create_f_validates_through_openapi_v3() {
    if !kubectl_available("kubectl_create_f_validates_through_openapi_v3") {
        return;
    }
    let env = env(false).await;
    let manifest = Manifest::new(&env, "create", DEPLOYMENT_AND_CONFIGMAP);
    let out = run(&env, &["create", "-f", manifest.path()]).await;
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["deployment.apps/web created", "configmap/settings created"]
    );
    let deploy = stored(&env, &ServedResource::deployments(), Some("default"), "web");
    assert_eq!(deploy["spec"]["replicas"], 2);
    // kubectl found fieldValidation in the OpenAPI v3 documents, so it left validation to the
    // server instead of fetching /openapi/v2.
    let requests = env.server.requests();
    let paths: Vec<&str> = requests.iter().map(|r| r.path.as_str()).collect();
    assert!(paths.contains(&"/openapi/v3"), "{paths:?}");
    assert!(paths.contains(&"/openapi/v3/apis/apps/v1"), "{paths:?}");
    assert!(!paths.contains(&"/openapi/v2"), "{paths:?}");
    let post = requests
        .iter()
        .find(|r| r.method == "POST" && r.path.ends_with("/deployments"))
        .unwrap();
    assert_eq!(post.param("fieldValidation"), Some("Strict"));
    // Created again: AlreadyExists, as kubectl reports it.
    let again = kubectl(&env, &["create", "-f", manifest.path()])
        .output()
        .await
        .unwrap();
    assert!(!again.status.success());
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(stderr.contains("already exists"), "{stderr}");
}

#[tokio::test]
async fn kubectl_apply_twice_patches_the_second_time() {
    if !kubectl_available("kubectl_apply_twice_patches_the_second_time") {
        return;
    }
    let env = env(false).await;
    let manifest = Manifest::new(&env, "apply", DEPLOYMENT_AND_CONFIGMAP);
    let out = run(&env, &["apply", "-f", manifest.path()]).await;
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["deployment.apps/web created", "configmap/settings created"]
    );
    let changed = DEPLOYMENT_AND_CONFIGMAP
        .replacen("app: web\nspec:", "app: web\n    tier: front\nspec:", 1)
        .replace("nginx:1.27", "nginx:1.28");
    let manifest = Manifest::new(&env, "apply", &changed);
    env.server.clear_requests();
    let out = run(&env, &["apply", "-f", manifest.path()]).await;
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "deployment.apps/web configured",
            "configmap/settings unchanged"
        ]
    );
    let patch = env
        .server
        .requests()
        .into_iter()
        .find(|r| r.method == "PATCH")
        .expect("the second apply patches");
    assert!(patch.path.ends_with("/deployments/web"), "{}", patch.path);
    let deploy = stored(&env, &ServedResource::deployments(), Some("default"), "web");
    assert_eq!(
        deploy["metadata"]["labels"],
        json!({"app": "web", "tier": "front"})
    );
    assert!(
        deploy["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .unwrap()
            .contains("front")
    );
    // The strategic merge patch named the container by its merge key: its ports stayed.
    let containers = &deploy["spec"]["template"]["spec"]["containers"];
    assert_eq!(containers.as_array().map(Vec::len), Some(1), "{containers}");
    assert_eq!(
        (
            &containers[0]["name"],
            &containers[0]["image"],
            &containers[0]["ports"]
        ),
        (
            &json!("nginx"),
            &json!("nginx:1.28"),
            &json!([{"containerPort": 80, "protocol": "TCP"}])
        )
    );
}

#[tokio::test]
async fn kubectl_apply_server_side() {
    if !kubectl_available("kubectl_apply_server_side") {
        return;
    }
    let env = env(false).await;
    let lease = "\
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: leader
  namespace: team-a
spec:
  holderIdentity: one
  leaseDurationSeconds: 15
";
    let manifest = Manifest::new(&env, "ssa", lease);
    let out = run(&env, &["apply", "--server-side", "-f", manifest.path()]).await;
    assert_eq!(
        out.trim(),
        "lease.coordination.k8s.io/leader serverside-applied"
    );
    let manifest = Manifest::new(&env, "ssa", &lease.replace("one", "two"));
    let out = run(&env, &["apply", "--server-side", "-f", manifest.path()]).await;
    assert_eq!(
        out.trim(),
        "lease.coordination.k8s.io/leader serverside-applied"
    );
    let stored = stored(&env, &ServedResource::leases(), Some("team-a"), "leader");
    assert_eq!(stored["spec"]["holderIdentity"], "two");
    let apply = env
        .server
        .requests()
        .into_iter()
        .find(|r| r.method == "PATCH")
        .unwrap();
    assert_eq!(apply.param("fieldManager"), Some("kubectl"));
    // The namespace came with the lease.
    let out = run(&env, &["get", "ns", "team-a", "-o", "name"]).await;
    assert_eq!(out.trim(), "namespace/team-a");
}

#[tokio::test]
async fn kubectl_label_annotate_patch_and_delete() {
    if !kubectl_available("kubectl_label_annotate_patch_and_delete") {
        return;
    }
    let env = env(false).await;
    let cms = ServedResource::configmaps();
    let cm = serde_json::from_value(
        json!({"metadata": {"name": "c", "namespace": "default"}, "data": {"a": "1"}}),
    )
    .unwrap();
    env.server.create(&cms, cm).unwrap();
    let steps: [(&[&str], &str); 6] = [
        (&["label", "cm", "c", "color=blue"], "configmap/c labeled"),
        (&["annotate", "cm", "c", "note=hi"], "configmap/c annotated"),
        (
            &[
                "patch",
                "cm",
                "c",
                "--type=merge",
                "-p",
                r#"{"data":{"b":"2","a":null}}"#,
            ],
            "configmap/c patched",
        ),
        (
            &[
                "patch",
                "cm",
                "c",
                "--type=json",
                "-p",
                r#"[{"op":"add","path":"/data/c","value":"3"}]"#,
            ],
            "configmap/c patched",
        ),
        (
            &["patch", "cm", "c", "-p", r#"{"data":{"d":"4"}}"#],
            "configmap/c patched",
        ),
        (&["label", "cm", "c", "color-"], "configmap/c unlabeled"),
    ];
    for (args, expected) in steps {
        assert_eq!(run(&env, args).await.trim(), expected, "kubectl {args:?}");
    }
    let stored = stored(&env, &cms, Some("default"), "c");
    assert_eq!(stored["data"], json!({"b": "2", "c": "3", "d": "4"}));
    assert_eq!(stored["metadata"]["annotations"], json!({"note": "hi"}));
    assert!(
        stored["metadata"]
            .get("labels")
            .is_none_or(|l| l == &json!({})),
        "{stored}"
    );
    // Each change was one write.
    assert_eq!(stored["metadata"]["resourceVersion"], "8");
    let out = run(&env, &["delete", "cm", "c"]).await;
    assert_eq!(out.trim(), "configmap \"c\" deleted");
    assert!(env.server.get(&cms, Some("default"), "c").is_none());
}

#[tokio::test]
async fn kubectl_get_wide_shows_the_wide_columns() {
    if !kubectl_available("kubectl_get_wide_shows_the_wide_columns") {
        return;
    }
    let env = env(false).await;
    let mut p: Value = serde_json::to_value(pod("web", "web-1", "web")).unwrap();
    p["status"]["podIP"] = json!("10.1.2.3");
    env.server
        .create(&ServedResource::pods(), serde_json::from_value(p).unwrap())
        .unwrap();
    let out = run(&env, &["get", "pods", "-n", "web", "-o", "wide"]).await;
    eprintln!("kubectl get pods -o wide:\n{out}");
    let header: Vec<&str> = out
        .lines()
        .next()
        .unwrap()
        .split("  ")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    assert_eq!(
        header,
        [
            "NAME",
            "READY",
            "STATUS",
            "RESTARTS",
            "AGE",
            "IP",
            "NODE",
            "NOMINATED NODE",
            "READINESS GATES"
        ]
    );
    let row: Vec<&str> = out.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[..4], ["web-1", "0/1", "Running", "0"]);
    assert_eq!(row[5..], ["10.1.2.3", "node-1", "<none>", "<none>"]);
    let narrow = run(&env, &["get", "pods", "-n", "web"]).await;
    assert!(!narrow.contains("NODE"), "{narrow}");

    let manifest = Manifest::new(&env, "wide", DEPLOYMENT_AND_CONFIGMAP);
    run(&env, &["create", "-f", manifest.path()]).await;
    let out = run(&env, &["get", "deploy", "-o", "wide"]).await;
    eprintln!("kubectl get deploy -o wide:\n{out}");
    let header: Vec<&str> = out.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "NAME",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR"
        ]
    );
    let row: Vec<&str> = out.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[..4], ["web", "0/2", "0", "0"]);
    assert_eq!(row[5..], ["nginx", "nginx:1.27", "app=web"]);
}

#[tokio::test]
async fn kubectl_get_deployments_services_leases_and_namespaces() {
    if !kubectl_available("kubectl_get_deployments_services_leases_and_namespaces") {
        return;
    }
    let env = env(false).await;
    let manifest = Manifest::new(&env, "get", SHOP);
    run(&env, &["create", "-f", manifest.path()]).await;
    let out = run(&env, &["get", "deployments,svc,leases,ns", "-A"]).await;
    eprintln!("kubectl get deployments,svc,leases,ns -A:\n{out}");
    let blocks: Vec<Vec<Vec<&str>>> = out
        .split("\n\n")
        .map(|b| b.lines().map(|l| l.split_whitespace().collect()).collect())
        .collect();
    assert_eq!(blocks.len(), 4, "{out}");
    assert_eq!(
        blocks[0][0],
        [
            "NAMESPACE",
            "NAME",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "AGE"
        ]
    );
    assert_eq!(
        blocks[0][1][..5],
        ["shop", "deployment.apps/api", "0/1", "0", "0"]
    );
    assert_eq!(
        blocks[1][0],
        [
            "NAMESPACE",
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE"
        ]
    );
    assert_eq!(
        blocks[1][1][..6],
        [
            "shop",
            "service/api",
            "ClusterIP",
            "10.96.0.20",
            "<none>",
            "8080/TCP"
        ]
    );
    assert_eq!(blocks[2][0], ["NAMESPACE", "NAME", "HOLDER", "AGE"]);
    assert_eq!(
        blocks[2][1][..3],
        ["shop", "lease.coordination.k8s.io/api-leader", "api-0"]
    );
    // Cluster-scoped: an empty NAMESPACE cell.
    assert_eq!(blocks[3][0], ["NAMESPACE", "NAME", "STATUS", "AGE"]);
    let namespaces: Vec<&str> = blocks[3][1..].iter().map(|row| row[0]).collect();
    assert_eq!(
        namespaces,
        [
            "namespace/default",
            "namespace/kube-node-lease",
            "namespace/kube-public",
            "namespace/kube-system",
            "namespace/shop"
        ]
    );
    assert!(blocks[3][1..].iter().all(|row| row[1] == "Active"));
}

/// `kubectl apply --server-side` of `path` by field manager `manager`.
fn ssa_args<'a>(manager: &'a str, path: &'a str) -> [&'a str; 6] {
    [
        "apply",
        "--server-side",
        "--field-manager",
        manager,
        "-f",
        path,
    ]
}

#[tokio::test]
async fn kubectl_server_side_apply_conflicts_between_field_managers() {
    if !kubectl_available("kubectl_server_side_apply_conflicts_between_field_managers") {
        return;
    }
    let env = env(false).await;
    let web = |replicas: u32| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: shop\n\
             spec:\n  replicas: {replicas}\n  selector:\n    matchLabels:\n      app: web\n  \
             template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      \
             containers:\n      - name: nginx\n        image: nginx:1.27\n"
        )
    };
    let two = Manifest::new(&env, "ssa-a", &web(2));
    let out = run(&env, &ssa_args("a", two.path())).await;
    assert_eq!(out.trim(), "deployment.apps/web serverside-applied");
    // b applies other replicas: kubectl reports the server's conflict and fails.
    let three = Manifest::new(&env, "ssa-b", &web(3));
    let out = kubectl(&env, &ssa_args("b", three.path()))
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("Apply failed with 1 conflict: conflict with \"a\": .spec.replicas"),
        "{stderr}"
    );
    let stored_replicas = |env: &Env| {
        stored(env, &ServedResource::deployments(), Some("shop"), "web")["spec"]["replicas"].clone()
    };
    assert_eq!(stored_replicas(&env), 2);
    // Forced, b takes replicas.
    let mut forced = ssa_args("b", three.path()).to_vec();
    forced.push("--force-conflicts");
    let out = run(&env, &forced).await;
    assert_eq!(out.trim(), "deployment.apps/web serverside-applied");
    assert_eq!(stored_replicas(&env), 3);
    // kubectl shows the entries: a keeps the container, b owns replicas.
    let yaml = run(
        &env,
        &[
            "get",
            "deploy",
            "web",
            "-n",
            "shop",
            "-o",
            "yaml",
            "--show-managed-fields",
        ],
    )
    .await;
    for line in [
        "manager: a",
        "manager: b",
        "operation: Apply",
        "f:replicas: {}",
        "k:{\"name\":\"nginx\"}:",
    ] {
        assert!(yaml.contains(line), "{line} in {yaml}");
    }
    let json: Value = serde_json::from_str(
        &run(
            &env,
            &[
                "get",
                "deploy",
                "web",
                "-n",
                "shop",
                "-o",
                "json",
                "--show-managed-fields",
            ],
        )
        .await,
    )
    .unwrap();
    let entries = json["metadata"]["managedFields"].as_array().unwrap();
    let replicas_owners: Vec<&str> = entries
        .iter()
        .filter(|e| e["fieldsV1"]["f:spec"].get("f:replicas").is_some())
        .map(|e| e["manager"].as_str().unwrap())
        .collect();
    assert_eq!(replicas_owners, ["b"]);
}

#[tokio::test]
async fn kubectl_writes_name_their_field_managers() {
    if !kubectl_available("kubectl_writes_name_their_field_managers") {
        return;
    }
    let env = env(false).await;
    // kubectl's other writes name their own managers.
    let settings = Manifest::new(
        &env,
        "ssa-cm",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: shop\ndata:\n  mode: fast\n",
    );
    run(&env, &["create", "-f", settings.path()]).await;
    run(
        &env,
        &["label", "configmap", "settings", "-n", "shop", "tier=web"],
    )
    .await;
    let cm: Value = serde_json::from_str(
        &run(
            &env,
            &[
                "get",
                "cm",
                "settings",
                "-n",
                "shop",
                "-o",
                "json",
                "--show-managed-fields",
            ],
        )
        .await,
    )
    .unwrap();
    let managers: Vec<&str> = cm["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["manager"].as_str().unwrap())
        .collect();
    assert_eq!(managers, ["kubectl-create", "kubectl-label"], "{cm}");
}
