//! kcache's full-stack tests: informers over client-http against the fake API server (the
//! chaos suite, hostile servers, informers from a kubeconfig, informers on threads of their
//! own). The suite is in `tests/`; this library is empty, since a package needs a target. The
//! main job is `kcache-testing-job` (`testing/job/`).
