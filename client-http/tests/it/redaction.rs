//! Every type that holds a credential redacts it in `Debug` (and `Display`, where it has one):
//! built with a distinct secret in every credential field, none may show.

use std::fmt::Write as _;

use kcache_client_http::{
    Auth, Client, Config, ExecApiVersion, ExecConfig, Identity, Impersonate, Kubeconfig,
    KubeconfigOptions, Proxy, ProxyUrl, Secret,
};

use crate::support::{b64, cert_and_key};

/// Every secret put in a credential field below.
const SECRETS: [&str; 12] = [
    "SRV-USER-1",
    "SRV-PASS-2",
    "PROXY-USER-3",
    "PROXY-PASS-4",
    "TOKEN-5",
    "PASSWORD-6",
    "ENV-7",
    "ARG-8",
    "ACCESS-9",
    "FALLBACK-10",
    "BASIC-USER-11",
    "BASIC-PASS-12",
];

fn kubeconfig(cert: &str, key: &str) -> String {
    format!(
        r"current-context: token
clusters:
- name: c
  cluster:
    server: https://SRV-USER-1:SRV-PASS-2@127.0.0.1:6443/prefix
    proxy-url: http://PROXY-USER-3:PROXY-PASS-4@proxy.corp:3128
    insecure-skip-tls-verify: true
contexts:
- {{name: token, context: {{cluster: c, user: token}}}}
- {{name: basic, context: {{cluster: c, user: basic}}}}
- {{name: exec, context: {{cluster: c, user: exec}}}}
- {{name: url, context: {{cluster: c}}}}
users:
- name: token
  user:
    token: TOKEN-5
    client-certificate-data: {cert}
    client-key-data: {key}
    as: jane
- name: basic
  user: {{username: admin, password: PASSWORD-6}}
- name: exec
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: /bin/false
      args: [--token=ARG-8]
      env: [{{name: KEY, value: ENV-7}}]
      interactiveMode: Never
      provideClusterInfo: true
- name: legacy
  user:
    auth-provider: {{name: oidc, config: {{access-token: ACCESS-9}}}}
",
        cert = b64(cert),
        key = b64(key),
    )
}

fn assert_redacted(text: &str, key_body: &str) {
    for secret in SECRETS.iter().copied().chain([key_body]) {
        assert!(!text.contains(secret), "{secret} shown in:\n{text}");
    }
}

#[test]
fn no_credential_shows_in_debug() {
    let (cert, key) = cert_and_key("client");
    let key_body = key.lines().nth(1).unwrap().to_owned();
    let mut shown = String::new();

    // The kubeconfig model, every credential field set.
    let kc = Kubeconfig::from_yaml(&kubeconfig(&cert, &key)).unwrap();
    write!(shown, "{kc:?} {kc:#?}").unwrap();
    for user in &kc.users {
        write!(shown, "{user:?} {:?}", user.user).unwrap();
    }
    for cluster in &kc.clusters {
        write!(shown, "{cluster:?} {:?}", cluster.cluster).unwrap();
    }
    assert!(
        shown.contains("http://<redacted>@proxy.corp:3128"),
        "{shown}"
    );

    // The configs and clients of its contexts.
    for context in ["token", "basic", "exec", "url"] {
        let options = KubeconfigOptions {
            context: Some(context.to_owned()),
            ..KubeconfigOptions::default()
        };
        let config = kc.config(&options).unwrap();
        write!(shown, "{config:?} {config:#?} {:?}", config.auth).unwrap();
        let client = Client::new(config).unwrap();
        write!(shown, "{client:?} {client:#?} {}", client.base_url()).unwrap();
    }

    // Built by hand.
    let mut exec = ExecConfig::new(ExecApiVersion::V1, "/usr/bin/plugin");
    exec.args = vec!["--token".to_owned(), "ARG-8".to_owned()];
    exec.env = vec![("KEY".to_owned(), Secret::new("ENV-7".to_owned()))];
    write!(shown, "{exec:?} {exec:#?}").unwrap();
    let proxy_url: ProxyUrl = "socks5://PROXY-USER-3:PROXY-PASS-4@proxy.corp"
        .parse()
        .unwrap();
    write!(shown, "{proxy_url} {proxy_url:?}").unwrap();
    let identity = Identity::from_pem(cert.as_bytes(), key.as_bytes()).unwrap();
    write!(shown, "{identity:?}").unwrap();
    let auths = [
        Auth::Bearer(Secret::new("TOKEN-5".to_owned())),
        Auth::TokenFile {
            path: "/var/token".into(),
            fallback: Some(Secret::new("FALLBACK-10".to_owned())),
        },
        Auth::Basic {
            username: "BASIC-USER-11".to_owned(),
            password: Secret::new("BASIC-PASS-12".to_owned()),
        },
        Auth::Exec(Box::new(exec.clone())),
    ];
    for auth in auths {
        let mut config = Config::new(
            "https://SRV-USER-1:SRV-PASS-2@127.0.0.1:6443"
                .parse()
                .unwrap(),
        )
        .with_auth(auth);
        config.identity = Some(identity.clone());
        config.proxy = Proxy::Url(proxy_url.clone());
        config.impersonate = Some(Impersonate::user("jane").group("dev"));
        write!(shown, "{config:?} {:?} {:?}", config.auth, config.proxy).unwrap();
        let client = Client::new(config).unwrap();
        write!(shown, "{client:?}").unwrap();
    }

    // Errors about URLs that carry credentials.
    for bad in [
        "http://PROXY-USER-3:PROXY-PASS-4@proxy:99999",
        "http://PROXY-USER-3:PROXY-PASS-4 x@proxy",
        "https://PROXY-USER-3:PROXY-PASS-4@proxy",
        "ftp://PROXY-USER-3:PROXY-PASS-4@proxy",
    ] {
        let e = ProxyUrl::parse(bad).unwrap_err();
        write!(shown, "{e} {e:?}").unwrap();
    }

    assert_redacted(&shown, &key_body);
    assert!(shown.contains("Secret([redacted])"));
}
