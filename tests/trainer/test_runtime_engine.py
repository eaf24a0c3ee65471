"""PreemptibleTrainingRuntime through the real engine: the pinned pulumi CLI and kubernetes provider, `pulumi up`
in render mode (manifests written to a directory, no cluster), with the repo's policy pack."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from kueue_cohorts import toolchain
from kueue_cohorts.components.model import runtime as runtime_manifests
from kueue_cohorts.components.settings.runtime import TrainingRuntimeSettings
from kueue_cohorts.deploy import engine
from tests.integration.project import Project, manifests

PROGRAM = '''
from types import SimpleNamespace

import pulumi
import pulumi_kubernetes as k8s

from kueue_cohorts.components.resources import training
from kueue_cohorts.components.resources.checkpoint import CheckpointVolume, CheckpointVolumeArgs
from kueue_cohorts.components.resources.manifest import ManifestResource
from kueue_cohorts.components.settings.runtime import TrainingRuntimeSettings
from kueue_cohorts.components.settings import CheckpointSettings

provider = k8s.Provider("k8s", render_yaml_to_directory={render!r})
opts = pulumi.ResourceOptions(provider=provider)
volume = CheckpointVolume("ckpt", CheckpointVolumeArgs("c12-training", CheckpointSettings(claim_name="c12-ckpt")), opts)
runtime = training.PreemptibleTrainingRuntime(
    "c12", training.PreemptibleTrainingRuntimeArgs(TrainingRuntimeSettings(image="registry.example/trainer:1"), volume),
    opts)
priority = ManifestResource("prio", {{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                                      "metadata": {{"name": "c12-training-prio"}}, "value": 10}}, opts)
training.train_job("c12-run", training.TrainJobArgs(
    "c12-run", runtime, SimpleNamespace(name="c12-training-lq", namespace="c12-training"), priority), opts)
pulumi.export("runtime", runtime.name)
pulumi.export("saveSteps", runtime.save_steps)
pulumi.export("gracePeriodSeconds", runtime.termination_grace_period_seconds)
'''


@pytest.fixture(scope="module")
def engine_binaries():
    """The pinned pulumi CLI and kubernetes provider (built if missing; a failure fails the test)."""
    return toolchain.ensure(["pulumi", "pulumi-resource-kubernetes"])


@pytest.mark.timeout(900)
def test_up_renders_the_runtime_its_configmap_and_a_trainjob(tmp_path: Path, engine_binaries):
    project = Project(tmp_path)
    render = tmp_path / "rendered"
    program = tmp_path / "program" / "__main__.py"
    program.parent.mkdir()
    program.write_text(textwrap.dedent(PROGRAM.format(render=str(render))))
    project.stack_file("trainer").write_text(yaml.safe_dump({"config": {}}))
    stack = engine.open_stack("trainer", work_dir=project.root, program=program, backend=project.backend)
    result = stack.up(**project.kwargs(stack))
    outputs = {key: value.value for key, value in result.outputs.items()}
    assert outputs == {"runtime": "c12-checkpoint-runtime", "saveSteps": 100, "gracePeriodSeconds": 60}

    objects = {(m["kind"], m["metadata"]["name"]): m for m in manifests(render)}
    runtime = objects[("TrainingRuntime", "c12-checkpoint-runtime")]
    expected = runtime_manifests.render_runtime(TrainingRuntimeSettings(image="registry.example/trainer:1"),
                                                "c12-training", "c12-ckpt")
    assert runtime["spec"] == expected["spec"]
    assert runtime["metadata"]["annotations"]["kueue-cohorts/checkpoint-save-seconds"] == "30"
    config_map = objects[("ConfigMap", "c12-checkpoint-runtime-trainer")]
    assert config_map["data"] == runtime_manifests.trainer_sources()
    job = objects[("TrainJob", "c12-run")]
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "c12-training-lq"
    assert job["spec"]["runtimeRef"]["name"] == "c12-checkpoint-runtime"
    assert objects[("PersistentVolumeClaim", "c12-ckpt")]["spec"]["accessModes"] == ["ReadWriteMany"]
