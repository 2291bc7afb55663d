//! Kubeconfig loading: every field, kubectl's merge rules, and clear errors for bad input.

use std::path::PathBuf;

use kcache_client_http::{Auth, Config, Error, ExecApiVersion, Kubeconfig, KubeconfigOptions};

use crate::support::{b64, cert_and_key, temp_dir, write};

fn options(paths: Vec<PathBuf>) -> KubeconfigOptions {
    KubeconfigOptions {
        paths: Some(paths),
        ..KubeconfigOptions::default()
    }
}

fn load(text: &str) -> Result<Config, Error> {
    Kubeconfig::from_yaml(text)?.config(&KubeconfigOptions::default())
}

#[test]
fn every_field_of_a_full_kubeconfig() {
    let dir = temp_dir();
    let (ca, _) = cert_and_key("ca");
    let (cert, key) = cert_and_key("client");
    write(dir.path(), "ca.crt", &ca);
    write(dir.path(), "client.crt", &cert);
    write(dir.path(), "client.key", &key);
    write(dir.path(), "token", "file-token\n");
    let path = write(
        dir.path(),
        "config",
        r"
apiVersion: v1
kind: Config
preferences: {}
current-context: dev
clusters:
- name: dev-cluster
  cluster:
    server: https://10.0.0.1:6443/prefix
    certificate-authority: ca.crt
    tls-server-name: kubernetes.default
    disable-compression: true
users:
- name: dev-user
  user:
    client-certificate: client.crt
    client-key: client.key
    token: inline-token
    tokenFile: token
contexts:
- name: dev
  context: {cluster: dev-cluster, user: dev-user, namespace: team-a}
",
    );
    let config = Config::from_kubeconfig_path(&path).unwrap();
    assert_eq!(config.cluster_url, "https://10.0.0.1:6443/prefix");
    assert_eq!(config.default_namespace, "team-a");
    assert_eq!(
        config.tls_server_name.as_deref(),
        Some("kubernetes.default")
    );
    assert_eq!(config.root_certificates.as_ref().unwrap().len(), 1);
    assert!(config.identity.is_some());
    assert!(!config.insecure_skip_tls_verify);
    let Auth::TokenFile {
        path: token,
        fallback,
    } = &config.auth
    else {
        panic!("{:?}", config.auth)
    };
    assert_eq!(
        token,
        &dir.path().join("token"),
        "relative to the kubeconfig's dir"
    );
    assert_eq!(fallback.as_ref().unwrap().expose(), "inline-token");
    // The client can be built: the key is usable.
    kcache_client_http::Client::new(config).unwrap();
}

#[test]
fn data_fields_win_over_files() {
    let (ca, _) = cert_and_key("ca");
    let (cert, key) = cert_and_key("client");
    let config = load(&format!(
        r#"
current-context: c
clusters: [{{name: c, cluster: {{server: "https://h", certificate-authority: /nonexistent/ca,
  certificate-authority-data: "{}"}}}}]
users: [{{name: u, user: {{client-certificate: /nonexistent/c, client-certificate-data: "{}",
  client-key: /nonexistent/k, client-key-data: "{}", token: tok}}}}]
contexts: [{{name: c, context: {{cluster: c, user: u}}}}]
"#,
        b64(&ca),
        b64(&cert),
        b64(&key)
    ))
    .unwrap();
    assert!(config.root_certificates.is_some() && config.identity.is_some());
    assert!(matches!(&config.auth, Auth::Bearer(t) if t.expose() == "tok"));
    assert_eq!(config.default_namespace, "default");
}

#[test]
fn merge_rules_first_file_wins_and_context_choice() {
    let dir = temp_dir();
    let a = write(
        dir.path(),
        "a",
        r#"
clusters: [{name: shared, cluster: {server: "http://first:1"}}]
users: [{name: shared, user: {token: first}}]
contexts: [{name: one, context: {cluster: shared, user: shared, namespace: from-a}}]
"#,
    );
    let b = write(
        dir.path(),
        "b",
        r#"
current-context: two
clusters:
- {name: shared, cluster: {server: "http://second:2"}}
- {name: only-b, cluster: {server: "http://b:3"}}
users: [{name: shared, user: {token: second}}]
contexts:
- {name: one, context: {cluster: only-b, namespace: from-b}}
- {name: two, context: {cluster: only-b, user: shared}}
"#,
    );
    let c = write(dir.path(), "c", "current-context: never-used\n");
    // current-context from the first file that sets one (b), contexts from the first defining.
    let config = Config::from_kubeconfig(&options(vec![a.clone(), b.clone(), c])).unwrap();
    assert_eq!(config.cluster_url, "http://b:3/");
    assert!(matches!(&config.auth, Auth::Bearer(t) if t.expose() == "first"));
    let mut opts = options(vec![a.clone(), b.clone()]);
    opts.context = Some("one".into());
    let config = Config::from_kubeconfig(&opts).unwrap();
    assert_eq!(config.cluster_url, "http://first:1/");
    assert_eq!(config.default_namespace, "from-a");
    // --cluster and --user override the context's.
    opts.cluster = Some("only-b".into());
    assert_eq!(
        Config::from_kubeconfig(&opts).unwrap().cluster_url,
        "http://b:3/"
    );
    // Order matters: b first.
    let mut opts = options(vec![b, a]);
    opts.context = Some("one".into());
    let config = Config::from_kubeconfig(&opts).unwrap();
    assert_eq!(config.default_namespace, "from-b");
    assert!(matches!(config.auth, Auth::None));
}

