//! Credentials at run time: token files, exec plugins (caching, expiry, 401), TLS trust, and
//! redaction.

use std::fmt::Write as _;
use std::path::Path;

use kcache_client_http::{Auth, Client, Config, HttpListerWatcher, Kubeconfig, KubeconfigOptions};
use kcache_reflector::{ListOptions, ListerWatcher};
use kcache_store::DynamicObject;
use kcache_testing_server::FakeApiServer;
use kcache_testing_server::fake_api_server::{Fault, Verb};

use crate::support::{config, pods, server, temp_dir, write};
use crate::transport::{auth_headers, recording_client};

fn lw(client: Client) -> HttpListerWatcher<DynamicObject> {
    HttpListerWatcher::dynamic(client, pods())
}

fn unauthorized() -> Fault {
    Fault::status(Verb::List, 401, "Unauthorized", "Unauthorized")
}

#[tokio::test]
async fn token_file_is_re_read_and_the_last_good_token_kept() {
    let server = server(true, 1).await;
    let dir = temp_dir();
    let token = write(dir.path(), "token", "tok-a\n");
    let mut config = config(&server);
    config.auth = Auth::TokenFile {
        path: token.clone(),
        fallback: None,
    };
    config.token_file_refresh = std::time::Duration::ZERO;
    let (client, seen) = recording_client(config);
    let lw = lw(client);
    lw.list(&ListOptions::default()).await.unwrap();
    std::fs::write(&token, "tok-b").unwrap();
    lw.list(&ListOptions::default()).await.unwrap();
    std::fs::remove_file(&token).unwrap();
    lw.list(&ListOptions::default()).await.unwrap();
    assert_eq!(
        auth_headers(&seen),
        ["Bearer tok-a", "Bearer tok-b", "Bearer tok-b"]
    );
}

#[tokio::test]
async fn token_file_is_re_read_on_401() {
    let server = server(false, 1).await;
    let dir = temp_dir();
    let token = write(dir.path(), "token", "old");
    let mut config = config(&server);
    config.auth = Auth::TokenFile {
        path: token.clone(),
        fallback: None,
    };
    let (client, seen) = recording_client(config);
    let lw = lw(client);
    lw.list(&ListOptions::default()).await.unwrap();
    std::fs::write(&token, "new").unwrap();
    server.inject(unauthorized());
    lw.list(&ListOptions::default()).await.unwrap();
    assert_eq!(
        auth_headers(&seen),
        ["Bearer old", "Bearer old", "Bearer new"]
    );
}

