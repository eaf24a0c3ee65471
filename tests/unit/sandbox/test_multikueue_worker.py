"""The worker sandboxes of `python -m kueue_cohorts.sandbox up --workers N` without starting one: their names, paths,
components
and nodes, and the kubeconfig the manager's Kueue uses there (a client certificate whose user name is the worker
ServiceAccount's, which Kueue's own kubeconfig checks accept)."""
from __future__ import annotations

import base64

import yaml
from cryptography import x509
from cryptography.x509.oid import NameOID

from kueue_cohorts.components.checks.multikueue_rules import kubeconfig_problems
from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.components.settings import parse_settings
from kueue_cohorts.sandbox import certs, cli, kubeconfig
from kueue_cohorts.sandbox.cluster import COMPONENTS, WORKER_COMPONENTS, Sandbox
from kueue_cohorts.sandbox.endpoints import worker_kubeconfigs
from kueue_cohorts.sandbox.paths import STATE_DIR_ENV, SandboxPaths
from kueue_cohorts.sandbox.state import State
from tests.helpers import stack_raw


def _stack_file(tmp_path, multi):
    raw = stack_raw("dev")
    if multi is not None:
        raw["multiKueue"] = {"managerTrainer": "CRDsOnly", **multi}
    path = tmp_path / "Pulumi.mk.yaml"
    path.write_text(yaml.safe_dump({"config": {f"kueue-cohorts:{k}": v for k, v in raw.items()}}))
    return path, raw


def test_worker_names_come_from_the_stack_then_are_numbered(tmp_path):
    path, _ = _stack_file(tmp_path, {"workers": [{"name": "eu"}, {"name": "us"}],
                                     "dispatch": [{"clusterQueue": "c12-training-cq", "workers": ["eu"]}]})
    assert cli.worker_names(path, 1) == ["eu"]
    assert cli.worker_names(path, 3) == ["eu", "us", "worker-3"]
    bare, _ = _stack_file(tmp_path, None)
    assert cli.worker_names(bare, 2) == ["worker-1", "worker-2"]
    assert cli.worker_names(bare, 0) == []


def test_a_worker_sandbox_lives_under_workers_and_runs_no_kserve(tmp_path):
    root = SandboxPaths(tmp_path / "sbx")
    worker = Sandbox(root.worker("eu"), worker="eu")
    assert worker.paths.root == tmp_path / "sbx" / "workers" / "eu"
    assert "kserve-manager" not in worker.components and set(WORKER_COMPONENTS) < set(COMPONENTS)
    assert set(worker.health()) == set(WORKER_COMPONENTS)  # a worker is healthy without KServe


def test_a_worker_takes_its_own_nodes(tmp_path):
    small = [{"name": "small", "capacity": {"cpu": "2"}}]
    path, raw = _stack_file(tmp_path, {"workers": [{"name": "eu", "nodePools": small}, {"name": "us"}],
                                       "dispatch": [{"clusterQueue": "c12-training-cq", "workers": ["eu"]}]})
    settings = parse_settings(raw)  # shape only: the worker's small pool fails the capacity check
    eu = Sandbox(SandboxPaths(tmp_path).worker("eu"), worker="eu")
    us = Sandbox(SandboxPaths(tmp_path).worker("us"), worker="us")
    assert [p.name for p in eu._node_pools(settings)] == ["small"]
    assert [p.name for p in us._node_pools(settings)] == [p.name for p in settings.node_pools]
    assert [p.name for p in Sandbox(SandboxPaths(tmp_path))._node_pools(settings)] == ["gpu"]


def test_the_worker_kubeconfig_is_the_service_accounts_and_kueue_accepts_it(tmp_path, monkeypatch):
    path, raw = _stack_file(tmp_path, {"workers": [{"name": "eu", "serviceAccount": "mk"}],
                                       "dispatch": [{"clusterQueue": "c12-training-cq", "workers": ["eu"]}]})
    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path / "sbx"))
    paths = SandboxPaths.default().worker("eu")
    certs.ensure(paths.pki)
    worker = Sandbox(paths, worker="eu")
    worker._write_worker_identity(load_settings(raw), State(ports={"kube-apiserver": 40123}))
    text = paths.multikueue_kubeconfig.read_text()
    assert kubeconfig_problems(text) == []
    config = yaml.safe_load(text)
    assert config["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:40123"
    cert = x509.load_pem_x509_certificate(base64.b64decode(config["users"][0]["user"]["client-certificate-data"]))
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "system:serviceaccount:kueue-system:mk"
    assert not cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)  # no group: only what RBAC grants it
    assert paths.multikueue_kubeconfig.stat().st_mode & 0o077 == 0
    # the same identity on the next up: the Secret the stack writes does not change
    worker._write_worker_identity(load_settings(raw), State(ports={"kube-apiserver": 40123}))
    assert paths.multikueue_kubeconfig.read_text() == text
    kubeconfig.write(paths.kubeconfig, "https://127.0.0.1:40123", certs.Certificates(paths.pki))
    assert worker_kubeconfigs("eu") == (paths.kubeconfig, paths.multikueue_kubeconfig)


def test_a_worker_that_never_ran_has_no_kubeconfigs(tmp_path, monkeypatch):
    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path / "sbx"))
    try:
        worker_kubeconfigs("eu")
    except FileNotFoundError as err:
        assert "eu" in str(err)
    else:
        raise AssertionError("a missing worker sandbox must raise FileNotFoundError")


def test_status_reports_a_stopped_worker_without_failing(tmp_path, monkeypatch, capsys):
    """A worker sandbox stopped by `down` (its state dir kept, no process recorded) is listed as stopped and does
    not turn the status of the sandbox unhealthy; one with a recorded process is judged with the sandbox."""
    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path / "sbx"))
    root = SandboxPaths.default()
    root.worker("eu").root.mkdir(parents=True)
    monkeypatch.setattr(cli, "render", lambda box, cohorts_view=None: (f"view of {box.paths.root.name}", True))
    assert cli.main(["status"]) == 0
    assert "== worker eu == stopped" in capsys.readouterr().out