#[test]
fn missing_context_cluster_user_and_no_current_context() {
    let base = r#"
clusters: [{name: c, cluster: {server: "http://h"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: ok, context: {cluster: c, user: u}}, {name: nocluster, context: {cluster: gone}},
           {name: nouser, context: {cluster: c, user: ghost}}]
"#;
    let e = load(base).unwrap_err();
    assert!(matches!(e, Error::NoCurrentContext), "{e}");
    assert_eq!(
        e.to_string(),
        "kubeconfig has no current-context and no context was chosen"
    );
    let kc = Kubeconfig::from_yaml(base).unwrap();
    let with = |ctx: &str| {
        kc.config(&KubeconfigOptions {
            context: Some(ctx.into()),
            ..KubeconfigOptions::default()
        })
        .unwrap_err()
        .to_string()
    };
    assert_eq!(with("absent"), "context `absent` not found in kubeconfig");
    assert_eq!(with("nocluster"), "cluster `gone` not found in kubeconfig");
    assert_eq!(with("nouser"), "user `ghost` not found in kubeconfig");
}

#[test]
fn unreadable_files_name_their_path() {
    let dir = temp_dir();
    let missing = dir.path().join("nope");
    let e = Config::from_kubeconfig_path(&missing).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("could not read kubeconfig {}", missing.display())
    );
    assert!(std::error::Error::source(&e).is_some());
    let path = write(
        dir.path(),
        "config",
        "current-context: c\nclusters: [{name: c, cluster: {server: 'https://h', certificate-authority: ca.pem}}]\ncontexts: [{name: c, context: {cluster: c}}]\n",
    );
    let e = Config::from_kubeconfig_path(&path).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "could not read certificate-authority {}",
            dir.path().join("ca.pem").display()
        )
    );
    // $KUBECONFIG-style lists skip missing files but fail when none exists.
    let e = Config::from_kubeconfig(&KubeconfigOptions {
        paths: None,
        ..KubeconfigOptions::default()
    });
    drop(e); // depends on the environment; the explicit case:
    let e = Kubeconfig::load(&options(vec![missing.clone()])).unwrap_err();
    assert!(matches!(e, Error::ReadFile { .. }));
}

#[test]
fn malformed_pem_and_base64() {
    let cluster = |extra: &str| {
        format!(
            "current-context: c\nclusters: [{{name: c, cluster: {{server: 'https://h', {extra}}}}}]\ncontexts: [{{name: c, context: {{cluster: c, user: u}}}}]\nusers: [{{name: u, user: {{}}}}]\n"
        )
    };
    let e = load(&cluster(&format!(
        "certificate-authority-data: {}",
        b64("not pem")
    )))
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "malformed PEM in certificate authority of cluster `c`"
    );
    let e = load(&cluster(&format!(
        "certificate-authority-data: {}",
        b64("-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n")
    )))
    .unwrap_err();
    assert!(matches!(e, Error::Pem { .. }), "{e}");
    let e = load(&cluster("certificate-authority-data: '%%%'")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "certificate-authority-data is not valid base64"
    );
    let (cert, _) = cert_and_key("x");
    let e = load(&format!(
        "current-context: c\nclusters: [{{name: c, cluster: {{server: 'https://h'}}}}]\ncontexts: [{{name: c, context: {{cluster: c, user: u}}}}]\nusers: [{{name: u, user: {{client-certificate-data: {}, client-key-data: {}}}}}]\n",
        b64(&cert),
        b64("-----BEGIN PRIVATE KEY-----\n!!!!\n-----END PRIVATE KEY-----\n")
    ))
    .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("malformed PEM in client key of user `u`"),
        "{e}"
    );
}

#[test]
fn insecure_only_when_asked_and_never_with_a_ca() {
    let config =
        load("current-context: c\nclusters: [{name: c, cluster: {server: 'https://h', insecure-skip-tls-verify: true}}]\ncontexts: [{name: c, context: {cluster: c}}]\n")
            .unwrap();
    assert!(config.insecure_skip_tls_verify);
    let config = load("current-context: c\nclusters: [{name: c, cluster: {server: 'https://h'}}]\ncontexts: [{name: c, context: {cluster: c}}]\n").unwrap();
    assert!(!config.insecure_skip_tls_verify && config.root_certificates.is_none());
    let (ca, _) = cert_and_key("ca");
    let e = load(&format!("current-context: c\nclusters: [{{name: c, cluster: {{server: 'https://h', insecure-skip-tls-verify: true, certificate-authority-data: {}}}}}]\ncontexts: [{{name: c, context: {{cluster: c}}}}]\n", b64(&ca))).unwrap_err();
    assert!(matches!(e, Error::InsecureWithCa(ref c) if c == "c"), "{e}");
}