/// An exec plugin script: counts its runs in `dir/count`, saves `KUBERNETES_EXEC_INFO` in
/// `dir/info`, prints a token `exec-token-<run>` expiring at `$EXPIRY`.
fn plugin(dir: &Path) -> String {
    use std::os::unix::fs::PermissionsExt as _;
    let script = write(
        dir,
        "plugin.sh",
        r#"#!/bin/sh
n=$(cat "$DIR/count" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > "$DIR/count"
printf '%s' "$KUBERNETES_EXEC_INFO" > "$DIR/info"
if [ -n "$FAIL" ]; then echo "error: the credentials have expired, run login" >&2; exit 3; fi
printf '{"apiVersion":"%s","kind":"ExecCredential","status":{"token":"exec-token-%s","expirationTimestamp":"%s"}}' "$VERSION" "$n" "$EXPIRY"
"#,
    );
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script.display().to_string()
}

/// A config for `server` whose user runs the plugin with these extra variables.
fn exec_config(server: &FakeApiServer, dir: &Path, version: &str, env: &[(&str, &str)]) -> Config {
    let mut vars = vec![
        ("DIR".to_owned(), dir.display().to_string()),
        ("VERSION".to_owned(), version.to_owned()),
        ("EXPIRY".to_owned(), "2999-01-01T00:00:00Z".to_owned()),
    ];
    for (k, v) in env {
        vars.retain(|(n, _)| n != k);
        vars.push(((*k).to_owned(), (*v).to_owned()));
    }
    let env: Vec<serde_json::Value> = vars
        .iter()
        .map(|(k, v)| serde_json::json!({"name": k, "value": v}))
        .collect();
    let mut kc: serde_json::Value = serde_json::from_str(&server.kubeconfig("ns")).unwrap();
    kc["users"][0]["user"] = serde_json::json!({"exec": {
        "apiVersion": version, "command": plugin(dir), "args": ["--flag"], "env": env,
        "interactiveMode": "Never", "provideClusterInfo": true,
    }});
    Kubeconfig::from_yaml(&kc.to_string())
        .unwrap()
        .config(&KubeconfigOptions::default())
        .unwrap()
}

fn runs(dir: &Path) -> u32 {
    std::fs::read_to_string(dir.join("count")).map_or(0, |s| s.trim().parse().unwrap())
}

#[tokio::test]
async fn exec_credential_is_cached_and_renewed_once_on_401() {
    let server = server(true, 1).await;
    let dir = temp_dir();
    let v1 = "client.authentication.k8s.io/v1";
    let (client, seen) = recording_client(exec_config(&server, dir.path(), v1, &[]));
    let lw = lw(client);
    lw.list(&ListOptions::default()).await.unwrap();
    lw.list(&ListOptions::default()).await.unwrap();
    assert_eq!(runs(dir.path()), 1, "cached until it expires");
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("info")).unwrap()).unwrap();
    assert_eq!(info["apiVersion"], v1);
    assert_eq!(info["kind"], "ExecCredential");
    assert_eq!(info["spec"]["interactive"], false);
    assert_eq!(info["spec"]["cluster"]["server"], server.url());

    server.inject(unauthorized());
    lw.list(&ListOptions::default()).await.unwrap();
    assert_eq!(runs(dir.path()), 2, "re-run after the 401");
    assert_eq!(
        auth_headers(&seen),
        [
            "Bearer exec-token-1",
            "Bearer exec-token-1",
            "Bearer exec-token-1",
            "Bearer exec-token-2"
        ]
    );
    // A credential that keeps failing: one renewal, then the 401 is the answer.
    server.inject(unauthorized().times(5));
    let e = lw.list(&ListOptions::default()).await.unwrap_err();
    assert_eq!(e.status().unwrap().code, Some(401));
    assert_eq!(runs(dir.path()), 3);
    server.clear_faults();
}

#[tokio::test]
async fn expired_exec_credential_is_renewed_each_time() {
    let server = server(false, 1).await;
    let dir = temp_dir();
    let config = exec_config(
        &server,
        dir.path(),
        "client.authentication.k8s.io/v1beta1",
        &[("EXPIRY", "2000-01-01T00:00:00Z")],
    );
    let lw = lw(Client::new(config).unwrap());
    lw.list(&ListOptions::default()).await.unwrap();
    lw.list(&ListOptions::default()).await.unwrap();
    assert_eq!(runs(dir.path()), 2);
}

#[tokio::test]
async fn exec_failures_are_clear_and_transport_errors() {
    let server = server(false, 1).await;
    let dir = temp_dir();
    let v1 = "client.authentication.k8s.io/v1";
    let lw1 = lw(Client::new(exec_config(&server, dir.path(), v1, &[("FAIL", "1")])).unwrap());
    let e = lw1.list(&ListOptions::default()).await.unwrap_err();
    let kcache_reflector::Error::Transport(source) = &e else {
        panic!("{e:?}")
    };
    let msg = source.to_string();
    assert!(msg.starts_with("exec plugin `"), "{msg}");
    assert!(
        msg.ends_with(
            "failed: exit status: 3; stderr: error: the credentials have expired, run login"
        ),
        "{msg}"
    );
    // The plugin answers with another version than configured.
    let lw2 = lw(Client::new(exec_config(
        &server,
        dir.path(),
        v1,
        &[("VERSION", "client.authentication.k8s.io/v1beta1")],
    ))
    .unwrap());
    let e = lw2.list(&ListOptions::default()).await.unwrap_err();
    assert!(
        crate::support_chain(&e).contains("printed an invalid ExecCredential: apiVersion"),
        "{e}"
    );
    // A command that does not exist.
    let mut config = exec_config(&server, dir.path(), v1, &[]);
    if let Auth::Exec(exec) = &mut config.auth {
        exec.command = dir.path().join("missing-plugin").display().to_string();
        exec.install_hint = Some("install it with `brew install missing-plugin`".to_owned());
    }
    let e = lw(Client::new(config).unwrap())
        .list(&ListOptions::default())
        .await
        .unwrap_err();
    let chain = crate::support_chain(&e);
    assert!(
        chain.contains("could not start it") && chain.contains("brew install"),
        "{chain}"
    );
}

