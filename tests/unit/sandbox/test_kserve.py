"""KServe's manager out of cluster (sandbox/kserve.py): its ConfigMap, webhooks and runtimes from the real module."""

import base64
import json
from pathlib import Path

import pytest

from kueue_cohorts import toolchain
from kueue_cohorts.sandbox import kserve
from kueue_cohorts.toolchain import versions


def _module() -> Path:
    e = versions.load().entry_for("kserve-manager")
    return toolchain.module_dir(e.module, e.module_version)


def test_the_manager_is_built_from_the_module_and_version_whose_crds_the_sandbox_installs():
    pins = versions.load()
    entry = pins.entry_for("kserve-manager")
    for crds in ("kserve", "kserve-controller"):
        assert (pins.crds[crds].module, pins.crds[crds].version) == (entry.module, entry.module_version)
    assert entry.packages == ("github.com/kserve/kserve/cmd/manager",)


def test_the_config_map_is_upstreams_in_raw_deployment_mode():
    cm = kserve.config_map(_module())
    assert cm["metadata"] == {"name": "inferenceservice-config", "namespace": "kserve"}
    assert json.loads(cm["data"]["deploy"]) == {"defaultDeploymentMode": "RawDeployment"}
    # the keys the manager parses at start (main.go: NewIngressConfig requires ingressGateway) are upstream's
    ingress = json.loads(cm["data"]["ingress"])
    assert ingress["ingressGateway"] and ingress["enableGatewayApi"] is False
    assert {"storageInitializer", "inferenceService", "security", "localModel"} <= set(cm["data"])


def test_the_config_map_refuses_an_upstream_file_without_the_deploy_key(tmp_path):
    (tmp_path / "config" / "configmap").mkdir(parents=True)
    (tmp_path / kserve.CONFIG_MAP_FILE).write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: inferenceservice-config}\ndata: {ingress: '{}'}\n")
    with pytest.raises(KeyError, match="deploy"):
        kserve.config_map(tmp_path)


def test_every_webhook_points_at_loopback_and_the_inference_service_ones_are_there():
    configs = kserve.webhook_configurations(_module(), 19443, b"PEM")
    hooks = {w["name"]: w for c in configs for w in c["webhooks"]}
    assert {"inferenceservice.kserve-webhook-server.defaulter", "inferenceservice.kserve-webhook-server.validator",
            "inferenceservice.kserve-webhook-server.pod-mutator"} <= set(hooks)
    for hook in hooks.values():
        assert hook["clientConfig"]["url"].startswith("https://127.0.0.1:19443/")
        assert hook["clientConfig"]["caBundle"] == base64.b64encode(b"PEM").decode()
    assert hooks["inferenceservice.kserve-webhook-server.defaulter"]["clientConfig"]["url"] == \
        "https://127.0.0.1:19443/mutate-serving-kserve-io-v1beta1-inferenceservice"
    # the pod mutator only sees KServe's pods
    assert hooks["inferenceservice.kserve-webhook-server.pod-mutator"]["objectSelector"] == {
        "matchExpressions": [{"key": "serving.kserve.io/inferenceservice", "operator": "Exists"}]}


def test_the_runtimes_serve_the_model_formats_of_the_stacks_with_kustomizes_images():
    runtimes = {r["metadata"]["name"]: r for r in kserve.serving_runtimes(_module())}
    hf = runtimes["kserve-huggingfaceserver"]
    assert any(f["name"] == "huggingface" and f.get("autoSelect") for f in hf["spec"]["supportedModelFormats"])
    assert not any(c["image"].endswith(":replace") for r in runtimes.values() for c in r["spec"]["containers"])


def test_the_manager_flags_keep_it_on_loopback_without_leader_election():
    argv = kserve.manager_args(Path("/bin/kserve-manager"), Path("/k/kubeconfig"),
                               {"kserve-webhook": 19443, "kserve-health": 19444})
    assert argv == ["/bin/kserve-manager", "--kubeconfig=/k/kubeconfig", "--leader-elect=false", "--metrics-addr=0",
                    "--webhook-port=19443", "--health-probe-addr=127.0.0.1:19444", "--zap-log-level=info"]
    assert kserve.manager_env(Path("/t")) == {"POD_NAMESPACE": "kserve", "TMPDIR": "/t"}
