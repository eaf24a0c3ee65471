"""Issue 29 item 3: the training runtime's defaults work on a standard NVIDIA device-plugin cluster.

`trainingRuntime` with only an image, on any stack whose training ClusterQueue covers `nvidia.com/gpu` (staging,
prod, mixed), passes the settings check and asks for cpu 2, memory 4Gi and 1 of each extended resource the queue
covers; no HAMi resource appears anywhere it was not written. Without an image, one problem at
`trainingRuntime.image` with its fix (no public image could be verified from here, so there is no default).
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kueue_cohorts.cli as cli
from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.components.model.render import render_stack
from kueue_cohorts.components.settings.errors import SettingsError
from kueue_cohorts.components.settings.runtime import BASE_LIMITS, IMAGE_FIX, is_extended
from tests.helpers import stack_raw

IMAGE = "registry.example/team/trainer:2026.11"
TRAINJOB = "trainer.kubeflow.org/trainjob"


def _with_runtime(name: str, runtime: dict) -> dict:
    """Stack `name` with `trainingRuntime: runtime`, its training checkpoint volume and the trainjob integration."""
    raw = stack_raw(name)
    raw["inferenceTraining"]["training"].setdefault("checkpoint", {"claimName": "ckpt", "size": "5Gi"})
    integrations = raw.setdefault("kueue", {}).setdefault(
        "integrations", ["batch/job", "jobset.x-k8s.io/jobset", TRAINJOB, "pod", "deployment"])
    if TRAINJOB not in integrations:
        integrations.append(TRAINJOB)
    raw["trainingRuntime"] = runtime
    return raw


def _container(settings) -> dict:
    (runtime, *_) = [r.manifest for r in render_stack(settings) if r.kind == "TrainingRuntime"]
    job = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]
    return job["template"]["spec"]["template"]["spec"]["containers"][0]


@pytest.mark.parametrize("stack", ["staging", "prod", "mixed"])
def test_an_image_alone_is_a_valid_runtime_with_one_gpu_on_a_device_plugin_stack(stack):
    settings = load_settings(_with_runtime(stack, {"image": IMAGE}))
    assert settings.training_runtime.limits == {**BASE_LIMITS, "nvidia.com/gpu": "1"}
    container = _container(settings)
    assert container["image"] == IMAGE
    assert container["resources"]["limits"] == {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"}
    assert "gpualloc" not in repr(container) and "gpucores" not in repr(container)


@pytest.mark.parametrize("stack", ["staging", "dev"])
def test_an_empty_runtime_fails_once_at_its_image_with_the_fix(stack):
    raw = _with_runtime(stack, {})
    with pytest.raises(SettingsError) as caught:
        load_settings(raw)
    assert [(p.key, p.value, p.fix) for p in caught.value.problems] == [
        ("kueue-cohorts:trainingRuntime.image", "<absent>", IMAGE_FIX)]


EXTENDED = st.sampled_from(["nvidia.com/gpu", "amd.com/gpu", "example.org/fpga", "nvidia.com/mig-1g.10gb",
                            "gpu.intel.com/i915"])


@settings(max_examples=8, deadline=None)
@given(resources=st.lists(EXTENDED, min_size=1, max_size=3, unique=True),
       amounts=st.lists(st.integers(1, 8), min_size=3, max_size=3))
def test_the_default_limits_follow_the_training_queues_covered_extended_resources(resources, amounts):
    raw = _with_runtime("staging", {"image": IMAGE})
    nominal = {"cpu": "8", "memory": "32Gi", **{r: str(n) for r, n in zip(resources, amounts, strict=False)}}
    raw["inferenceTraining"]["inference"]["nominalQuota"] = nominal
    raw["inferenceTraining"]["inference"].pop("services", None)
    raw.pop("sharedPool", None)
    for pool in raw["nodePools"]:
        pool["capacity"] = {"cpu": "64", "memory": "256Gi", **{r: "8" for r in resources}}
    settings = load_settings(raw)
    assert settings.training_runtime.limits == {**BASE_LIMITS, **{r: "1" for r in resources}}


@pytest.mark.parametrize("name, extended", [("nvidia.com/gpu", True), ("cpu", False), ("memory", False),
                                            ("hugepages-2Mi", False), ("kubernetes.io/batch", False),
                                            ("requests.nvidia.com/gpu", False), ("example.com/foo", True),
                                            ("node.kubernetes.io/x", False)])
def test_extended_resources_are_named_as_kubernetes_names_them(name, extended):
    assert is_extended(name) is extended


def test_validate_through_the_command_names_the_image_key(tmp_path, monkeypatch, capsys):
    """`kueue-cohorts validate` on a stack whose runtime is `{}`: exit 2, the image key and its fix."""
    from kueue_cohorts import validate as validation

    (tmp_path / "stacks").mkdir()
    text = (validation.ROOT / "stacks" / "Pulumi.staging.yaml").read_text()
    (tmp_path / "stacks" / "Pulumi.lab.yaml").write_text(text + "  kueue-cohorts:trainingRuntime: {}\n")
    monkeypatch.setattr(validation, "ROOT", tmp_path)
    assert cli.main(["validate", "--stack", "lab"]) == 2
    err = capsys.readouterr().err
    assert 'kueue-cohorts:trainingRuntime.image = "<absent>"' in err and IMAGE_FIX in err
    runtime = f"  kueue-cohorts:trainingRuntime: {{image: {IMAGE}}}\n"
    (tmp_path / "stacks" / "Pulumi.lab.yaml").write_text(text + runtime)
    assert cli.main(["validate", "--stack", "lab"]) == 0
