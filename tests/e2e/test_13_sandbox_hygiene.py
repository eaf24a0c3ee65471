"""Sandbox hygiene on the running sandbox (issue 14 item 7): its state directories are 0700 and every file holding
a private key (the admin kubeconfig included) 0600; the apiserver answers nobody without a client certificate,
also on its health endpoints, while the sandbox's own (authenticated) probes report it healthy; etcd speaks TLS
only and opens only to a client certificate of its own CA."""

from __future__ import annotations

import datetime
import os
import signal
import ssl
import stat
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from e2e_support import wait_for
from kubernetes import client as k8s

from kueue_cohorts.sandbox import controlplane, process
from kueue_cohorts.sandbox.certs import Certificates
from kueue_cohorts.sandbox.ports import LOOPBACK


def _get(url: str, ca, client=None) -> int:
    ctx = ssl.create_default_context(cafile=str(ca))
    if client:
        ctx.load_cert_chain(str(client[0]), str(client[1]))
    try:
        with urllib.request.urlopen(url, timeout=10, context=ctx) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_state_directories_are_0700_and_secrets_0600(sandbox):
    root = sandbox.paths.root
    dirs = [root, *(p for p in root.rglob("*") if p.is_dir() and not p.is_symlink())]
    # The overlay's work directory belongs to the kernel (it makes work/work mode 0 while the mount lives).
    wide = [str(d) for d in dirs if stat.S_IMODE(d.stat().st_mode) != 0o700
            and root / "kueue-etc" / "work" not in (d, *d.parents)]
    assert wide == [], wide
    secrets = [p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and p.stat().st_size < 1 << 20
               and (b"PRIVATE KEY" in p.read_bytes() or b"client-key-data" in p.read_bytes())]
    names = {p.name for p in secrets}
    assert {"kubeconfig", "ca.key", "admin.key", "apiserver-etcd-client.key", "tls.key"} <= names, names
    assert [str(p) for p in secrets if stat.S_IMODE(p.stat().st_mode) != 0o600] == []


@pytest.mark.parametrize("path", ["/readyz", "/healthz", "/livez", "/version", "/api"])
def test_the_apiserver_refuses_anonymous_requests_even_for_health(sandbox, path):
    c = Certificates(sandbox.paths.pki)
    url = f"https://{LOOPBACK}:{sandbox.state().ports['kube-apiserver']}{path}"
    assert _get(url, c.ca_crt) == 401
    assert _get(url, c.ca_crt, (c.admin_crt, c.admin_key)) == 200


def test_the_sandbox_probes_still_see_every_component_healthy(sandbox):
    assert {name: ok for name, (_, ok, _) in sandbox.health().items()} == {
        name: True for name in sandbox.health()}


def test_etcd_serves_only_clients_with_a_certificate_of_its_own_ca(sandbox):
    c = Certificates(sandbox.paths.pki)
    url = f"{controlplane.etcd_url(sandbox.state().ports)}/health"
    assert _get(url, c.etcd_ca_crt, (c.etcd_client_crt, c.etcd_client_key)) == 200
    for client in (None, (c.admin_crt, c.admin_key)):  # no certificate; a cluster-CA certificate
        with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionResetError)):
            _get(url, c.etcd_ca_crt, client)
    plain = url.replace("https://", "http://")
    with pytest.raises((urllib.error.URLError, ConnectionResetError, OSError)):
        urllib.request.urlopen(plain, timeout=10).read()


def test_a_manager_that_dies_is_started_again_as_a_deployment_would(sandbox):
    """The Kueue manager killed (SIGKILL, as an OOM kill would; or exiting on its own when its caches cannot sync,
    e.g. while its CRDs are reinstalled) comes back: its restart loop logs the exit code and starts it again, and
    the sandbox's probes see it healthy again (the webhooks answer)."""
    rec = sandbox.state().processes["kueue"]
    binary = next(arg for arg in rec.argv if arg.endswith("/kueue"))  # the manager's binary in its argv
    managers = [p for p in process._group_members(rec.pid)
                if p != rec.pid and binary.encode() in Path(f"/proc/{p}/cmdline").read_bytes()]
    assert len(managers) == 1, (binary, process._group_members(rec.pid))
    os.kill(managers[0], signal.SIGKILL)

    deadline = time.monotonic() + 120
    log = Path(rec.log)
    while time.monotonic() < deadline:
        back = [p for p in process._group_members(rec.pid)
                if p != rec.pid and binary.encode() in Path(f"/proc/{p}/cmdline").read_bytes()]
        if back and back != managers and sandbox.health()["kueue"][1]:
            break
        time.sleep(0.5)
    assert "exited with code 137: restarting in 1 s" in log.read_text()
    assert sandbox.health()["kueue"][:2] == (True, True), sandbox.health()["kueue"]
    assert process.alive(rec)  # the same component (its restart loop), not a new one


def test_a_deleted_pod_keeps_its_node_for_its_grace_period_as_under_a_kubelet(sandbox, cluster):
    """kwok lets a deleted Pod go as the kubelet does (issue 37): a Pod with terminationGracePeriodSeconds 20 stays
    bound and Running, its requests still counted on the node, until its deletionTimestamp (deletion + 20 s), and is
    removed after it. Before, kwok removed it at once."""
    name, ns, grace = "grace-20", "default", 20
    pod = k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(name=name, namespace=ns),
        spec=k8s.V1PodSpec(termination_grace_period_seconds=grace, containers=[k8s.V1Container(
            name="main", image="registry.invalid/e2e:never-pulled",
            resources=k8s.V1ResourceRequirements(requests={"cpu": "100m"}))]))
    cluster.core.create_namespaced_pod(ns, pod)
    wait_for(lambda: cluster.core.read_namespaced_pod(name, ns).status.phase == "Running", 60, f"{name} Running")
    cluster.core.delete_namespaced_pod(name, ns)
    deleting = cluster.core.read_namespaced_pod(name, ns)
    deadline = deleting.metadata.deletion_timestamp  # set by the API server: deletion time + grace
    assert deleting.metadata.deletion_grace_period_seconds == grace
    # Polled until 3 s before the deadline (the apiserver's own clock): the pod is still there, bound and Running.
    seen = []
    while datetime.datetime.now(datetime.UTC) < deadline - datetime.timedelta(seconds=3):
        now = cluster.core.read_namespaced_pod(name, ns)
        seen.append((now.spec.node_name is not None, now.status.phase))
        time.sleep(1)
    assert seen and set(seen) == {(True, "Running")}

    def gone() -> bool:
        try:
            cluster.core.read_namespaced_pod(name, ns)
        except k8s.ApiException as exc:
            return exc.status == 404
        return False

    wait_for(gone, grace + 30, f"{name} removed once its grace period is over")
