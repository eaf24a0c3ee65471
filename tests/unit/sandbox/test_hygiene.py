"""Sandbox hygiene (issue 14 item 7): secrets 0600 from their first byte, state directories 0700, the apiserver
without anonymous access, etcd behind client certificates, ``down`` by process group even when the leader is gone.

The creation mode of every file is observed at the moment it is opened (``os.fstat`` on the new descriptor, with
the umask at 0 so that only the code decides it), not after the fact.
"""

from __future__ import annotations

import io
import os
import stat
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.sandbox import certs, controlplane, files, kubeconfig, kueue, process
from kueue_cohorts.sandbox.cluster import Sandbox
from kueue_cohorts.sandbox.jobcontrollers import trainer_tmpdir
from kueue_cohorts.sandbox.paths import SandboxPaths
from kueue_cohorts.sandbox.process import ProcessRecord
from kueue_cohorts.sandbox.state import State, locked

PORTS = {"etcd-client": 2379, "etcd-peer": 2380, "kube-apiserver": 6443}


@pytest.fixture
def creation_modes(monkeypatch):
    """Record ``{path: mode}`` of every file *created* through ``os.open`` or ``io.open`` (which ``open`` and
    ``pathlib`` use), as it is right after the open, with umask 0."""
    seen: dict[Path, int] = {}
    real_os_open, real_io_open = os.open, io.open

    def os_open(path, flags, mode=0o777, *args, **kwargs):
        existed = os.path.exists(path)
        fd = real_os_open(path, flags, mode, *args, **kwargs)
        if not existed:
            seen[Path(path)] = stat.S_IMODE(os.fstat(fd).st_mode)
        return fd

    def io_open(file, mode="r", *args, **kwargs):
        existed = isinstance(file, (str, os.PathLike)) and os.path.exists(file)
        fh = real_io_open(file, mode, *args, **kwargs)
        if isinstance(file, (str, os.PathLike)) and not existed:
            seen[Path(file)] = stat.S_IMODE(os.fstat(fh.fileno()).st_mode)
        return fh

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(io, "open", io_open)
    old = os.umask(0)
    try:
        yield seen
    finally:
        os.umask(old)


def _final(seen: dict[Path, int], path: Path) -> int:
    """The creation mode of the file that ended up at ``path`` (written directly, or as a temp file renamed)."""
    candidates = [m for p, m in seen.items() if p == path or (p.parent == path.parent and p.name.startswith(
        f".{path.name}."))]
    assert candidates, f"{path} was not created through os.open/io.open: {sorted(map(str, seen))}"
    return candidates[-1]


def test_every_private_key_is_created_0600_and_certificates_0644(tmp_path, creation_modes):
    c = certs.ensure(tmp_path / "pki")
    assert set(c.private_files()) == {p for p in c.all_files() if b"PRIVATE KEY" in p.read_bytes()}
    for path in c.all_files():
        want = 0o600 if path in c.private_files() else 0o644
        assert _final(creation_modes, path) == want, path
        assert stat.S_IMODE(path.stat().st_mode) == want, path
    for d in (c.pki, c.etcd_ca_crt.parent, c.webhook_dir, c.metrics_dir):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d


def test_the_admin_kubeconfig_is_created_0600_even_over_an_older_world_readable_one(tmp_path, creation_modes):
    c = certs.ensure(tmp_path / "pki")
    path = tmp_path / "kubeconfig"
    path.write_text("old")
    path.chmod(0o644)
    assert kubeconfig.write(path, "https://127.0.0.1:6443", c)
    assert _final(creation_modes, path) == 0o600
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert b"client-key-data" in path.read_bytes()


def test_copies_of_keys_for_the_managers_are_0600_from_the_first_byte(tmp_path, creation_modes):
    c = certs.ensure(tmp_path / "pki")
    upper, _ = kueue.prepare_etc_overlay(tmp_path / "kueue-etc", c.metrics_dir)
    key = upper / "kueue" / "metrics" / "certs" / "tls.key"
    assert _final(creation_modes, key) == 0o600
    tmp = trainer_tmpdir(tmp_path / "trainer-tmp", c.webhook_dir)
    key = tmp / "k8s-webhook-server" / "serving-certs" / "tls.key"
    assert _final(creation_modes, key) == 0o600
    for d in (tmp_path / "kueue-etc", tmp, tmp / "k8s-webhook-server", key.parent):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d


@settings(max_examples=20, deadline=None)
@given(data=st.binary(max_size=4096), old_mode=st.sampled_from([0o644, 0o666, 0o600, 0o640, 0o444]))
def test_write_file_never_leaves_a_readable_copy(tmp_path_factory, data, old_mode):
    d = tmp_path_factory.mktemp("w")
    target = d / "secret.key"
    target.write_bytes(b"older")
    target.chmod(old_mode)
    files.write_file(target, data)
    assert target.read_bytes() == data
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in d.iterdir()) == ["secret.key"]  # no temporary file left


