//! The real kubectl against the fake API server's Kubernetes schemas: `explain` prints the real
//! fields and descriptions, `create -f` of a manifest with an unknown field fails with the
//! server's strict decoding error, `patch` merges containers by name, and `apply -f` twice
//! (changing a container) works without warnings.
//!
//! Like the other kubectl tests they need `/usr/bin/kubectl`, and pass saying they did not run
//! without it unless `KCACHE_REQUIRE_KUBECTL` is set.

use kcache_testing_server::fake_api_server::ServedResource;
use serde_json::Value;

use crate::fake_api_server_kubectl::{Manifest, env, kubectl_available, output, run};

const DEPLOYMENT: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
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
        image: IMAGE
        ports:
        - containerPort: 80
";

#[tokio::test]
async fn kubectl_explain_prints_the_real_fields() {
    if !kubectl_available("kubectl_explain_prints_the_real_fields") {
        return;
    }
    let env = env(true).await;
    let pods = run(&env, &["explain", "pods"]).await;
    assert!(pods.contains("KIND:       Pod"), "{pods}");
    assert!(
        pods.contains("Pod is a collection of containers that can run on a host."),
        "{pods}"
    );
    assert!(pods.contains("spec\t<PodSpec>"), "{pods}");
    let containers = run(&env, &["explain", "pods.spec.containers"]).await;
    assert!(
        containers.contains("name\t<string> -required-"),
        "{containers}"
    );
    assert!(
        containers.contains("Name of the container specified as a DNS_LABEL."),
        "{containers}"
    );
    let spec = run(&env, &["explain", "deployments.spec", "--recursive"]).await;
    for field in [
        "replicas\t<integer>",
        "maxSurge\t<IntOrString>",
        "containers\t<[]Container>",
    ] {
        assert!(spec.contains(field), "{field} in {spec}");
    }
}

#[tokio::test]
async fn kubectl_create_of_an_unknown_field_fails_with_the_strict_decoding_error() {
    if !kubectl_available("kubectl_create_of_an_unknown_field_fails_with_the_strict_decoding_error")
    {
        return;
    }
    let env = env(true).await;
    let manifest = Manifest::new(
        &env,
        "unknown",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: default\n\
         data:\n  a: '1'\nspecs:\n  b: 2\n",
    );
    let out = output(&env, &["create", "-f", manifest.path()]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "Error from server (BadRequest): error when creating \"{}\": ConfigMap in version \
             \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \
             \"specs\"",
            manifest.path()
        )),
        "{stderr}"
    );
    // With --validate=warn it is created, and kubectl prints the server's warning.
    let out = output(&env, &["create", "--validate=warn", "-f", manifest.path()]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("Warning: unknown field \"specs\""),
        "{stderr}"
    );
}

#[tokio::test]
async fn kubectl_patch_merges_containers_and_apply_twice_has_no_warnings() {
    if !kubectl_available("kubectl_patch_merges_containers_and_apply_twice_has_no_warnings") {
        return;
    }
    let env = env(true).await;
    let first = Manifest::new(&env, "deploy-1", &DEPLOYMENT.replace("IMAGE", "nginx:1.27"));
    let out = output(&env, &["apply", "-f", first.path(), "-n", "default"]).await;
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    let second = Manifest::new(&env, "deploy-2", &DEPLOYMENT.replace("IMAGE", "nginx:1.28"));
    let out = output(&env, &["apply", "-f", second.path(), "-n", "default"]).await;
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    let stored = env
        .server
        .get(&ServedResource::deployments(), Some("default"), "web")
        .unwrap();
    let containers = &stored.data["spec"]["template"]["spec"]["containers"];
    assert_eq!(containers[0]["image"], "nginx:1.28", "{containers}");
    assert_eq!(containers[0]["ports"][0]["containerPort"], 80);
    run(
        &env,
        &[
            "patch",
            "deploy",
            "web",
            "-n",
            "default",
            "-p",
            r#"{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox"}]}}}}"#,
        ],
    )
    .await;
    let stored = env
        .server
        .get(&ServedResource::deployments(), Some("default"), "web")
        .unwrap();
    let names: Vec<&str> = stored.data["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect::<Vec<_>>();
    assert_eq!(names, ["nginx", "sidecar"]);
    let _: &Value = &stored.data["spec"];
}
