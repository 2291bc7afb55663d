"""The official Kubernetes Python client against kcache's fake API server.

Dry run, the scale and status subresources, server-side apply, deletecollection, DELETE
answers, defaults, custom resource definitions and custom objects, namespace deletion and
access reviews.

Run by testing/server/tests/it/fake_api_server_python.rs with the path of a kubeconfig for the
server. Each check raises on a difference from what the client sees against kube-apiserver;
the last line printed is "ok".
"""

import sys

from kubernetes import client, config
from kubernetes.client.rest import ApiException

NS = "py"


def deployment(name, replicas=2, containers=None):
    containers = containers or [{"name": "web", "image": "nginx:1.27"}]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": containers},
            },
        },
    }


def expect_status(status, call):
    try:
        call()
    except ApiException as e:
        assert e.status == status, f"expected {status}, got {e.status}: {e.body}"
        return
    raise AssertionError(f"expected an error {status}")


def main(kubeconfig):
    config.load_kube_config(config_file=kubeconfig)
    core = client.CoreV1Api()
    apps = client.AppsV1Api()

    # Dry run: answered, nothing stored.
    dry = apps.create_namespaced_deployment(NS, deployment("web"), dry_run="All")
    assert dry.metadata.name == "web" and dry.spec.revision_history_limit == 10, dry
    expect_status(404, lambda: apps.read_namespaced_deployment("web", NS))

    created = apps.create_namespaced_deployment(NS, deployment("web"))
    assert created.metadata.generation == 1, created.metadata

    # Scale subresource.
    scale = apps.read_namespaced_deployment_scale("web", NS)
    assert scale.spec.replicas == 2 and scale.status.selector == "app=web", scale
    scaled = apps.patch_namespaced_deployment_scale("web", NS, {"spec": {"replicas": 4}})
    assert scaled.spec.replicas == 4, scaled
    assert apps.read_namespaced_deployment("web", NS).spec.replicas == 4

    # Status subresource: a status write changes only status; an object write keeps it.
    status = apps.patch_namespaced_deployment_status(
        "web", NS, {"status": {"replicas": 4, "readyReplicas": 3}, "spec": {"replicas": 9}}
    )
    assert status.status.ready_replicas == 3 and status.spec.replicas == 4, status
    current = apps.read_namespaced_deployment("web", NS)
    current.status.ready_replicas = 0
    current.spec.replicas = 5
    replaced = apps.replace_namespaced_deployment("web", NS, current)
    assert replaced.status.ready_replicas == 3 and replaced.spec.replicas == 5, replaced
    # The scale write and this one each changed the spec.
    assert replaced.metadata.generation == 3, replaced.metadata

    # Server-side apply creates, and a second apply by the same manager updates.
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"a": "1"}}
    applied = core.patch_namespaced_config_map(
        "applied", NS, cm, field_manager="py", _content_type="application/apply-patch+yaml"
    )
    assert applied.data == {"a": "1"}, applied

    # deletecollection with a label selector.
    for name, app in [("a", "web"), ("b", "web"), ("c", "db")]:
        core.create_namespaced_config_map(
            NS, {"metadata": {"name": name, "labels": {"app": app}}, "data": {}}
        )
    core.delete_collection_namespaced_config_map(NS, label_selector="app=web")
    names = sorted(c.metadata.name for c in core.list_namespaced_config_map(NS).items)
    assert names == ["applied", "c"], names

    # A configmap's delete answers a Status of kind Success.
    deleted = core.delete_namespaced_config_map("c", NS)
    deleted = deleted if isinstance(deleted, dict) else deleted.to_dict()
    assert deleted["status"] == "Success" and deleted["details"]["name"] == "c", deleted

    # Defaults: a secret's stringData lands in data, a service gets a cluster IP.
    secret = core.create_namespaced_secret(
        NS, {"metadata": {"name": "s"}, "stringData": {"password": "hunter2"}}
    )
    assert secret.data == {"password": "aHVudGVyMg=="} and secret.type == "Opaque", secret
    svc = core.create_namespaced_service(
        NS, {"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}}
    )
    assert svc.spec.cluster_ip.startswith("10.96.") and svc.spec.ports[0].protocol == "TCP", svc

    # A custom resource definition through the API serves its kind, until it is deleted.
    ext = client.ApiextensionsV1Api()
    ext.create_custom_resource_definition({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{
                "name": "v1", "served": True, "storage": True,
                "schema": {"openAPIV3Schema": {
                    "type": "object", "x-kubernetes-preserve-unknown-fields": True,
                }},
                "subresources": {"status": {}},
            }],
        },
    })
    crd = ext.read_custom_resource_definition("widgets.example.com")
    assert any(c.type == "Established" and c.status == "True" for c in crd.status.conditions), crd
    custom = client.CustomObjectsApi()
    gear = {"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "gear"}, "spec": {"size": 3}}
    made = custom.create_namespaced_custom_object("example.com", "v1", NS, "widgets", gear)
    assert made["metadata"]["generation"] == 1 and made["spec"] == {"size": 3}, made
    status = custom.patch_namespaced_custom_object_status(
        "example.com", "v1", NS, "widgets", "gear", {"status": {"ready": True}, "spec": {"size": 9}}
    )
    assert status["status"] == {"ready": True} and status["spec"] == {"size": 3}, status
    listed = custom.list_namespaced_custom_object("example.com", "v1", NS, "widgets")
    assert [w["metadata"]["name"] for w in listed["items"]] == ["gear"], listed
    ext.delete_custom_resource_definition("widgets.example.com")
    expect_status(404, lambda: custom.get_namespaced_custom_object(
        "example.com", "v1", NS, "widgets", "gear"))

    # Deleting the namespace deletes its contents, then the namespace.
    core.delete_namespace(NS)
    expect_status(404, lambda: core.read_namespace(NS))
    assert core.list_namespaced_config_map(NS).items == []
    assert apps.list_namespaced_deployment(NS).items == []

    # Access reviews are allowed.
    review = client.AuthorizationV1Api().create_self_subject_access_review(
        {"spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}}}
    )
    assert review.status.allowed, review
    print("ok")


if __name__ == "__main__":
    main(sys.argv[1])
