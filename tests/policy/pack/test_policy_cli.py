"""The policy pack through the real pulumi CLI (deploy.engine: Automation API, pinned CLI, provider plugin, the
pack started by the engine as an analyzer), on a temporary project copy with its own file backend.

1. Every stack in stacks/ previews with no policy event at all, with `--policy-pack kueue_cohorts/policy` and no config
   file
   (capacity derived from the stack's nodePools) and, for dev, with `--policy-pack-config policy/config/dev.json`.
2. Test programs, each with one violation, fail the preview and name the policy: an unsafe inference ClusterQueue
   made inside our InferenceTrainingCohort component; one loaded through `yaml/v2.ConfigGroup` from a YAML string
   (a remote component: the program uses a render-mode provider, the only way Construct works offline); one typed
   as kueue.x-k8s.io/v1beta1 with `cohort`; and one whose GPU quota is an Output unknown at preview. One more shows
   that, without a config file, the pack takes the capacity from the stack's nodePools.
The ConfigGroup also loads Kueue's ClusterQueue CRD: offline, provider 4.25.0 can only tell that ClusterQueue is
cluster-scoped from a CRD in the same group ("failed to determine if the following GVK is namespaced" otherwise).
Every program renders (render_yaml_to_directory), so no cluster is needed; a preview writes nothing anyway.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from pulumi import automation as auto

from kueue_cohorts.deploy import engine
from kueue_cohorts.policy.rules.cohort_nominal_within_capacity import COHORT_NOMINAL_WITHIN_CAPACITY
from kueue_cohorts.policy.rules.inference_borrowing_limit_zero import INFERENCE_BORROWING_LIMIT_ZERO
from kueue_cohorts.policy.rules.inference_peak_fits_nominal import INFERENCE_PEAK_FITS_NOMINAL
from kueue_cohorts.policy.rules.inference_reclaim_any import INFERENCE_RECLAIM_ANY
from kueue_cohorts.policy.rules.kueue_api_version import KUEUE_API_VERSION
from kueue_cohorts.policy.rules.workload_priority_class import WORKLOAD_PRIORITY_CLASS
from tests.integration.project import STACKS, Project
from tests.policy.harness import REPO

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

PACK = REPO / "kueue_cohorts" / "policy"


@pytest.fixture(scope="module")
def binaries():
    """The pinned CLI and provider plugin, built if missing (a build failure fails the test, never skips it)."""
    from kueue_cohorts import toolchain
    return toolchain.ensure(["pulumi", "pulumi-resource-kubernetes"])


class Run:
    """One preview: its policy events, output and whether the engine refused it."""

    def __init__(self) -> None:
        self.events: list = []
        self.output: list[str] = []
        self.error: str | None = None

    def on_event(self, event: auto.EngineEvent) -> None:
        if event.policy_event is not None:
            self.events.append(event.policy_event)

    def policies(self, level: str | None = None) -> set[str]:
        return {e.policy_name for e in self.events if level is None or e.enforcement_level == level}

    def text(self) -> str:
        return "\n".join(self.output) + (self.error or "")


def _preview(stack: auto.Stack, config_file: Path | None = None, pack: Path | None = None) -> Run:
    run = Run()
    kwargs = engine.run_kwargs(stack, color="never")
    kwargs["on_output"] = run.output.append
    assert kwargs.get("policy_packs") == [str(PACK)], "deploy.engine must pass the policy pack by default"
    if pack is not None:
        kwargs["policy_packs"] = [str(pack)]
    # Decide here whether a config file is passed, whatever deploy.engine adds, so that the no-file runs really
    # exercise the capacity derived from the stack's nodePools.
    kwargs.pop("policy_pack_configs", None)
    if config_file is not None:
        kwargs["policy_pack_configs"] = [str(config_file)]
    try:
        stack.preview(on_event=run.on_event, **kwargs)
    except auto.errors.CommandError as err:
        run.error = str(err)
    return run


def _offline_copy(tmp_path: Path, name: str) -> Project:
    """A project copy whose stack `name` renders to a directory and, where it installs Kueue, takes the chart
    from the pinned Kueue Go module instead of the OCI registry (no network here); the chart is still templated
    by the real provider, so its manager ConfigMap reaches the pack."""
    project = Project(tmp_path)
    project.render_to(name, tmp_path / "rendered")
    kueue = project.config(name).get("kueue")
    if kueue and kueue.get("install"):
        project.set_config(name, "kueue", {**kueue, "chartSource": "GoModule"})
    return project


#: Advisory findings a committed stack is known to have: prod's llama-70b peaks at maxReplicas 4 x 300Gi of memory
#: against a nominalQuota of 900Gi (its 4th replica stays pending, a warning by design).
KNOWN_ADVISORY = {"prod": {INFERENCE_PEAK_FITS_NOMINAL.name}}


@pytest.mark.parametrize("name", STACKS)
def test_every_stack_previews_clean_under_the_pack(binaries, tmp_path, name):
    project = _offline_copy(tmp_path, name)
    run = _preview(project.open(name))
    assert run.error is None, run.text()
    assert run.policies() == run.policies("advisory") == KNOWN_ADVISORY.get(name, set()), run.text()


@pytest.mark.parametrize("name", STACKS)
def test_every_stack_previews_clean_with_its_policy_config_file(binaries, tmp_path, name):
    project = _offline_copy(tmp_path, name)
    run = _preview(project.open(name), REPO / "kueue_cohorts" / "policy" / "config" / f"{name}.json")
    assert run.error is None, run.text()
    assert run.policies() == run.policies("advisory") == KNOWN_ADVISORY.get(name, set()), run.text()


PRELUDE = """\
import pulumi
import pulumi_kubernetes as k8s

