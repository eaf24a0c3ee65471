"""Prometheus in the sandbox (``python -m kueue_cohorts.sandbox up --with-prometheus``, issue 31 item 5): the pinned
Prometheus
(toolchain/versions.toml [binaries.prometheus]) on loopback, its TSDB under the sandbox's state directory, scraping
Kueue's metrics endpoint and the API server, and evaluating the stack's alerts (components/model/alerts.py).

Kueue v0.19.2 serves its metrics over HTTPS behind controller-runtime's authentication and authorization filter
(cmd/kueue/main.go: ``SecureServing: true``, ``filters.WithAuthenticationAndAuthorization``): a request needs a bearer
token the API server accepts (TokenReview) for a user allowed ``get`` on the non-resource URL ``/metrics``
(SubjectAccessReview), as kube-prometheus' Prometheus has. The sandbox gives Prometheus the same: the ServiceAccount
``kube-system/sandbox-prometheus``, a ClusterRole allowing ``get /metrics`` bound to it, and a token from the
TokenRequest API (written 0600 in the state directory, renewed at every ``up``). Kueue's serving certificate is signed
by the sandbox CA for 127.0.0.1, so the scrape verifies it. The API server (for its admission-webhook metrics) is
scraped with the admin's client certificate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Optional

from kubernetes import client as k8s

from kueue_cohorts.sandbox import files, process
from kueue_cohorts.sandbox.apply import request_json
from kueue_cohorts.sandbox.certs import Certificates
from kueue_cohorts.sandbox.paths import SandboxPaths
from kueue_cohorts.sandbox.ports import LOOPBACK
from kueue_cohorts.sandbox.state import State

NAME = "prometheus"
NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "sandbox-prometheus"
KUEUE_JOB = "kueue"
"""The scrape job of Kueue's manager: the `up{job=...}` of the manager-down alert (monitoring.kueueJob default)."""
APISERVER_JOB = "apiserver"
SCRAPE_INTERVAL = "5s"
"""Short, so that a test sees a change within seconds; the report's figures are exact to one interval."""
TOKEN_SECONDS = 30 * 24 * 3600
"""Lifetime asked of the TokenRequest (renewed at every `up`)."""


def data_dir(paths: SandboxPaths) -> Path:
    """The TSDB directory: ``<state dir>/prometheus/data`` (kept across ``down``/``up`` like etcd's data)."""
    return paths.root / NAME / "data"


def token_file(paths: SandboxPaths) -> Path:
    """The bearer token Prometheus presents to Kueue: ``<state dir>/prometheus/token`` (0600)."""
    return paths.root / NAME / "token"


def rules_path(paths: SandboxPaths) -> Path:
    """The stack's alert rules as the sandbox's Prometheus loads them: ``<state dir>/config/prometheus-rules.yaml``."""
    return paths.config / "prometheus-rules.yaml"


def configuration(ports: Mapping[str, int], certs: Certificates, token: Path, rules: Path,
                  scrape_interval: str = SCRAPE_INTERVAL) -> dict[str, Any]:
    """The prometheus.yml (Prometheus docs "Configuration"): global scrape and evaluation interval, the rules file,
    job `kueue` (https to ``kueue-metrics`` with the CA and the bearer token file) and job `apiserver` (https to
    ``kube-apiserver`` with the admin client pair)."""
    return {
        "global": {"scrape_interval": scrape_interval, "evaluation_interval": scrape_interval},
        "rule_files": [str(rules)],
        "scrape_configs": [
            {"job_name": KUEUE_JOB, "scheme": "https",
             "tls_config": {"ca_file": str(certs.ca_crt)},
             "authorization": {"type": "Bearer", "credentials_file": str(token)},
             "static_configs": [{"targets": [f"{LOOPBACK}:{ports['kueue-metrics']}"]}]},
            {"job_name": APISERVER_JOB, "scheme": "https",
             "tls_config": {"ca_file": str(certs.ca_crt), "cert_file": str(certs.admin_crt),
                            "key_file": str(certs.admin_key)},
             "static_configs": [{"targets": [f"{LOOPBACK}:{ports['kube-apiserver']}"]}]},
        ],
    }


def args(binary: Path, config: Path, data: Path, port: int) -> list[str]:
    """Prometheus' argv: the config file, the TSDB path, listening on ``127.0.0.1:<port>`` only."""
    return [str(binary), f"--config.file={config}", f"--storage.tsdb.path={data}",
            f"--web.listen-address={LOOPBACK}:{port}", "--storage.tsdb.retention.time=15d", "--log.level=warn"]


def access_objects() -> list[tuple[str, dict[str, Any]]]:
    """(collection path, object) of the ServiceAccount, the ClusterRole (`get` on `/metrics`) and its binding."""
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": SERVICE_ACCOUNT},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": SERVICE_ACCOUNT},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": SERVICE_ACCOUNT},
               "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}]}
    account = {"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": SERVICE_ACCOUNT, "namespace": NAMESPACE}}
    return [(f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts", account),
            ("/apis/rbac.authorization.k8s.io/v1/clusterroles", role),
            ("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", binding)]


def grant_and_token(api: k8s.ApiClient, token: Path, seconds: int = TOKEN_SECONDS) -> None:
    """Apply :func:`access_objects` (server-side apply) and write a fresh token of the ServiceAccount to ``token``
    (0600, its directory 0700) from the TokenRequest API. Raises kubernetes.client.ApiException."""
    query = [("fieldManager", "kueue-cohorts-sandbox"), ("force", "true")]
    for collection, obj in access_objects():
        request_json(api, "PATCH", f"{collection}/{obj['metadata']['name']}", body=obj, query=query,
                     content_type="application/apply-patch+yaml")
    answer = request_json(api, "POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{SERVICE_ACCOUNT}/token",
                          body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                                "spec": {"expirationSeconds": seconds}}, content_type="application/json")
    files.private_dir(token.parent)
    files.write_file(token, answer["status"]["token"].encode())


def url(paths: SandboxPaths) -> Optional[str]:
    """``http://127.0.0.1:<port>`` of the sandbox's Prometheus when its process runs, else None (reads the state
    file; never raises for a missing or unreadable one)."""
    try:
        st = State.load(paths.state_file)
    except (OSError, ValueError):
        return None
    record = st.processes.get(NAME)
    if record is None or NAME not in st.ports or not process.alive(record):
        return None
    return f"http://{LOOPBACK}:{st.ports[NAME]}"