def test_state_directories_are_0700_also_when_an_older_sandbox_made_them_0755(tmp_path):
    root = tmp_path / "state" / "sandbox"
    root.mkdir(parents=True, mode=0o755)
    root.chmod(0o755)
    paths = SandboxPaths(root)
    with locked(paths.lock):
        pass
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    State().save(tmp_path / "fresh" / "state.json")
    assert stat.S_IMODE((tmp_path / "fresh").stat().st_mode) == 0o700
    rec = process.spawn(
        "t", [sys.executable, "-c", "pass"], tmp_path / "new-logs" / "t.log", cwd=tmp_path / "run" / "t"
    )
    process.stop(rec)
    for d in (tmp_path / "new-logs", tmp_path / "run", tmp_path / "run" / "t"):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d


def test_the_apiserver_refuses_anonymous_requests_and_reaches_etcd_with_client_certificates(tmp_path):
    c = certs.Certificates(tmp_path)
    argv = controlplane.apiserver_args(Path("/bin/kube-apiserver"), c, PORTS)
    assert "--anonymous-auth=false" in argv
    assert "--etcd-servers=https://127.0.0.1:2379" in argv
    assert {f"--etcd-cafile={c.etcd_ca_crt}", f"--etcd-certfile={c.etcd_client_crt}",
            f"--etcd-keyfile={c.etcd_client_key}"} <= set(argv)


def test_etcd_serves_tls_only_and_requires_client_certificates_of_its_own_ca(tmp_path):
    c = certs.Certificates(tmp_path)
    argv = controlplane.etcd_args(Path("/bin/etcd"), tmp_path / "data", PORTS, c)
    urls = [a.split("=", 1)[1] for a in argv if a.split("=", 1)[0].endswith("-urls") or a.startswith(
        "--initial-cluster=")]
    assert urls and all("https://" in u and "http://" not in u for u in urls), urls
    assert {"--client-cert-auth=true", "--peer-client-cert-auth=true", f"--trusted-ca-file={c.etcd_ca_crt}",
            f"--peer-trusted-ca-file={c.etcd_ca_crt}", f"--cert-file={c.etcd_server_crt}"} <= set(argv)
    assert c.etcd_ca_crt != c.ca_crt


def test_etcd_has_a_ca_of_its_own_so_cluster_certificates_do_not_open_it(tmp_path):
    from cryptography import x509

    c = certs.ensure(tmp_path)
    etcd_ca = x509.load_pem_x509_certificate(c.etcd_ca_crt.read_bytes())
    admin = x509.load_pem_x509_certificate(c.admin_crt.read_bytes())
    client = x509.load_pem_x509_certificate(c.etcd_client_crt.read_bytes())
    assert client.issuer == etcd_ca.subject
    assert admin.issuer != etcd_ca.subject


def _wait_for_pid_line(log: Path, timeout: float = 10) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = log.read_text().strip().splitlines() if log.exists() else []
        if lines and lines[-1].isdigit():
            return int(lines[-1])
        time.sleep(0.05)
    raise AssertionError(f"no pid in {log}")


@pytest.mark.parametrize("leader_exit", ["exit", "SIGKILL"])
def test_down_stops_a_group_whose_leader_died_while_a_member_lives(tmp_path, leader_exit):
    # The leader starts a child in its own process group, prints its pid and then dies; the child lives on.
    script = (
        "import os, signal, subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
        "print(child.pid, flush=True)\n"
        + ("sys.exit(0)\n" if leader_exit == "exit" else "os.kill(os.getpid(), signal.SIGKILL)\n")
    )
    paths = SandboxPaths(tmp_path / "sbx")
    rec = process.spawn("kwok", [sys.executable, "-c", script], paths.log("kwok"))
    child = _wait_for_pid_line(paths.log("kwok"))
    deadline = time.monotonic() + 10
    while process.alive(rec) and time.monotonic() < deadline:
        process._reap(rec.pid)
        time.sleep(0.05)
    assert not process.alive(rec) and process.start_ticks(child) is not None
    State(processes={"kwok": rec}).save(paths.state_file)

    stopped = Sandbox(paths).down()

    assert stopped == ["kwok"]
    assert process.start_ticks(child) is None
    assert State.load(paths.state_file).processes == {}


def test_down_leaves_a_recycled_pid_alone(tmp_path):
    paths = SandboxPaths(tmp_path / "sbx")
    other = process.spawn("other", [sys.executable, "-c", "import time; time.sleep(60)"], tmp_path / "o.log")
    impostor = ProcessRecord("kwok", other.pid, other.start_ticks + 1, ("kwok",), str(paths.log("kwok")))
    State(processes={"kwok": impostor}).save(paths.state_file)
    assert Sandbox(paths).down() == []
    assert process.alive(other)
    process.stop(other)
