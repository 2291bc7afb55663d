"""The official Kubernetes Python client asking kcache's fake API server for shards.

Sharded list and watch (`shardSelector`, Kubernetes 1.36) are not in the client's generated
methods, so the selector goes through the client's own request path (`param_serialize`, `call_api`,
`response_deserialize`), as a Python user would send it. The shards' bounds and the 64-bit FNV-1a hash are computed here, independently of kcache:
four shards by uid and by namespace each return exactly the pods whose hash falls in their
range, together the whole collection once; the list echoes the selector in
`metadata.shardInfo` and still deserializes into the client's `V1PodList`; a watch with the
selector sends only its shard's events; a malformed selector is a 400 `BadRequest`.

Run by testing/server/tests/it/fake_api_server_python.rs with the path of a kubeconfig for the
server; the last line printed is "ok".
"""

import json
import sys

from kubernetes import client, config
from kubernetes.client.rest import ApiException

SHARDS = 4
FIELDS = {"uid": "object.metadata.uid", "namespace": "object.metadata.namespace"}
NAMESPACES = ["shop-prod", "payments-dev", "search-qa", "auth-eu", "billing-us", "mail-ap"]


def fnv1a64(text):
    h = 0xCBF29CE484222325
    for b in text.encode():
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def bounds(i):
    """Shard i of SHARDS: [start, end) over the 64-bit hash space."""
    step = (1 << 64) // SHARDS
    return i * step, (i + 1) * step


def selector(field, i):
    start, end = bounds(i)
    return f"shardRange({FIELDS[field]}, '0x{start:016x}', '0x{end:016x}')"


def value(pod, field):
    meta = pod["metadata"]
    return meta["uid"] if field == "uid" else meta["namespace"]


def call(api, path, query, response_type="object"):
    """GET `path` with `query` through the client's own request path (serialize, send,
    deserialize into `response_type`); a 4xx raises the client's ApiException."""
    c = api.api_client
    method, url, headers, body, post = c.param_serialize(
        "GET", path, query_params=query, header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"])
    response = c.call_api(method, url, header_params=headers, body=body, post_params=post)
    response.read()
    return c.response_deserialize(response, {"200": response_type, "400": "object"}).data


def watch_lines(api, path, query):
    """The lines of a watch that the server ends (timeoutSeconds in `query`)."""
    c = api.api_client
    method, url, headers, body, post = c.param_serialize(
        "GET", path, query_params=query, auth_settings=["BearerToken"])
    response = c.call_api(method, url, header_params=headers, body=body, post_params=post)
    data = response.read()
    assert response.status == 200, (response.status, data)
    return data.decode().splitlines()


def main(kubeconfig):
    config.load_kube_config(config_file=kubeconfig)
    core = client.CoreV1Api()
    for n, ns in enumerate(NAMESPACES):
        core.create_namespace({"metadata": {"name": ns}})
        for i in range(20):
            body = {"metadata": {"name": f"p{n}-{i}", "namespace": ns},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
            core.create_namespaced_pod(ns, body)
    everything = call(core, "/api/v1/pods", [])
    all_pods = {(p["metadata"]["namespace"], p["metadata"]["name"]): p
                for p in everything["items"]}
    assert len(all_pods) == 20 * len(NAMESPACES), len(all_pods)

    for field in FIELDS:
        union = set()
        for i in range(SHARDS):
            sel = selector(field, i)
            got = call(core, "/api/v1/pods", [("shardSelector", sel)])
            assert got["metadata"].get("shardInfo") == {"selector": sel}, got["metadata"]
            start, end = bounds(i)
            keys = set()
            for p in got["items"]:
                h = fnv1a64(value(p, field))
                assert start <= h < end, (field, i, p["metadata"], hex(h))
                keys.add((p["metadata"]["namespace"], p["metadata"]["name"]))
            want = {k for k, p in all_pods.items() if start <= fnv1a64(value(p, field)) < end}
            assert keys == want, (field, i, sorted(keys ^ want))
            assert not (keys & union), (field, i, "a pod in two shards")
            union |= keys
            # The typed path reads the same list (shardInfo is a field it does not know).
            typed = call(core, "/api/v1/pods", [("shardSelector", sel)], response_type="V1PodList")
            assert {(p.metadata.namespace, p.metadata.name) for p in typed.items} == keys
        assert union == set(all_pods), (field, "the shards' union is the collection")

    # A watch of one shard from the list's version: only the shard's new pods arrive.
    sel = selector("uid", 1)
    listed = call(core, "/api/v1/pods", [("shardSelector", sel)])
    rv = listed["metadata"]["resourceVersion"]
    created = {}
    for i in range(40):
        ns = NAMESPACES[i % len(NAMESPACES)]
        pod = core.create_namespaced_pod(ns, {
            "metadata": {"name": f"w{i}", "namespace": ns},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
        created[(ns, f"w{i}")] = fnv1a64(pod.metadata.uid)
    start, end = bounds(1)
    want = {k for k, h in created.items() if start <= h < end}
    lines = watch_lines(core, "/api/v1/pods",
                        [("watch", "true"), ("resourceVersion", rv), ("timeoutSeconds", "2"),
                         ("shardSelector", sel)])
    seen = set()
    for line in lines:
        event = json.loads(line)
        assert event["type"] == "ADDED", event["type"]
        meta = event["object"]["metadata"]
        assert start <= fnv1a64(meta["uid"]) < end, meta
        seen.add((meta["namespace"], meta["name"]))
    assert seen == want, sorted(seen ^ want)

    # A malformed selector: 400 BadRequest, from lists and watches alike.
    for query in ([("shardSelector", "shardRange(object.metadata.uid, '0x1', '0x2')")],
                  [("watch", "true"), ("shardSelector", "shardRange(object.metadata.name, "
                                                        "'0x0000000000000000', '0x8000000000000000')")]):
        try:
            call(core, "/api/v1/pods", query)
        except ApiException as e:
            status = json.loads(e.body)
            assert e.status == 400 and status["reason"] == "BadRequest", (e.status, e.body)
            assert status["message"].startswith("invalid shard selector: "), status["message"]
        else:
            raise AssertionError(f"{query}: no 400")
    print("ok")


if __name__ == "__main__":
    main(sys.argv[1])
