"""Kueue's out-of-cluster configuration, webhook rewriting, and kwok's stages and nodes, from the real modules."""

import base64
from pathlib import Path

import pytest
import yaml

from kueue_cohorts import toolchain
from kueue_cohorts.components.settings import NodePool
from kueue_cohorts.sandbox import kueue, kwok
from kueue_cohorts.toolchain import versions


@pytest.fixture(scope="module")
def kueue_dir() -> Path:
    e = versions.load().entry_for("kueue")
    return toolchain.module_dir(e.module, e.module_version)


@pytest.fixture(scope="module")
def kwok_dir() -> Path:
    e = versions.load().entry_for("kwok")
    return toolchain.module_dir(e.module, e.module_version)


def test_every_webhook_points_at_the_loopback_manager_with_our_ca(kueue_dir):
    hooks = kueue.webhook_configurations(kueue_dir, 19443, b"PEM")
    assert {h["kind"] for h in hooks} == {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
    assert {h["metadata"]["name"] for h in hooks} == {"kueue-mutating-webhook-configuration",
                                                      "kueue-validating-webhook-configuration"}
    for hook in (w for h in hooks for w in h["webhooks"]):
        assert "service" not in hook["clientConfig"]
        assert hook["clientConfig"]["url"].startswith("https://127.0.0.1:19443/")
        assert base64.b64decode(hook["clientConfig"]["caBundle"]) == b"PEM"
    by_name = {w["name"]: w for h in hooks for w in h["webhooks"]}
    assert by_name["mjob.kb.io"]["clientConfig"]["url"] == "https://127.0.0.1:19443/mutate-batch-v1-job"
    excluded = by_name["mjob.kb.io"]["namespaceSelector"]["matchExpressions"][0]
    assert excluded["operator"] == "NotIn" and kueue.NAMESPACE in excluded["values"]
    assert "namespaceSelector" not in by_name["vclusterqueue.kb.io"]  # Kueue's own objects: every namespace


def test_conversion_webhooks_for_the_crds_the_module_patches(kueue_dir):
    names = kueue.conversion_webhook_crds(kueue_dir)
    assert {"clusterqueues.kueue.x-k8s.io", "workloads.kueue.x-k8s.io", "localqueues.kueue.x-k8s.io"} <= names
    crd = yaml.safe_load((kueue_dir / "config/components/crd/bases/kueue.x-k8s.io_clusterqueues.yaml").read_text())
    patched = kueue.with_conversion_webhook(crd, 19443, b"PEM")
    assert patched["spec"]["conversion"]["webhook"]["clientConfig"]["url"] == "https://127.0.0.1:19443/convert"
    assert "conversion" not in crd["spec"]  # the module's file is not modified


def test_configuration_is_out_of_cluster_and_deliberate():
    cfg = kueue.configuration({"kueue-webhook": 1, "kueue-health": 2, "kueue-metrics": 3}, Path("/c"))
    assert cfg["leaderElection"] == {"leaderElect": False}
    assert cfg["internalCertManagement"] == {"enable": False}
    assert cfg["webhook"] == {"host": "127.0.0.1", "port": 1, "certDir": "/c"}
    assert cfg["waitForPodsReady"]["timeout"] == "5m" and cfg["waitForPodsReady"]["blockAdmission"] is False
    assert cfg["featureGates"] == {"VisibilityOnDemand": False}
    assert set(cfg["integrations"]["frameworks"]) == {
        "batch/job", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob", "pod", "deployment"}


def test_manager_runs_under_an_etc_overlay(tmp_path):
    metrics = tmp_path / "m"
    metrics.mkdir()
    (metrics / "tls.crt").write_text("crt")
    (metrics / "tls.key").write_text("key")
    upper, work = kueue.prepare_etc_overlay(tmp_path / "o", metrics)
    assert (upper / "kueue/metrics/certs/tls.crt").read_text() == "crt"
    argv = kueue.manager_args(Path("/bin/kueue"), Path("/c.yaml"), Path("/kc"), upper, work, as_root=False)
    assert argv[:4] == ["unshare", "--user", "--map-root-user", "--mount"]
    assert f"lowerdir=/etc,upperdir={upper},workdir={work}" in argv
    assert argv[-3:] == ["--config=/c.yaml", "--kubeconfig=/kc", "--zap-log-level=2"]


def test_stages_keep_job_pods_running(kwok_dir):
    stages = list(yaml.safe_load_all(kwok.stage_config(kwok_dir)))
    names = {s["metadata"]["name"] for s in stages}
    assert {"node-initialize", "pod-ready", "pod-delete", "pvc-provision"} <= names
    assert "pod-complete" not in names


def test_nodes_carry_the_pool_capacity_and_labels():
    pool = NodePool(name="gpu", count=2, capacity={"cpu": "8", "nvidia.com/gpu": "4"}, labels={"pool": "a"})
    nodes = kwok.node_manifests([pool])
    assert [n["metadata"]["name"] for n in nodes] == ["gpu-0", "gpu-1"]
    assert nodes[0]["status"]["allocatable"] == {"pods": "110", "cpu": "8", "nvidia.com/gpu": "4"}
    assert nodes[0]["metadata"]["labels"]["pool"] == "a"
    assert nodes[0]["metadata"]["annotations"] == {"kwok.x-k8s.io/node": "fake"}


@pytest.mark.parametrize("seconds", [0.3, 1])
def test_a_delayed_manager_starts_late_under_the_recorded_pid(tmp_path, seconds):
    import re
    import sys
    import time as _time

    from kueue_cohorts.sandbox import process

    argv = kueue.delayed([sys.executable, "-c", "import os; print('pid=%d' % os.getpid(), flush=True)"], seconds)
    t0 = _time.monotonic()
    rec = process.spawn("kueue", argv, tmp_path / "kueue.log")
    deadline = t0 + 30
    while not re.search(r"pid=\d+", (tmp_path / "kueue.log").read_text()) and _time.monotonic() < deadline:
        _time.sleep(0.02)
    elapsed = _time.monotonic() - t0
    text = (tmp_path / "kueue.log").read_text()
    process.stop(rec)
    assert re.findall(r"pid=(\d+)", text) == [str(rec.pid)]  # exec: the manager is the recorded process
    assert "kueue-delay over" in text
    assert elapsed >= seconds


def test_no_delay_keeps_the_argv():
    assert kueue.delayed(["kueue", "--config=x"], 0) == ["kueue", "--config=x"]


def test_a_pod_declaring_a_graceful_stop_ends_failed_with_its_code_before_it_is_removed(kwok_dir):
    """kwok plays the kubelet's graceful stop for our trainer pods (a Job with a podFailurePolicy counts or ignores a
    deleted pod only once it is Failed); other deleted pods are removed at once, as before."""
    stages = {s["metadata"]["name"]: s for s in yaml.safe_load_all(kwok.stage_config(kwok_dir))}
    declares = '.metadata.annotations["kueue-cohorts/preempted-exit-code"]'
    assert {"key": declares, "operator": "DoesNotExist"} in stages["pod-delete"]["spec"]["selector"]["matchExpressions"]
    stop = stages["pod-stop-gracefully"]
    assert {"key": declares, "operator": "Exists"} in stop["spec"]["selector"]["matchExpressions"]
    template = stop["spec"]["next"]["statusTemplate"]
    assert "phase: Failed" in template and "exitCode: {{ $code }}" in template
    assert stages["pod-delete-stopped"]["spec"]["next"] == {"delete": True}


def test_a_replacement_with_no_selector_to_copy_is_refused_not_written_as_null():
    """A kustomization whose replacements copy a namespaceSelector no patch sets (an upstream layout change) stops
    the sandbox: a null selector would put Kueue's job webhooks on every namespace, kube-system included."""
    kustomization = {"replacements": [{
        "source": {"kind": "MutatingWebhookConfiguration", "fieldPath": "webhooks.[name=vpod.kb.io].namespaceSelector"},
        "targets": [{"fieldPaths": ["webhooks.[name=vjob.kb.io].namespaceSelector"]}]}]}
    with pytest.raises(KeyError, match=r"no namespaceSelector of webhook vpod\.kb\.io to copy"):
        kueue._namespace_selector_patch(kustomization)


def test_a_replacement_copies_the_patched_selector():
    selector = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                      "values": ["kube-system"]}]}
    patch = yaml.safe_dump({"webhooks": [{"name": "vpod.kb.io", "namespaceSelector": selector}]})
    kustomization = {"patches": [{"patch": patch}], "replacements": [{
        "source": {"fieldPath": "webhooks.[name=vpod.kb.io].namespaceSelector"},
        "targets": [{"fieldPaths": ["webhooks.[name=vjob.kb.io].namespaceSelector"]}]}]}
    assert kueue._namespace_selector_patch(kustomization) == {"vpod.kb.io": selector, "vjob.kb.io": selector}