#[tokio::test]
async fn tls_is_verified_unless_insecure_and_server_name_is_honoured() {
    let server = server(true, 1).await;
    // No CA: the system roots do not trust the fake CA.
    let mut untrusted = config(&server);
    untrusted.root_certificates = None;
    let e = lw(Client::new(untrusted.clone()).unwrap())
        .list(&ListOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(e, kcache_reflector::Error::Transport(_)), "{e:?}");
    // Explicitly insecure: accepted.
    untrusted.insecure_skip_tls_verify = true;
    lw(Client::new(untrusted).unwrap())
        .list(&ListOptions::default())
        .await
        .unwrap();
    // tls-server-name: the certificate is for 127.0.0.1 and localhost.
    let mut named = config(&server);
    named.tls_server_name = Some("localhost".to_owned());
    lw(Client::new(named.clone()).unwrap())
        .list(&ListOptions::default())
        .await
        .unwrap();
    named.tls_server_name = Some("kubernetes.default".to_owned());
    assert!(
        lw(Client::new(named).unwrap())
            .list(&ListOptions::default())
            .await
            .is_err()
    );
}

#[tokio::test]
async fn secrets_never_show_in_debug_or_errors() {
    let server = server(false, 1).await;
    let (cert, key) = crate::support::cert_and_key("client");
    let key_body: String = key.lines().nth(1).unwrap().to_owned();
    let dir = temp_dir();
    let path = write(
        dir.path(),
        "config",
        &format!(
            "current-context: c\nclusters: [{{name: c, cluster: {{server: '{}'}}}}]\ncontexts: [{{name: c, context: {{cluster: c, user: u}}}}, {{name: b, context: {{cluster: c, user: basic}}}}, {{name: e, context: {{cluster: c, user: e}}}}]\nusers:\n- {{name: u, user: {{token: TOKEN-SECRET-1, client-certificate-data: {}, client-key-data: {}}}}}\n- {{name: basic, user: {{username: admin, password: PASSWORD-SECRET-2}}}}\n- {{name: e, user: {{exec: {{apiVersion: client.authentication.k8s.io/v1, command: /bin/false, interactiveMode: Never, env: [{{name: KEY, value: ENV-SECRET-3}}]}}, auth-provider: {{config: {{access-token: PROVIDER-SECRET-4}}}}}}}}\n",
            server.url(),
            crate::support::b64(&cert),
            crate::support::b64(&key),
        ),
    );
    let kc = Kubeconfig::read(&path).unwrap();
    let mut text = format!("{kc:?} {kc:#?}");
    for ctx in ["c", "b", "e"] {
        let options = KubeconfigOptions {
            context: Some(ctx.into()),
            paths: Some(vec![path.clone()]),
            ..KubeconfigOptions::default()
        };
        let config = Config::from_kubeconfig(&options).unwrap();
        write!(text, "{config:?} {config:#?}").unwrap();
        let client = Client::new(config).unwrap();
        write!(text, "{client:?}").unwrap();
        if let Err(e) = lw(client).list(&ListOptions::default()).await {
            write!(text, "{e} {e:?} {}", crate::support_chain(&e)).unwrap();
        }
    }
    // A 401 error after a retry.
    server.inject(unauthorized().times(2));
    let (client, _) = recording_client(Config::from_kubeconfig_path(&path).unwrap());
    let e = lw(client).list(&ListOptions::default()).await.unwrap_err();
    write!(text, "{e} {e:?}").unwrap();
    for secret in [
        "TOKEN-SECRET-1",
        "PASSWORD-SECRET-2",
        "ENV-SECRET-3",
        "PROVIDER-SECRET-4",
        key_body.as_str(),
    ] {
        assert!(!text.contains(secret), "{secret} leaked in:\n{text}");
    }
    assert!(text.contains("Secret([redacted])"));
}
