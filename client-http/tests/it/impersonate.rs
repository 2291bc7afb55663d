//! Impersonation over the wire: a kubeconfig's `as`, `as-uid`, `as-groups` and
//! `as-user-extra` become the `Impersonate-*` headers the fake API server receives on lists and
//! watches, and half-set impersonation is a kubeconfig error.

use kcache_client_http::{Client, HttpListerWatcher, Impersonate, Kubeconfig, KubeconfigOptions};
use kcache_reflector::{ListOptions, ListerWatcher};
use kcache_store::DynamicObject;

use crate::support::{self, pods};

/// The server's kubeconfig with `user` fields merged into its user entry.
fn kubeconfig_with(
    server: &kcache_testing_server::FakeApiServer,
    user: &serde_json::Value,
) -> String {
    let mut kubeconfig: serde_json::Value = serde_json::from_str(&server.kubeconfig("ns")).unwrap();
    let entry = &mut kubeconfig["users"][0]["user"];
    if entry.is_null() {
        *entry = serde_json::json!({});
    }
    for (k, v) in user.as_object().unwrap() {
        entry[k] = v.clone();
    }
    kubeconfig.to_string()
}

#[tokio::test]
async fn kubeconfig_impersonation_reaches_the_server_on_lists_and_watches() {
    let server = support::server(true, 1).await;
    let yaml = kubeconfig_with(
        &server,
        &serde_json::json!({
            "as": "jane",
            "as-uid": "uid-42",
            "as-groups": ["dev", "ops"],
            "as-user-extra": {"scopes.example.com/Project": ["shop", "cart"]},
        }),
    );
    let config = Kubeconfig::from_yaml(&yaml)
        .unwrap()
        .config(&KubeconfigOptions::default())
        .unwrap();
    assert_eq!(
        config.impersonate,
        Some(
            Impersonate::user("jane")
                .uid("uid-42")
                .group("dev")
                .group("ops")
                .extra("scopes.example.com/Project", ["shop", "cart"])
        )
    );
    let lw = HttpListerWatcher::<DynamicObject>::dynamic(Client::new(config).unwrap(), pods());
    let list = lw.list(&ListOptions::default()).await.unwrap();
    drop(
        lw.watch(&ListOptions {
            resource_version: list.resource_version,
            ..ListOptions::default()
        })
        .await
        .unwrap(),
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    let want: Vec<(String, String)> = [
        ("impersonate-user", "jane"),
        ("impersonate-uid", "uid-42"),
        ("impersonate-group", "dev"),
        ("impersonate-group", "ops"),
        ("impersonate-extra-scopes.example.com%2fproject", "shop"),
        ("impersonate-extra-scopes.example.com%2fproject", "cart"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    for request in &requests {
        let mut got = request.impersonation.clone();
        got.sort();
        let mut want = want.clone();
        want.sort();
        assert_eq!(got, want, "{} {}", request.method, request.path);
    }
}

#[tokio::test]
async fn without_impersonation_no_header_is_sent() {
    let server = support::server(false, 1).await;
    let lw = support::lw(&server);
    lw.list(&ListOptions::default()).await.unwrap();
    assert!(server.requests()[0].impersonation.is_empty());
}

#[test]
fn half_set_impersonation_is_a_kubeconfig_error() {
    let load = |user: &str| {
        let yaml = format!(
            "current-context: c\nclusters: [{{name: c, cluster: {{server: 'https://h'}}}}]\ncontexts: [{{name: c, context: {{cluster: c, user: u}}}}]\nusers: [{{name: u, user: {user}}}]\n"
        );
        Kubeconfig::from_yaml(&yaml)
            .unwrap()
            .config(&KubeconfigOptions::default())
            .map(|c| c.impersonate)
            .map_err(|e| e.to_string())
    };
    let e = load("{as-groups: [dev], token: t}").unwrap_err();
    assert_eq!(
        e,
        "invalid user `u`: as-uid, as-groups or as-user-extra is set without `as` (the user to impersonate)"
    );
    let e = load("{as: \"jane\\u0001\"}").unwrap_err();
    assert!(e.starts_with("invalid impersonation of user `u`"), "{e}");
    assert_eq!(
        load("{as: '', token: t}"),
        Ok(None),
        "an empty `as` is unset"
    );
    assert_eq!(load("{as: root}"), Ok(Some(Impersonate::user("root"))));
}
