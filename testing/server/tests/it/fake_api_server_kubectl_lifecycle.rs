//! The real kubectl on the fake API server's lifecycle and operator-facing endpoints:
//! `--dry-run=server`, `diff`, `scale`, `--subresource=status`, `get all`, `auth can-i`,
//! `delete` of an owner (its dependents collected) and of a namespace (its contents deleted),
//! `get --raw /readyz?verbose`.
//!
//! Like the other kubectl tests they need `/usr/bin/kubectl`, and pass saying they did not run
//! without it unless `KCACHE_REQUIRE_KUBECTL` is set.

use kcache_testing_server::fake_api_server::ServedResource;

use crate::fake_api_server::pod;
use crate::fake_api_server_kubectl::{Manifest, env, fails, kubectl, kubectl_available, run};

const DEPLOYMENT: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
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
";

#[tokio::test]
async fn kubectl_dry_run_diff_scale_and_status() {
    if !kubectl_available("kubectl_dry_run_diff_scale_and_status") {
        return;
    }
    let env = env(true).await;
    let file = Manifest::new(&env, "deployment", DEPLOYMENT);
    let out = run(&env, &["apply", "-f", file.path(), "--dry-run=server"]).await;
    assert!(
        out.contains("deployment.apps/web created (server dry run)"),
        "{out}"
    );
    assert!(env.server.list(&ServedResource::deployments()).is_empty());
    run(&env, &["apply", "-f", file.path()]).await;
    // `diff` asks the server for a dry run of the change and prints it.
    let changed = Manifest::new(
        &env,
        "changed",
        &DEPLOYMENT.replace("replicas: 2", "replicas: 3"),
    );
    let out = kubectl(&env, &["diff", "-f", changed.path()])
        .output()
        .await
        .unwrap();
    let diff = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "diff exits 1 on a difference: {diff}"
    );
    assert!(
        diff.contains("-  replicas: 2") && diff.contains("+  replicas: 3"),
        "{diff}"
    );
    let out = run(
        &env,
        &["scale", "-n", "shop", "deployment/web", "--replicas=5"],
    )
    .await;
    assert!(out.contains("deployment.apps/web scaled"), "{out}");
    let replicas = run(
        &env,
        &[
            "get",
            "-n",
            "shop",
            "deploy",
            "web",
            "-o",
            "jsonpath={.spec.replicas}",
        ],
    )
    .await;
    assert_eq!(replicas, "5");
    let patch = r#"{"status":{"replicas":5,"readyReplicas":5}}"#;
    run(
        &env,
        &[
            "patch",
            "-n",
            "shop",
            "deploy",
            "web",
            "--subresource=status",
            "--type=merge",
            "-p",
            patch,
        ],
    )
    .await;
    let ready = run(
        &env,
        &[
            "get",
            "-n",
            "shop",
            "deploy",
            "web",
            "-o",
            "jsonpath={.status.readyReplicas}",
        ],
    )
    .await;
    assert_eq!(ready, "5");
    let out = run(
        &env,
        &["delete", "-n", "shop", "deploy", "web", "--dry-run=server"],
    )
    .await;
    assert!(out.contains("(server dry run)"), "{out}");
    assert_eq!(env.server.list(&ServedResource::deployments()).len(), 1);
}

#[tokio::test]
async fn kubectl_get_all_auth_can_i_and_readyz() {
    if !kubectl_available("kubectl_get_all_auth_can_i_and_readyz") {
        return;
    }
    let env = env(true).await;
    env.server
        .create(&ServedResource::pods(), pod("shop", "web-1", "web"))
        .unwrap();
    let file = Manifest::new(&env, "all", DEPLOYMENT);
    run(&env, &["apply", "-f", file.path()]).await;
    let out = run(&env, &["get", "all", "-n", "shop"]).await;
    assert!(
        out.contains("pod/web-1") && out.contains("deployment.apps/web"),
        "{out}"
    );
    let out = run(
        &env,
        &["auth", "can-i", "create", "deployments", "-n", "shop"],
    )
    .await;
    assert_eq!(out.trim(), "yes");
    let out = run(&env, &["get", "--raw", "/readyz?verbose"]).await;
    assert!(
        out.contains("[+]ping ok") && out.contains("readyz check passed"),
        "{out}"
    );
}

