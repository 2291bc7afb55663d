//! User-info in the server URL (`https://user:password@host`): basic authentication, never on
//! the wire as such, never shown.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use kcache_client_http::{Auth, Client, Config, Kubeconfig, KubeconfigOptions, Secret};
use kcache_reflector::{ListOptions, ListerWatcher};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

use crate::support::pods;
use crate::transport::recording_client;

/// The user and password as written in URLs here (percent-encoded), and decoded.
const USER_ENCODED: &str = "kc-user%2Fname";
const USER: &str = "kc-user/name";
const PASSWORD_ENCODED: &str = "pw%3Asecret-1";
const PASSWORD: &str = "pw:secret-1";

/// The request heads a [`head_server`] received.
type Heads = Arc<Mutex<Vec<String>>>;

/// An HTTP/1.1 server on loopback that answers every request with an empty pod list and keeps
/// each request head exactly as received. Returns `host:port`.
async fn head_server() -> (String, Heads) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let heads = Heads::default();
    let seen = heads.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    let n = socket.read(&mut buf).await.unwrap();
                    if n == 0 {
                        return;
                    }
                    head.extend_from_slice(&buf[..n]);
                }
                seen.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&head).into_owned());
                let body = r#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}"#;
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                socket.write_all(response.as_bytes()).await.unwrap();
            });
        }
    });
    (addr, heads)
}

/// The `authorization` header of a request head (lower-cased name), if any.
fn authorization(head: &str) -> Option<String> {
    head.split("\r\n").find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("authorization")
            .then(|| value.trim().to_owned())
    })
}

fn basic(user: &str, password: &str) -> String {
    use base64::Engine as _;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
    )
}

async fn list(client: Client) -> Result<(), kcache_reflector::Error> {
    kcache_client_http::HttpListerWatcher::<kcache_store::DynamicObject>::dynamic(client, pods())
        .list(&ListOptions::default())
        .await
        .map(drop)
}

fn assert_hidden(text: &str) {
    for secret in [
        USER_ENCODED,
        USER,
        PASSWORD_ENCODED,
        PASSWORD,
        "kc-user",
        "secret-1",
    ] {
        assert!(!text.contains(secret), "{secret} shown in:\n{text}");
    }
}

#[tokio::test]
async fn url_userinfo_is_sent_as_basic_auth_and_nowhere_else() {
    let (addr, heads) = head_server().await;
    let url = format!("http://{USER_ENCODED}:{PASSWORD_ENCODED}@{addr}");
    let config = Config::new(url.parse().unwrap());
    assert_eq!(config.cluster_url, format!("http://{addr}/").as_str());
    let mut shown = format!("{config:?} {config:#?}");
    let (client, seen) = recording_client(config);
    write!(shown, "{client:?} {client:#?} {}", client.base_url()).unwrap();
    list(client).await.unwrap();

    let heads = heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 1);
    let head = &heads[0];
    assert!(head.starts_with("GET /api/v1/pods HTTP/1.1\r\n"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains(&format!("\r\nhost: {addr}\r\n")),
        "{head}"
    );
    assert_eq!(authorization(head), Some(basic(USER, PASSWORD)));
    assert_hidden(head);
    // The URI handed to the transport (hyper, and its logs) has no user-info either.
    let uris: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|(u, _)| u.clone())
        .collect();
    assert_eq!(uris, [format!("http://{addr}/api/v1/pods")]);
    assert_hidden(&shown);
}

#[tokio::test]
async fn a_kubeconfig_server_with_userinfo_and_the_explicit_credential_rule() {
    let (addr, heads) = head_server().await;
    let kubeconfig = |user: &str| {
        format!(
            "current-context: c\nclusters: [{{name: c, cluster: {{server: 'http://{USER_ENCODED}:{PASSWORD_ENCODED}@{addr}'}}}}]\ncontexts: [{{name: c, context: {{cluster: c, user: u}}}}]\nusers: [{{name: u, user: {user}}}]\n"
        )
    };
    let mut shown = String::new();
    for (user, want) in [
        ("{}", basic(USER, PASSWORD)),
        ("{token: tok-1}", "Bearer tok-1".to_owned()),
        (
            "{username: admin, password: other}",
            basic("admin", "other"),
        ),
    ] {
        let kc = Kubeconfig::from_yaml(&kubeconfig(user)).unwrap();
        write!(shown, "{kc:?} {kc:#?}").unwrap();
        let config = kc.config(&KubeconfigOptions::default()).unwrap();
        write!(shown, "{config:?}").unwrap();
        let client = Client::new(config).unwrap();
        write!(shown, "{client:?}").unwrap();
        list(client).await.unwrap();
        let head = heads.lock().unwrap().pop().unwrap();
        assert_eq!(authorization(&head), Some(want), "user {user}");
        assert!(
            head.to_ascii_lowercase()
                .contains(&format!("\r\nhost: {addr}\r\n"))
        );
        assert_hidden(&head);
    }
    assert_hidden(&shown);
    assert!(shown.contains("<redacted>@127.0.0.1"), "{shown}");
}

#[tokio::test]
async fn userinfo_set_on_the_field_by_hand_is_treated_alike() {
    let (addr, heads) = head_server().await;
    let mut config = Config::new(format!("http://{addr}").parse().unwrap());
    config.cluster_url = format!("http://{USER_ENCODED}:{PASSWORD_ENCODED}@{addr}")
        .parse()
        .unwrap();
    let mut shown = format!("{config:?}");
    let client = Client::new(config.clone()).unwrap();
    write!(shown, "{client:?}").unwrap();
    list(client).await.unwrap();
    // An explicit credential wins over it.
    let client = Client::new(config.with_auth(Auth::Bearer(Secret::new("tok-2".into())))).unwrap();
    write!(shown, "{client:?}").unwrap();
    list(client).await.unwrap();
    let heads = heads.lock().unwrap().clone();
    let auths: Vec<_> = heads.iter().map(|h| authorization(h)).collect();
    assert_eq!(
        auths,
        [Some(basic(USER, PASSWORD)), Some("Bearer tok-2".to_owned())]
    );
    for head in &heads {
        assert!(head.starts_with("GET /api/v1/pods HTTP/1.1\r\n"), "{head}");
        assert_hidden(head);
    }
    assert_hidden(&shown);
}

#[tokio::test]
async fn errors_of_a_server_with_userinfo_do_not_show_it() {
    let refusing = kcache_testing_server::RefusingPort::new().unwrap();
    let port = refusing.port();
    let url = format!("http://{USER_ENCODED}:{PASSWORD_ENCODED}@127.0.0.1:{port}/prefix");
    let e = list(Client::new(Config::new(url.parse().unwrap())).unwrap())
        .await
        .unwrap_err();
    assert!(e.is_connection_refused(), "{e:?}");
    assert_hidden(&format!("{e} {e:?} {}", crate::support_chain(&e)));
    // A server URL that does not parse: the error names the field, not the URL.
    let kc = Kubeconfig::from_yaml(&format!(
        "current-context: c\nclusters: [{{name: c, cluster: {{server: 'http://{USER_ENCODED}:{PASSWORD_ENCODED}@bad host:1'}}}}]\ncontexts: [{{name: c, context: {{cluster: c}}}}]\n"
    ))
    .unwrap();
    let e = kc.config(&KubeconfigOptions::default()).unwrap_err();
    assert_hidden(&format!("{e} {e:?} {kc:?}"));
}