provider = k8s.Provider("render", render_yaml_to_directory={render!r})
opts = pulumi.ResourceOptions(provider=provider)
"""

COMPONENT_PROGRAM = """\
import copy
from kueue_cohorts.components.resources.layouts import InferenceTrainingCohort, InferenceTrainingCohortArgs
from kueue_cohorts.components.model.render import render
from kueue_cohorts.components.resources.manifest import ManifestResource
from kueue_cohorts.components.checks.validation import load_stack_file

settings = load_stack_file({stack_file!r})
rendered = render(settings, "policy/cli")


def drop_inference_borrowing_limit(args):
    # A transformation a user might add: it strips borrowingLimit from our component's inference ClusterQueue.
    if args.type_.endswith(":ClusterQueue") and args.props["metadata"]["name"] == "c12-inference-cq":
        props = copy.deepcopy(dict(args.props))
        for entry in props["spec"]["resourceGroups"][0]["flavors"][0]["resources"]:
            entry.pop("borrowingLimit", None)
        return pulumi.ResourceTransformationResult(props, args.opts)
    return None


flavor = ManifestResource.of("resource-flavor", rendered.flavors[0], opts)
InferenceTrainingCohort(
    "c12-shared",
    InferenceTrainingCohortArgs(stack=settings, flavor=flavor, namespace_owner="policy/cli"),
    pulumi.ResourceOptions(provider=provider, transformations=[drop_inference_borrowing_limit]),
)
"""

CONFIG_GROUP_PROGRAM = '''\
k8s.yaml.v2.ConfigGroup("hand-written", files={crd_files!r}, yaml="""
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: yaml-inference-cq
  labels:
    kueue-cohorts/role: inference
spec:
  cohortName: c12-shared
  namespaceSelector:
    matchLabels:
      kubernetes.io/metadata.name: c12-inference
  resourceGroups:
    - coveredResources: [nvidia.com/gpucores]
      flavors:
        - name: c12-default
          resources:
            - name: nvidia.com/gpucores
              nominalQuota: "20"
  preemption:
    reclaimWithinCohort: Any
