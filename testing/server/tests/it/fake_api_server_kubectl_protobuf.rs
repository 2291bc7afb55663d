//! The real kubectl speaking protobuf to the fake API server: its generated `create` commands
//! (`create namespace`, `configmap`, `secret generic`, `deployment`, `service clusterip`) send
//! protobuf bodies and read protobuf answers (an `AlreadyExists` Status included), and
//! `describe` reads built-in kinds in protobuf; what they create is what `kubectl get` (which
//! asks for JSON and Tables) and `kubectl describe` show.
//!
//! Like the other kubectl tests they need `/usr/bin/kubectl`, and pass saying they did not run
//! without it unless `KCACHE_REQUIRE_KUBECTL` is set.

use kcache_testing_server::fake_api_server::ServedResource;
use serde_json::{Value, json};

use crate::fake_api_server_kubectl::{Env, env, kubectl_available, output, run};

/// `kubectl get <args> -o json`, parsed.
async fn get_json(env: &Env, args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.extend(["-o", "json"]);
    serde_json::from_str(&run(env, &args).await).unwrap()
}

#[tokio::test]
async fn kubectl_create_commands_send_protobuf_and_get_shows_what_they_made() {
    if !kubectl_available("kubectl_create_commands_send_protobuf_and_get_shows_what_they_made") {
        return;
    }
    for tls in [true, false] {
        let env = env(tls).await;
        create_all(&env).await;
        assert_stored(&env);
        assert_gets(&env).await;
        assert_describes(&env).await;
        // The second create of a name: kubectl prints the AlreadyExists Status it read.
        let again = output(&env, &["create", "configmap", "settings", "-n", "team-a"]).await;
        assert!(!again.status.success());
        let err = String::from_utf8_lossy(&again.stderr);
        assert!(
            err.contains("AlreadyExists") || err.contains("already exists"),
            "{err}"
        );
    }
}

/// `kubectl create` of a namespace, a configmap, a secret, a deployment and a service, each
/// printing that it created it.
async fn create_all(env: &Env) {
    let created = |out: &str, what: &str| {
        assert_eq!(out.trim(), format!("{what} created"));
    };
    created(
        &run(env, &["create", "namespace", "team-a"]).await,
        "namespace/team-a",
    );
    created(
        &run(
            env,
            &[
                "create",
                "configmap",
                "settings",
                "-n",
                "team-a",
                "--from-literal=mode=fast",
                "--from-literal=level=3",
            ],
        )
        .await,
        "configmap/settings",
    );
    created(
        &run(
            env,
            &[
                "create",
                "secret",
                "generic",
                "creds",
                "-n",
                "team-a",
                "--from-literal=password=s3cret",
            ],
        )
        .await,
        "secret/creds",
    );
    created(
        &run(
            env,
            &[
                "create",
                "deployment",
                "web",
                "-n",
                "team-a",
                "--image=nginx:1.27",
                "--replicas=2",
                "--port=80",
            ],
        )
        .await,
        "deployment.apps/web",
    );
    created(
        &run(
            env,
            &[
                "create",
                "service",
                "clusterip",
                "web",
                "-n",
                "team-a",
                "--tcp=80:8080",
            ],
        )
        .await,
        "service/web",
    );
}

/// The objects the commands created, as the server stores them.
fn assert_stored(env: &Env) {
    let server = &env.server;
    let stored = |resource: &ServedResource, name: &str| {
        let obj = server
            .get(resource, Some("team-a"), name)
            .unwrap_or_else(|| panic!("{name} stored"));
        serde_json::to_value(&*obj).unwrap()
    };
    let cm = stored(&ServedResource::configmaps(), "settings");
    assert_eq!(cm["data"], json!({"mode": "fast", "level": "3"}));
    let secret = stored(&ServedResource::secrets(), "creds");
    eprintln!(
        "DEBUG {cm}\nDEBUG {secret}\nDEBUG {}",
        stored(&ServedResource::deployments(), "web")
    );
    assert_eq!(secret["data"], json!({"password": "czNjcmV0"}));
    assert_eq!(secret["type"], "Opaque");
    let deployment = stored(&ServedResource::deployments(), "web");
    assert_eq!(deployment["spec"]["replicas"], 2);
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.27"
    );
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"],
        80
    );
    let service = stored(&ServedResource::services(), "web");
    assert_eq!(service["spec"]["type"], "ClusterIP");
    assert_eq!(service["spec"]["ports"][0]["port"], 80);
    assert_eq!(service["spec"]["ports"][0]["targetPort"], 8080);
    assert_eq!(service["spec"]["selector"], json!({"app": "web"}));
    assert!(
        server
            .get(&ServedResource::namespaces(), None, "team-a")
            .is_some()
    );
}