#[tokio::test]
async fn kubectl_delete_of_an_owner_and_of_a_namespace() {
    if !kubectl_available("kubectl_delete_of_an_owner_and_of_a_namespace") {
        return;
    }
    let env = env(true).await;
    let file = Manifest::new(&env, "owner", DEPLOYMENT);
    run(&env, &["apply", "-f", file.path()]).await;
    let uid = run(
        &env,
        &[
            "get",
            "-n",
            "shop",
            "deploy",
            "web",
            "-o",
            "jsonpath={.metadata.uid}",
        ],
    )
    .await;
    let rs = format!(
        "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: web-1\n  namespace: shop\n  \
         ownerReferences:\n  - apiVersion: apps/v1\n    kind: Deployment\n    name: web\n    \
         uid: {uid}\n    controller: true\nspec:\n  selector:\n    matchLabels:\n      app: web\n  \
         template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n      \
         - name: nginx\n        image: nginx:1.27\n"
    );
    let rs_file = Manifest::new(&env, "replicaset", &rs);
    run(&env, &["create", "-f", rs_file.path()]).await;
    let out = run(&env, &["delete", "-n", "shop", "deployment", "web"]).await;
    assert!(out.contains("deployment.apps \"web\" deleted"), "{out}");
    assert!(env.server.list(&ServedResource::replicasets()).is_empty());
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: shop\ndata:\n  a: \"1\"\n";
    let cm_file = Manifest::new(&env, "configmap", cm);
    run(&env, &["apply", "-f", cm_file.path()]).await;
    let out = run(&env, &["delete", "namespace", "shop"]).await;
    assert!(out.contains("namespace \"shop\" deleted"), "{out}");
    assert!(env.server.list(&ServedResource::configmaps()).is_empty());
    let err = fails(&env, &["get", "namespace", "shop"]).await;
    assert!(
        err.contains("NotFound") || err.contains("not found"),
        "{err}"
    );
}

const WIDGET_CRD: &str = "\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
    shortNames: [wd]
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
    subresources:
      status: {}
";

const WIDGET: &str = "\
apiVersion: example.com/v1
kind: Widget
metadata:
  name: gear
  namespace: shop
spec:
  size: 3
";

#[tokio::test]
async fn kubectl_installs_a_crd_then_its_objects() {
    if !kubectl_available("kubectl_installs_a_crd_then_its_objects") {
        return;
    }
    let env = env(true).await;
    let crd = Manifest::new(&env, "crd", WIDGET_CRD);
    let out = run(&env, &["apply", "-f", crd.path()]).await;
    assert!(
        out.contains("customresourcedefinition.apiextensions.k8s.io/widgets.example.com created"),
        "{out}"
    );
    run(
        &env,
        &[
            "wait",
            "--for=condition=Established",
            "crd/widgets.example.com",
            "--timeout=10s",
        ],
    )
    .await;
    let widget = Manifest::new(&env, "widget", WIDGET);
    let out = run(&env, &["apply", "-f", widget.path()]).await;
    assert!(out.contains("widget.example.com/gear created"), "{out}");
    let out = run(&env, &["get", "wd", "-n", "shop"]).await;
    assert!(out.contains("gear"), "{out}");
    let size = run(
        &env,
        &[
            "get",
            "widgets",
            "-n",
            "shop",
            "gear",
            "-o",
            "jsonpath={.spec.size}",
        ],
    )
    .await;
    assert_eq!(size, "3");
    let out = run(&env, &["delete", "-f", crd.path()]).await;
    assert!(out.contains("deleted"), "{out}");
    let err = fails(&env, &["get", "widgets", "-n", "shop"]).await;
    // kubectl says so from discovery, or from the 404 of a list when its cache still had it.
    assert!(
        err.contains("the server doesn't have a resource type")
            || err.contains("could not find the requested resource"),
        "{err}"
    );
}