#[test]
fn exec_versions_and_modes() {
    let exec = |spec: &str| {
        load(&format!(
            "current-context: c\nclusters: [{{name: c, cluster: {{server: 'https://h'}}}}]\ncontexts: [{{name: c, context: {{cluster: c, user: u}}}}]\nusers: [{{name: u, user: {{exec: {spec}}}}}]\n"
        ))
    };
    let config = exec("{apiVersion: client.authentication.k8s.io/v1, command: aws, args: [eks, get-token], env: [{name: AWS_PROFILE, value: dev}], interactiveMode: Never, provideClusterInfo: true}").unwrap();
    let Auth::Exec(e) = &config.auth else {
        panic!()
    };
    assert_eq!(e.api_version, ExecApiVersion::V1);
    assert_eq!((e.command.as_str(), e.args.len()), ("aws", 2));
    assert_eq!(e.env[0].1.expose(), "dev");
    let config =
        exec("{apiVersion: client.authentication.k8s.io/v1beta1, command: gke-auth}").unwrap();
    assert!(matches!(&config.auth, Auth::Exec(e) if e.api_version == ExecApiVersion::V1Beta1));
    let e = exec("{apiVersion: client.authentication.k8s.io/v1alpha9, command: x}").unwrap_err();
    assert_eq!(
        e.to_string(),
        "unknown exec plugin api version `client.authentication.k8s.io/v1alpha9` (expected client.authentication.k8s.io/v1 or v1beta1)"
    );
    let e = exec("{apiVersion: client.authentication.k8s.io/v1, command: x}").unwrap_err();
    assert!(e.to_string().contains("interactiveMode"), "{e}");
    let e =
        exec("{apiVersion: client.authentication.k8s.io/v1, command: x, interactiveMode: Always}")
            .unwrap_err();
    assert!(e.to_string().contains("needs a terminal"), "{e}");
}

#[test]
fn unsupported_settings_are_errors_not_silently_ignored() {
    let e = load("current-context: c\nclusters: [{name: c, cluster: {server: 'https://h', proxy-url: 'socks4://p:1080'}}]\ncontexts: [{name: c, context: {cluster: c}}]\n").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("unsupported setting: proxy-url of cluster `c`: SOCKS4"),
        "{e}"
    );
    let e = load("current-context: c\nclusters: [{name: c, cluster: {server: 'https://h'}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {auth-provider: {name: gcp, config: {access-token: SECRET}}}}]\n").unwrap_err();
    assert!(e.to_string().contains("auth-provider"), "{e}");
}

#[test]
fn basic_auth_and_conflicts() {
    let config = load("current-context: c\nclusters: [{name: c, cluster: {server: 'http://h'}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {username: admin, password: pw}}]\n").unwrap();
    assert!(matches!(&config.auth, Auth::Basic { username, .. } if username == "admin"));
    let e = load("current-context: c\nclusters: [{name: c, cluster: {server: 'http://h'}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {username: admin, password: pw, token: t}}]\n").unwrap_err();
    assert!(e.to_string().contains("cannot both be set"), "{e}");
}

#[test]
fn parse_errors_never_quote_the_input() {
    let e = Kubeconfig::from_yaml("users: [{name: u, user: {token: SECRET-TOKEN}}]\nclusters: {{{")
        .unwrap_err();
    assert!(matches!(e, Error::ParseKubeconfig { .. }));
    let full = format!("{e} {e:?} {:?}", std::error::Error::source(&e));
    assert!(!full.contains("SECRET-TOKEN"), "{full}");
    let e = load("current-context: c\nclusters: [{name: c, cluster: {server: 'ftp://h'}}]\ncontexts: [{name: c, context: {cluster: c}}]\n").unwrap_err();
    assert!(
        e.to_string().starts_with("invalid server of cluster `c`"),
        "{e}"
    );
    // An empty file is an empty config, JSON is YAML.
    assert!(Kubeconfig::from_yaml("").unwrap().clusters.is_empty());
    assert!(Kubeconfig::from_yaml(r#"{"clusters": null, "current-context": "x"}"#).is_ok());
}

#[test]
fn fuzz_entry_point_handles_odd_input() {
    assert!(!kcache_client_http::fuzz_kubeconfig(b"\xff"));
    assert!(!kcache_client_http::fuzz_kubeconfig(b"[1, 2"));
    assert!(kcache_client_http::fuzz_kubeconfig(
        b"current-context: c\nclusters: [{name: c, cluster: {server: 'http://h'}}]\ncontexts: [{name: c, context: {cluster: c}}]\n"
    ));
}