""", opts=opts)
'''

V1BETA1_PROGRAM = """\
k8s.apiextensions.CustomResource(
    "legacy-queue",
    api_version="kueue.x-k8s.io/v1beta1",
    kind="ClusterQueue",
    metadata={{"name": "legacy-cq", "labels": {{"kueue-cohorts/role": "training"}}}},
    spec={{
        "cohort": "c12-shared",
        "namespaceSelector": {{"matchLabels": {{"kubernetes.io/metadata.name": "c12-training"}}}},
        "resourceGroups": [{{"coveredResources": ["cpu", "memory"], "flavors": [
            {{"name": "c12-default", "resources": [{{"name": "cpu", "nominalQuota": "0"}},
                                                  {{"name": "memory", "nominalQuota": "0"}}]}}]}}],
    }},
    opts=opts,
)
"""

UNKNOWN_QUOTA_PROGRAM = """\
# The GPU quota comes from another resource's output: unknown until that resource exists.
source = k8s.core.v1.ConfigMap("quota-source", data={{"gpucores": "20"}}, opts=opts)
gpucores = source.id.apply(lambda _: "20")
k8s.apiextensions.CustomResource(
    "computed-queue",
    api_version="kueue.x-k8s.io/v1beta2",
    kind="ClusterQueue",
    metadata={{"name": "computed-cq", "labels": {{"kueue-cohorts/role": "inference"}}}},
    spec={{
        "cohortName": "c12-shared",
        "namespaceSelector": {{"matchLabels": {{"kubernetes.io/metadata.name": "c12-inference"}}}},
        "resourceGroups": [{{"coveredResources": ["nvidia.com/gpucores"], "flavors": [
            {{"name": "c12-default", "resources": [
                {{"name": "nvidia.com/gpucores", "nominalQuota": gpucores, "borrowingLimit": "0"}}]}}]}}],
        "preemption": {{"reclaimWithinCohort": "Any"}},
    }},
    opts=opts,
)
"""


OVER_CAPACITY_PROGRAM = """\
k8s.apiextensions.CustomResource(
    "flavor", api_version="kueue.x-k8s.io/v1beta2", kind="ResourceFlavor", metadata={{"name": "c12-default"}},
    spec={{}}, opts=opts,
)
k8s.apiextensions.CustomResource(
    "greedy-queue",
    api_version="kueue.x-k8s.io/v1beta2",
    kind="ClusterQueue",
    metadata={{"name": "greedy-cq", "labels": {{"kueue-cohorts/role": "training"}}}},
    spec={{
        "cohortName": "c12-shared",
        "namespaceSelector": {{"matchLabels": {{"kubernetes.io/metadata.name": "c12-training"}}}},
        "resourceGroups": [{{"coveredResources": ["cpu", "memory"], "flavors": [
            {{"name": "c12-default", "resources": [{{"name": "cpu", "nominalQuota": "9"}},
                                                  {{"name": "memory", "nominalQuota": "0"}}]}}]}}],
    }},
    opts=opts,
)
"""


def _program_preview(tmp_path: Path, body: str, pack: Path | None = None, config_file: Path | None = None,
                     **fmt) -> Run:
    """Preview `body` (after the render-provider prelude) as the dev stack's program of a project copy; the pack
    (`pack`, default the repo's policy/) derives the dev capacity from the stack's nodePools."""
    project = Project(tmp_path)
    program = tmp_path / "program" / "__main__.py"
    program.parent.mkdir()
    program.write_text(PRELUDE.format(render=str(tmp_path / "rendered")) + textwrap.dedent(body).format(**fmt))
    stack = engine.open_stack("dev", work_dir=project.root, program=program, backend=project.backend)
    return _preview(stack, config_file, pack=pack)


def test_unsafe_inference_queue_inside_our_component_fails(binaries, tmp_path):
    run = _program_preview(tmp_path, COMPONENT_PROGRAM, stack_file=str(REPO / "stacks" / "Pulumi.dev.yaml"))
    assert run.error is not None, run.text()
    assert run.policies("mandatory") == {INFERENCE_BORROWING_LIMIT_ZERO.name}, run.text()
    assert "The ClusterQueue 'c12-inference-cq' is an inference queue and must set borrowingLimit to 0" in run.text()


def test_inference_queue_loaded_from_yaml_through_config_group_fails(binaries, tmp_path):
    from kueue_cohorts import toolchain
    crd = [str(p) for p in toolchain.crd_files("kueue") if p.name == "kueue.x-k8s.io_clusterqueues.yaml"]
    run = _program_preview(tmp_path, CONFIG_GROUP_PROGRAM, crd_files=crd)
    assert run.error is not None, run.text()
    assert INFERENCE_BORROWING_LIMIT_ZERO.name in run.policies("mandatory"), run.text()
    assert "The ClusterQueue 'yaml-inference-cq' is an inference queue and must set borrowingLimit to 0" in run.text()


def test_v1beta1_queue_with_cohort_fails_with_the_migration(binaries, tmp_path):
    run = _program_preview(tmp_path, V1BETA1_PROGRAM)
    assert run.error is not None, run.text()
    assert run.policies("mandatory") == {KUEUE_API_VERSION.name}, run.text()
    assert "rename spec.cohort to spec.cohortName" in run.text()


def test_capacity_comes_from_the_stack_config_without_a_config_file(binaries, tmp_path):
    """The analyzer reads the dev stack's nodePools (cpu 8) from the engine's PULUMI_CONFIG."""
    run = _program_preview(tmp_path, OVER_CAPACITY_PROGRAM)
    assert run.error is not None, run.text()
    assert run.policies("mandatory") == {COHORT_NOMINAL_WITHIN_CAPACITY.name}, run.text()
    assert ("the nominalQuota of ResourceFlavor 'c12-default' over every ClusterQueue and Cohort of the stack sums "
            "to 9 of 'cpu' (ClusterQueue 'greedy-cq' 9), above the 8 of the nodes it selects (node pool 'gpu'; "
            "nodeLabels none: every node)") in run.text()


def test_gpu_quota_unknown_at_preview_fails_closed(binaries, tmp_path):
    run = _program_preview(tmp_path, UNKNOWN_QUOTA_PROGRAM)
    assert run.error is not None, run.text()
    assert COHORT_NOMINAL_WITHIN_CAPACITY.name in run.policies("mandatory"), run.text()
    assert ("The ClusterQueue 'computed-cq' has spec.resourceGroups[0].flavors[0].resources[0].nominalQuota unknown "
            "at preview") in run.text()
    assert "can't run policy" not in run.text()


def test_a_copy_of_policy_with_its_own_venv_refuses_an_unsafe_queue(binaries, tmp_path):
    """Issue 19: the pack runs and installs from policy/ alone. A copy of policy/ (nothing else) gets a fresh
    virtualenv from its own requirements.txt (from PyPI), and the real CLI runs it as the policy pack."""
    import shutil
    import subprocess
    import sys

    pack = tmp_path / "pack"
    shutil.copytree(PACK, pack, ignore=shutil.ignore_patterns("venv", "__pycache__"))
    subprocess.run([sys.executable, "-m", "venv", str(pack / "venv")], check=True)
    # PyPI through the machine's registry proxy: pip retries a dropped connection (a CI run once failed here
    # without saying why), and its own words are kept for the failure message.
    pip = subprocess.run([str(pack / "venv" / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check",
                          "--retries", "10", "--timeout", "60", "-r", str(pack / "requirements.txt")],
                         capture_output=True, text=True, timeout=900)
    assert pip.returncode == 0, f"pip install -r policy/requirements.txt failed:\n{pip.stdout}\n{pip.stderr}"
    run = _program_preview(tmp_path / "run", V1BETA1_PROGRAM, pack=pack)
    assert run.error is not None and KUEUE_API_VERSION.name in run.policies("mandatory"), run.text()


# --- issue 13: inputs that once got through the pack -----------------------------------------------------------------

UNLABELLED_SERVING_PROGRAM = '''\
k8s.yaml.v2.ConfigGroup("hand-written", files={crd_files!r}, yaml="""
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: serving-cq
spec:
  cohortName: c12-shared
  namespaceSelector:
    matchExpressions: [{{key: kubernetes.io/metadata.name, operator: In, values: [serving]}}]
  resourceGroups:
    - coveredResources: [cpu, memory, nvidia.com/gpualloc]
      flavors:
        - name: c12-default
          resources:
            - {{name: cpu, nominalQuota: "4"}}
            - {{name: memory, nominalQuota: 8Gi}}
            - {{name: nvidia.com/gpualloc, nominalQuota: "1"}}
  preemption:
    reclaimWithinCohort: Never
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{name: serving-lq, namespace: serving}}
spec: {{clusterQueue: serving-cq}}
---
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata:
  name: chat
  namespace: serving
  labels: {{kueue.x-k8s.io/queue-name: serving-lq, kueue.x-k8s.io/priority-class: serving-prio}}
