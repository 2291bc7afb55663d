//! The real kubectl on custom resources whose definition has a structural schema: `kubectl
//! explain` prints the schema's fields and descriptions, `kubectl get` the printer columns
//! (`-o wide` the wide ones), `kubectl apply --validate=warn` warns of an unknown field and
//! `kubectl apply` of a wrong type fails with kube-apiserver's 422.
//!
//! Like the other kubectl tests they need `/usr/bin/kubectl`, and pass saying they did not run
//! without it unless `KCACHE_REQUIRE_KUBECTL` is set.

use crate::fake_api_server_kubectl::{Env, Manifest, env, kubectl_available, output, run};

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
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        description: A widget of the shop.
        properties:
          spec:
            type: object
            description: What the widget should be.
            properties:
              size:
                type: integer
                description: How big the widget is, in inches.
              color:
                type: string
                default: red
    additionalPrinterColumns:
    - name: Size
      type: integer
      jsonPath: .spec.size
    - name: Color
      type: string
      jsonPath: .spec.color
      priority: 1
";

/// A widget manifest named `name` in namespace `shop` with spec `spec` (YAML, indented).
fn widget(env: &Env, name: &str, spec: &str) -> Manifest {
    let yaml = format!(
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {name}\n  namespace: \
         shop\nspec:\n{spec}"
    );
    Manifest::new(env, name, &yaml)
}

/// Runs kubectl; whether it succeeded, its stdout and its stderr.
async fn outcome(env: &Env, args: &[&str]) -> (bool, String, String) {
    let out = output(env, args).await;
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A server with the widget definition installed and established.
async fn installed() -> Env {
    let env = env(true).await;
    let crd = Manifest::new(&env, "crd", WIDGET_CRD);
    run(&env, &["apply", "-f", crd.path()]).await;
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
    env
}

#[tokio::test]
async fn kubectl_explains_and_prints_a_custom_resource_from_its_schema() {
    if !kubectl_available("kubectl_explains_and_prints_a_custom_resource_from_its_schema") {
        return;
    }
    let env = installed().await;
    let out = run(&env, &["explain", "widgets.spec"]).await;
    assert!(out.contains("What the widget should be."), "{out}");
    assert!(out.contains("size"), "{out}");
    assert!(out.contains("How big the widget is, in inches."), "{out}");
    let file = widget(&env, "gear", "  size: 3\n");
    let out = run(&env, &["apply", "-f", file.path()]).await;
    assert!(out.contains("widget.example.com/gear created"), "{out}");
    let out = run(&env, &["get", "widgets", "-n", "shop"]).await;
    let header: Vec<&str> = out.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "SIZE"], "{out}");
    let row: Vec<&str> = out.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row, ["gear", "3"], "{out}");
    let out = run(&env, &["get", "widgets", "-n", "shop", "-o", "wide"]).await;
    let row: Vec<&str> = out.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row, ["gear", "3", "red"], "the default color, wide: {out}");
}

#[tokio::test]
async fn kubectl_apply_warns_of_unknown_fields_and_fails_on_wrong_types() {
    if !kubectl_available("kubectl_apply_warns_of_unknown_fields_and_fails_on_wrong_types") {
        return;
    }
    let env = installed().await;
    let file = widget(&env, "odd", "  size: 3\n  foo: bar\n");
    let (ok, out, err) = outcome(&env, &["apply", "--validate=warn", "-f", file.path()]).await;
    assert!(ok, "{err}");
    assert!(out.contains("widget.example.com/odd created"), "{out}");
    assert!(err.contains("Warning: unknown field \"spec.foo\""), "{err}");
    let foo = run(
        &env,
        &[
            "get",
            "widget",
            "odd",
            "-n",
            "shop",
            "-o",
            "jsonpath={.spec}",
        ],
    )
    .await;
    assert!(!foo.contains("foo"), "pruned: {foo}");
    // kubectl's default validation is strict: the unknown field is refused.
    let (ok, _, err) = outcome(&env, &["apply", "-f", file.path()]).await;
    assert!(!ok);
    assert!(
        err.contains("strict decoding error: unknown field \"spec.foo\""),
        "{err}"
    );
    let file = widget(&env, "bad", "  size: big\n");
    let (ok, _, err) = outcome(&env, &["apply", "-f", file.path()]).await;
    assert!(!ok);
    // kubectl prints a 422 from its details: the kind, the name and each cause.
    assert!(
        err.contains(
            "The Widget \"bad\" is invalid: spec.size: Invalid value: \"string\": spec.size in \
             body must be of type integer: \"string\""
        ),
        "{err}"
    );
}