def test_every_stage_that_ends_a_deleted_pod_waits_for_its_grace_period(kwok_dir):
    """A deleted Pod keeps its node until its deletionTimestamp (deletion + grace, preStop included), or for the exit
    delay it declares with kwok's annotation: pod-delete and the trainer's graceful stop both wait; pod-delete-stopped
    (a Pod already terminal) does not."""
    stages = {s["metadata"]["name"]: s for s in yaml.safe_load_all(kwok.stage_config(kwok_dir))}
    expected = {"durationFrom": {"jq": {"expression": '.metadata.annotations["pod-delete.stage.kwok.x-k8s.io/delay"]'
                                                      ' // .metadata.deletionTimestamp'}}}
    assert stages["pod-delete"]["spec"]["delay"] == expected
    assert stages["pod-stop-gracefully"]["spec"]["delay"] == expected
    assert "delay" not in stages["pod-delete-stopped"]["spec"]
    assert "delay" not in stages["pod-ready"]["spec"] or stages["pod-ready"]["spec"]["delay"] != expected


def test_nodes_carry_the_pools_taints():
    pool = NodePool(name="gpu", count=1, capacity={"nvidia.com/gpu": "4"},
                    taints=[{"key": "kueue-cohorts/gpu", "value": "true", "effect": "NoSchedule"}])
    (node,) = kwok.node_manifests([pool])
    assert node["spec"] == {"taints": [{"key": "kueue-cohorts/gpu", "value": "true", "effect": "NoSchedule"}]}