spec:
  predictor:
    model:
      modelFormat: {{name: huggingface}}
      storageUri: pvc://models/chat
      resources: {{requests: {{cpu: "1", memory: 2Gi, nvidia.com/gpualloc: "1"}}}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {{name: serving-prio}}
value: 1000
""", opts=opts)
'''

PATCH_PROGRAM = """\
crds = k8s.yaml.v2.ConfigGroup("kueue-crds", files={crd_files!r}, opts=opts)
k8s.apiextensions.CustomResourcePatch(
    "loosen-inference",
    api_version="kueue.x-k8s.io/v1beta2",
    kind="ClusterQueue",
    metadata={{"name": "c12-inference-cq", "annotations": {{"pulumi.com/patchForce": "true"}}}},
    spec={{
        "cohortName": "c12-shared",
        "resourceGroups": [{{"coveredResources": ["nvidia.com/gpualloc"], "flavors": [{{"name": "c12-default",
            "resources": [{{"name": "nvidia.com/gpualloc", "nominalQuota": "1", "borrowingLimit": "100"}}]}}]}}],
        "preemption": {{"reclaimWithinCohort": "Never"}},
    }},
    opts=pulumi.ResourceOptions(provider=provider, depends_on=[crds]),
)
"""


def _kueue_crds(*names: str) -> list[str]:
    from kueue_cohorts import toolchain
    return [str(p) for p in toolchain.crd_files("kueue") if p.name in names]


def test_an_unlabelled_queue_that_an_inference_service_reaches_is_judged_as_inference(binaries, tmp_path):
    """Item 1: no role label, no pack config entry, but an InferenceService queues to it through its LocalQueue."""
    from kueue_cohorts import toolchain
    crds = _kueue_crds("kueue.x-k8s.io_clusterqueues.yaml", "kueue.x-k8s.io_localqueues.yaml",
                       "kueue.x-k8s.io_workloadpriorityclasses.yaml") + [str(p) for p in toolchain.crd_files("kserve")]
    run = _program_preview(tmp_path, UNLABELLED_SERVING_PROGRAM, crd_files=crds)
    assert run.error is not None, run.text()
    assert {INFERENCE_BORROWING_LIMIT_ZERO.name, INFERENCE_RECLAIM_ANY.name} <= run.policies("mandatory"), run.text()
    assert "The ClusterQueue 'serving-cq' is an inference queue" in run.text()


def test_a_patch_is_judged_as_the_object_it_produces(binaries, tmp_path):
    """Item 2: a ClusterQueuePatch (CustomResourcePatch) of the inference ClusterQueue with borrowingLimit 100 and
    reclaimWithinCohort Never, force-applied, is refused like the object it would produce."""
    run = _program_preview(tmp_path, PATCH_PROGRAM,
                           config_file=REPO / "kueue_cohorts" / "policy" / "config" / "dev.json",
                           crd_files=_kueue_crds("kueue.x-k8s.io_clusterqueues.yaml"))
    assert run.error is not None, run.text()
    assert {INFERENCE_BORROWING_LIMIT_ZERO.name, INFERENCE_RECLAIM_ANY.name} <= run.policies("mandatory"), run.text()


def test_the_dev_stack_through_a_config_group_with_training_above_inference_fails(binaries, tmp_path):
    """Item 3: the dev stack's Kueue objects written as YAML (a ConfigGroup) with training priority 5000 against
    inference 1000: the pack ranks the classes the stack declares (its generated config), labelled or not."""
    import yaml as pyyaml

    from kueue_cohorts.components.checks.validation import load_stack_file
    from kueue_cohorts.components.model.render import render_stack

    settings = load_stack_file(REPO / "stacks" / "Pulumi.dev.yaml")
    objects = [r.manifest for r in render_stack(settings) if r.manifest["apiVersion"].startswith("kueue.x-k8s.io")]
    for obj in objects:
        obj["metadata"]["labels"].pop("kueue-cohorts/role", None)  # a hand-written copy carries no role label
        if obj["kind"] == "WorkloadPriorityClass" and obj["metadata"]["name"] == "c12-training-prio":
            obj["value"] = 5000
    text = pyyaml.safe_dump_all(objects, sort_keys=False)
    toolchain = __import__("kueue_cohorts.toolchain", fromlist=["crd_files"])
    crds = [str(p) for p in toolchain.crd_files("kueue") if p.name.startswith("kueue.x-k8s.io_")]
    body = "k8s.yaml.v2.ConfigGroup('dev-by-hand', files={crd_files!r}, yaml={text!r}, opts=opts)\n"
    run = _program_preview(tmp_path, body, config_file=REPO / "kueue_cohorts" / "policy" / "config" / "dev.json",
                           crd_files=crds,
                           text=text)
    assert run.error is not None, run.text()
    assert WORKLOAD_PRIORITY_CLASS.name in run.policies("mandatory"), run.text()
    assert "WorkloadPriorityClass 'c12-training-prio' (5000)" in run.text()
