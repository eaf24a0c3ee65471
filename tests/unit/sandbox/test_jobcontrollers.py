"""The JobSet and Trainer managers out of cluster: webhook configurations from the real modules, configurations."""

import base64
from pathlib import Path

import pytest
import yaml

from kueue_cohorts import toolchain
from kueue_cohorts.sandbox import jobcontrollers, webhooks
from kueue_cohorts.toolchain import versions


def _module(binary: str) -> Path:
    e = versions.load().entry_for(binary)
    return toolchain.module_dir(e.module, e.module_version)


@pytest.fixture(scope="module")
def jobset_hooks() -> list[dict]:
    return jobcontrollers.jobset_webhooks(_module("jobset-controller-manager"), 29443, b"PEM")


@pytest.fixture(scope="module")
def trainer_hooks() -> list[dict]:
    return jobcontrollers.trainer_webhooks(_module("trainer-controller-manager"), 39443, b"PEM")


def _by_name(configs: list[dict]) -> dict[str, dict]:
    return {w["name"]: w for c in configs for w in c["webhooks"]}


def test_jobset_webhooks_are_named_as_installed_and_point_at_loopback(jobset_hooks):
    assert sorted(c["metadata"]["name"] for c in jobset_hooks) == [
        "jobset-mutating-webhook-configuration", "jobset-validating-webhook-configuration"]
    hooks = _by_name(jobset_hooks)
    assert set(hooks) == {"mjobset.kb.io", "mpod.kb.io", "vjobset.kb.io", "vpod.kb.io"}
    assert hooks["vjobset.kb.io"]["clientConfig"] == {
        "url": "https://127.0.0.1:29443/validate-jobset-x-k8s-io-v1alpha2-jobset",
        "caBundle": base64.b64encode(b"PEM").decode()}


def test_jobset_pod_webhooks_only_see_jobset_pods(jobset_hooks):
    """The module's JSON 6902 patches add an objectSelector: without it every Pod of the sandbox would need the
    JobSet manager to be up (failurePolicy Fail)."""
    hooks = _by_name(jobset_hooks)
    for name in ("mpod.kb.io", "vpod.kb.io"):
        assert hooks[name]["objectSelector"] == {
            "matchExpressions": [{"key": "jobset.sigs.k8s.io/jobset-name", "operator": "Exists"}]}
        assert hooks[name]["failurePolicy"] == "Fail"


def test_trainer_webhooks_carry_the_names_its_patches_set(trainer_hooks):
    assert sorted(c["metadata"]["name"] for c in trainer_hooks) == [
        "defaulter.trainer.kubeflow.org", "validator.trainer.kubeflow.org"]
    hooks = _by_name(trainer_hooks)
    assert set(hooks) == {"defaulter.trainjob.trainer.kubeflow.org", "validator.trainjob.trainer.kubeflow.org",
                          "validator.trainingruntime.trainer.kubeflow.org",
                          "validator.clustertrainingruntime.trainer.kubeflow.org"}
    for hook in hooks.values():
        assert hook["clientConfig"]["url"].startswith("https://127.0.0.1:39443/")
        assert "service" not in hook["clientConfig"]


def test_an_inline_strategic_merge_patch_is_refused(tmp_path):
    (tmp_path / "manifests.yaml").write_text(yaml.safe_dump(
        {"kind": "ValidatingWebhookConfiguration", "metadata": {"name": "v"}, "webhooks": []}))
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(
        {"resources": ["manifests.yaml"], "patches": [{"patch": "metadata: {name: x}"}]}))
    with pytest.raises(ValueError, match="JSON 6902"):
        webhooks.from_kustomization(tmp_path, 1, b"", "", {})


def test_configurations_are_out_of_cluster():
    ports = {"jobset-webhook": 1, "jobset-health": 2, "trainer-webhook": 3, "trainer-health": 4}
    js = jobcontrollers.jobset_configuration(ports, Path("/c"))
    assert js["internalCertManagement"] == {"enable": False} and js["leaderElection"] == {"leaderElect": False}
    assert js["webhook"] == {"host": "127.0.0.1", "port": 1, "certDir": "/c"}
    assert js["metrics"] == {"bindAddress": "0"} and js["health"] == {"healthProbeBindAddress": "127.0.0.1:2"}
    tr = jobcontrollers.trainer_configuration(ports)
    assert tr["certManagement"] == {"enable": False} and "leaderElection" not in tr
    assert tr["webhook"] == {"host": "127.0.0.1", "port": 3}
    assert tr["health"] == {"healthProbeBindAddress": "127.0.0.1:4"}


def test_trainer_tmpdir_holds_the_pair_where_controller_runtime_looks(tmp_path):
    certs = tmp_path / "pki"
    certs.mkdir()
    (certs / "tls.crt").write_text("crt")
    (certs / "tls.key").write_text("key")
    root = jobcontrollers.trainer_tmpdir(tmp_path / "tmp", certs)
    assert (root / "k8s-webhook-server" / "serving-certs" / "tls.key").read_text() == "key"