/// `kubectl get`: tables, and objects as JSON.
async fn assert_gets(env: &Env) {
    let ns = ["-n", "team-a"];
    let table = run(
        env,
        &[
            "get",
            "configmaps,secrets,deployments,services",
            "-n",
            "team-a",
        ],
    )
    .await;
    for name in [
        "configmap/settings",
        "secret/creds",
        "deployment.apps/web",
        "service/web",
    ] {
        assert!(table.contains(name), "{name} in\n{table}");
    }
    let namespaces = run(env, &["get", "namespaces"]).await;
    assert!(
        namespaces
            .lines()
            .any(|l| l.starts_with("team-a") && l.contains("Active")),
        "{namespaces}"
    );
    let cm = get_json(
        env,
        &[&["get", "configmap", "settings"][..], &ns[..]].concat(),
    )
    .await;
    assert_eq!(cm["kind"], "ConfigMap");
    assert_eq!(cm["data"]["mode"], "fast");
    let secret = get_json(env, &[&["get", "secret", "creds"][..], &ns[..]].concat()).await;
    assert_eq!(secret["data"]["password"], "czNjcmV0");
    let deployment = get_json(env, &[&["get", "deployment", "web"][..], &ns[..]].concat()).await;
    assert_eq!(deployment["apiVersion"], "apps/v1");
    assert_eq!(deployment["spec"]["replicas"], 2);
    let service = get_json(env, &[&["get", "service", "web"][..], &ns[..]].concat()).await;
    assert_eq!(service["spec"]["ports"][0]["targetPort"], 8080);
    let namespace = get_json(env, &["get", "namespace", "team-a"]).await;
    assert_eq!(namespace["status"]["phase"], "Active");
    let list = get_json(env, &[&["get", "configmaps"][..], &ns[..]].concat()).await;
    assert_eq!(list["kind"], "List");
    assert_eq!(list["items"][0]["metadata"]["name"], "settings");
    let image = run(
        env,
        &[
            "get",
            "deployment",
            "web",
            "-n",
            "team-a",
            "-o",
            "jsonpath={.spec.template.spec.containers[0].image}",
        ],
    )
    .await;
    assert_eq!(image, "nginx:1.27");
}

/// `kubectl describe`: it reads the objects, and their events, in protobuf (client-go's
/// clientset).
async fn assert_describes(env: &Env) {
    let ns = ["-n", "team-a"];
    for (what, shown) in [
        (["configmap", "settings"], "fast"),
        (["secret", "creds"], "password:  6 bytes"),
        (["deployment", "web"], "2 desired"),
        (["service", "web"], "8080/TCP"),
    ] {
        let out = run(env, &[&["describe"][..], &what[..], &ns[..]].concat()).await;
        assert!(out.contains(shown), "describe {what:?}:\n{out}");
    }
    let out = run(env, &["describe", "namespace", "team-a"]).await;
    assert!(out.contains("Active"), "{out}");
}

/// kubectl's wire traffic (`-v=8` prints each request's and response's headers): `create`
/// sends protobuf and reads the protobuf answer; `describe`, which reads built-in kinds (the
/// object, its events, a deployment's replica sets) through client-go's clientset, asks for
/// protobuf and reads it; so does `auth can-i`, whose access review is protobuf.
#[tokio::test]
async fn kubectl_sends_and_reads_protobuf_on_the_wire() {
    if !kubectl_available("kubectl_sends_and_reads_protobuf_on_the_wire") {
        return;
    }
    let env = env(true).await;
    let out = output(
        &env,
        &["create", "configmap", "wire", "--from-literal=k=v", "-v=8"],
    )
    .await;
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "configmap/wire created"
    );
    let post = log
        .split_once("POST https://")
        .map_or_else(|| panic!("no POST in\n{log}"), |(_, after)| after);
    // The request's headers, then the answer's.
    assert!(
        post.contains("Content-Type: application/vnd.kubernetes.protobuf"),
        "{log}"
    );
    assert!(
        post.contains("Accept: application/vnd.kubernetes.protobuf,application/json"),
        "{log}"
    );
    assert!(
        post.matches("Content-Type: application/vnd.kubernetes.protobuf")
            .count()
            >= 2,
        "the answer is protobuf too:\n{log}"
    );

    run(
        &env,
        &[
            "create",
            "deployment",
            "web",
            "--image=nginx:1.27",
            "--replicas=3",
        ],
    )
    .await;
    for (args, shown) in [
        (&["describe", "configmap", "wire"][..], "Name:         wire"),
        (&["describe", "deployment", "web"][..], "3 desired"),
        // The access review, sent and answered in protobuf.
        (&["auth", "can-i", "delete", "secrets"][..], "yes"),
    ] {
        let mut args = args.to_vec();
        args.push("-v=8");
        let out = output(&env, &args).await;
        let log = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{args:?}: {log}");
        assert!(stdout.contains(shown), "{args:?}:\n{stdout}");
        assert!(
            log.contains("Accept: application/vnd.kubernetes.protobuf,application/json"),
            "{args:?}: {log}"
        );
        assert!(
            log.contains("Content-Type: application/vnd.kubernetes.protobuf"),
            "{args:?}: {log}"
        );
    }
}
