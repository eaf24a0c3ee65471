"""The components used from another Pulumi program (issue 29 item 6), under Pulumi mocks.

A user's program passes Outputs of its own resources (a Namespace's name, a StorageClass's name, an image URL) in the
components' Args. The components judge the stack with a stand-in per Output at construction and register each object
as the stack renders once the Outputs resolved: these tests compare what is registered with the assembled stack of
the resolved values, check that no stand-in reaches a registered object, that the settings check's message fails the
construction (or, for a resolved value, the deployment) with nothing registered, that the provider of `opts` reaches
every child, and that every Args field says what happens when it is omitted.
"""
from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import re
from typing import Any, Callable

import pulumi
import pulumi_kubernetes as k8s
import pytest
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

import kueue_cohorts.components.resources as library
from kueue_cohorts.components.model.assembly import assemble
from kueue_cohorts.components.model.kueue import namespace_owner
from kueue_cohorts.components.resources import (
    AdmissionGuardrails,
    AdmissionGuardrailsArgs,
    CheckpointVolume,
    CheckpointVolumeArgs,
    InferenceService,
    InferenceServiceArgs,
    InferenceTrainingCohort,
    InferenceTrainingCohortArgs,
    InvalidStack,
    PreemptibleTrainingRuntime,
    PreemptibleTrainingRuntimeArgs,
    SharedPoolCohort,
    SharedPoolCohortArgs,
    TrainJobArgs,
    train_job,
)
from kueue_cohorts.components.resources.judged import STAND_IN_PREFIX
from kueue_cohorts.components.settings import CheckpointSettings, InferenceServiceSettings, Settings, parse_settings
from kueue_cohorts.components.settings.errors import SettingsError
from kueue_cohorts.policy.rules.vocabulary.system_namespaces import protected_namespaces
from tests.helpers import RecordingMocks, fixture_raw, stack_raw

OWNER = namespace_owner("kueue-cohorts", "test")  # the mocks' project and stack
USER_TYPES = ("kubernetes:core/v1:Namespace", "kubernetes:storage.k8s.io/v1:StorageClass")


class ProviderMocks(RecordingMocks):
    """RecordingMocks that also keep each resource's provider reference (name -> provider)."""

    def __init__(self) -> None:
        super().__init__()
        self.providers: dict[str, str] = {}

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        self.providers[args.name] = args.provider or ""
        return super().new_resource(args)


def _run(build: Callable[[], Any]) -> ProviderMocks:
    mocks = ProviderMocks()
    pulumi.runtime.set_mocks(mocks, project="kueue-cohorts", stack="test", preview=False)

    @pulumi.runtime.test
    def program():
        build()

    program()
    return mocks


def _dev(policy: str = "External") -> dict:
    """The dev stack with tenant namespaces the user's program makes (namespacePolicy External)."""
    raw = stack_raw("dev")
    raw["inferenceTraining"]["namespacePolicy"] = policy
    return raw


def _stack_objects(mocks: RecordingMocks) -> dict[tuple[str, str], dict]:
    """(type token, Pulumi name) -> inputs of every Kubernetes object the components registered (the user's own
    Namespaces and StorageClass left out)."""
    return {(r.typ, r.name): json.loads(json.dumps(r.inputs)) for r in mocks.registered
            if r.custom and not r.typ.startswith("pulumi:providers:") and r.name not in ("serving", "train", "rwx")}


def _by_ref(manifests) -> dict[tuple[str, str, str], dict]:
    """(kind, namespace, name) -> manifest (the engine hands numbers back as floats: 1000.0 == 1000)."""
    out = {}
    for manifest in manifests:
        ref = (manifest["kind"], manifest["metadata"].get("namespace", ""), manifest["metadata"]["name"])
        assert ref not in out, f"{ref} twice"
        out[ref] = manifest
    return out


def _expected(raw: dict, parts: Callable[[Any], list]) -> dict[tuple[str, str, str], dict]:
    """The manifests `parts` picks from the assembled stack of `raw` (the values written in), by reference."""
    assembled = assemble(parse_settings(raw), OWNER)
    return _by_ref(json.loads(json.dumps(r.manifest)) for r in parts(assembled))


def _cohort_part(assembled) -> list:
    layout = assembled.rendered.inference_training
    return [*assembled.rendered.flavors, *[o for o in layout.cohort_objects() if o.kind != "InferenceService"]]


NAMES = st.from_regex(r"\A[a-z][a-z0-9]{0,10}(-[a-z0-9]{1,8})?\Z").filter(
    lambda n: n not in protected_namespaces([]) and not n.startswith(("kube-", STAND_IN_PREFIX)))


@hsettings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow],
           phases=[Phase.explicit, Phase.generate])
@given(inference=NAMES, training=NAMES, storage_class=NAMES)
def test_outputs_of_other_resources_are_registered_as_the_resolved_stack_renders_them(inference, training,
                                                                                        storage_class):
    if inference == training:
        return  # a namespace belongs to one ClusterQueue: the settings check refuses it (test below)
    settings = parse_settings(_dev())

    def build():
        serving = k8s.core.v1.Namespace("serving", metadata={"name": inference})
        train = k8s.core.v1.Namespace("train", metadata={"name": training})
        rwx = k8s.storage.v1.StorageClass("rwx", metadata={"name": storage_class}, provisioner="nfs.csi.k8s.io")
        InferenceTrainingCohort("c12", InferenceTrainingCohortArgs(
            stack=settings, inference_namespaces=[serving.metadata.name], training_namespaces=[train.metadata.name],
            storage_class_name=rwx.metadata.name))

    registered = _stack_objects(_run(build))
    written = _dev()
    written["inferenceTraining"]["inference"]["namespaces"] = [inference]
    written["inferenceTraining"]["training"]["namespaces"] = [training]
    written["inferenceTraining"]["training"]["checkpoint"]["storageClassName"] = storage_class
    assert _by_ref(registered.values()) == _expected(written, _cohort_part)
    assert STAND_IN_PREFIX not in json.dumps(list(registered.values()))
    # The Pulumi names come from the stand-ins: stable whatever the Outputs resolve to.
    assert ("kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue", "c12-lq-input-inference-namespaces-0-c12-inference-lq") \
        in registered


def test_plain_values_in_the_args_are_registered_as_written_without_outputs():
    settings = parse_settings(_dev("Create"))

    def build():
        InferenceTrainingCohort("c12", InferenceTrainingCohortArgs(
            stack=settings, inference_namespaces=["serving-a", "serving-b"], storage_class_name="nfs"))

    registered = _stack_objects(_run(build))
    written = _dev("Create")
    written["inferenceTraining"]["inference"]["namespaces"] = ["serving-a", "serving-b"]
    written["inferenceTraining"]["training"]["checkpoint"]["storageClassName"] = "nfs"
    assert _by_ref(registered.values()) == _expected(written, _cohort_part)
    namespaces = {r["metadata"]["name"] for (typ, _), r in registered.items() if typ == "kubernetes:core/v1:Namespace"}
    assert namespaces == {"serving-a", "serving-b", "c12-training"}


def test_a_stack_the_check_refuses_stops_the_construction_with_every_problem_and_registers_nothing():
    raw = _dev()
    raw["inferenceTraining"]["training"]["priorityClass"]["value"] = 5000  # above inference's 1000
    raw["inferenceTraining"]["inference"]["nominalQuota"]["cpu"] = "40"  # above the node pool's 8
    settings = parse_settings(raw)

    def build():
        serving = k8s.core.v1.Namespace("serving", metadata={"name": "serving"})
        InferenceTrainingCohort("c12", InferenceTrainingCohortArgs(stack=settings,
                                                                   inference_namespaces=[serving.metadata.name]))

    mocks = ProviderMocks()
    pulumi.runtime.set_mocks(mocks, project="kueue-cohorts", stack="test", preview=False)
    with pytest.raises(InvalidStack) as refused:
        pulumi.runtime.test(build)()
    message = str(refused.value)
    assert isinstance(refused.value, SettingsError) and isinstance(refused.value, pulumi.RunError)
    assert "kueue-cohorts:inferenceTraining.training.priorityClass.value" in message
    assert "kueue-cohorts:inferenceTraining.inference.nominalQuota.cpu" in message
    assert not any(r.typ.startswith("kubernetes:kueue") for r in mocks.registered)


@pytest.mark.parametrize("resolved, key", [
    ("kube-system", "kueue-cohorts:inferenceTraining.inference.namespaces[0]"),
    ("c12-training", "kueue-cohorts:inferenceTraining"),  # the training namespace as well: two ClusterQueues
])
def test_an_output_that_resolves_to_a_refused_value_fails_the_deployment_before_anything_registers(resolved, key):
    settings = parse_settings(_dev())

    def build():
        serving = k8s.core.v1.Namespace("serving", metadata={"name": resolved})
        InferenceTrainingCohort("c12", InferenceTrainingCohortArgs(stack=settings,
                                                                   inference_namespaces=[serving.metadata.name]))

    mocks = ProviderMocks()
    pulumi.runtime.set_mocks(mocks, project="kueue-cohorts", stack="test", preview=False)
    with pytest.raises(Exception) as failed:
        pulumi.runtime.test(build)()
    assert key in str(failed.value) and resolved in str(failed.value)
    assert [r.typ for r in mocks.registered if r.custom] == ["kubernetes:core/v1:Namespace"], \
        "only the user's Namespace: every object of a stack with Outputs waits for the check of the resolved values"


def test_the_provider_of_opts_reaches_every_child_and_the_type_tokens_name_module_and_class():
    settings = parse_settings(_dev())
    built: dict[str, Any] = {}

    def build():
        provider = k8s.Provider("eks", kubeconfig="{}")
        opts = pulumi.ResourceOptions(provider=provider)
        serving = k8s.core.v1.Namespace("serving", metadata={"name": "serving"}, opts=opts)
        cohort = InferenceTrainingCohort("c12", InferenceTrainingCohortArgs(
            stack=settings, inference_namespaces=[serving.metadata.name]), opts)
        AdmissionGuardrails("guardrails", AdmissionGuardrailsArgs(stack=cohort.stack), opts)
        runtime = PreemptibleTrainingRuntime("runtime", PreemptibleTrainingRuntimeArgs(
            settings=settings.training_runtime, checkpoint_volume=cohort.training_checkpoints["c12-training"],
            image=pulumi.Output.from_input("registry.example/team/trainer:2")), opts)
        InferenceService("llm", InferenceServiceArgs(
            settings=InferenceServiceSettings(name="llm", model_format="huggingface", storage_uri="hf://x",
                                              requests={"cpu": "1", "memory": "1Gi"}),
            cohort=cohort, namespace=cohort.inference_namespaces[0],
            storage_uri=pulumi.Output.from_input("s3://models/llm")), opts)
        train_job("run", TrainJobArgs("run-1", runtime, cohort.training_local_queues["c12-training"],
                                      cohort.training_priority_class), opts)
        built["cohort"] = cohort

    mocks = _run(build)
    objects = [r for r in mocks.registered if r.custom and not r.typ.startswith("pulumi:providers:")]
    assert len(objects) > 20
    for r in objects:
        assert "::eks::" in mocks.providers[r.name], f"{r.typ} {r.name} has provider {mocks.providers[r.name]!r}"
    tokens = {r.typ for r in mocks.registered if not r.custom}
    assert tokens == {"kueue-cohorts:cohorts:InferenceTrainingCohort", "kueue-cohorts:training:CheckpointVolume",
                      "kueue-cohorts:admission:AdmissionGuardrails", "kueue-cohorts:inference:InferenceService",
                      "kueue-cohorts:training:PreemptibleTrainingRuntime"}
    by_type = {r.typ: r.inputs for r in objects}
    isvc = by_type["kubernetes:serving.kserve.io/v1beta1:InferenceService"]
    assert isvc["metadata"]["namespace"] == "serving"
    assert isvc["spec"]["predictor"]["model"]["storageUri"] == "s3://models/llm"
    runtime = by_type["kubernetes:trainer.kubeflow.org/v1alpha1:TrainingRuntime"]
    pod = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == "registry.example/team/trainer:2"
    assert by_type["kubernetes:trainer.kubeflow.org/v1alpha1:TrainJob"]["metadata"]["namespace"] == "c12-training"
    guardrails = json.dumps([r.inputs for r in objects if r.typ.endswith("ValidatingAdmissionPolicy")])
    assert '\\"serving\\"' in guardrails or '"serving"' in guardrails  # the serving guardrail names the namespace
    assert STAND_IN_PREFIX not in json.dumps([r.inputs for r in objects])


def test_a_service_the_stack_does_not_declare_is_judged_with_it():
    settings = parse_settings(_dev())
    too_big = InferenceServiceSettings(name="huge", model_format="huggingface", storage_uri="hf://x",
                                       requests={"cpu": "64"})

    def build():
        cohort = InferenceTrainingCohort("c12", InferenceTrainingCohortArgs(stack=settings))
        InferenceService("huge", InferenceServiceArgs(settings=too_big, cohort=cohort))

    with pytest.raises(InvalidStack, match=r"inferenceTraining\.inference\.services\[0\]\.requests\.cpu"):
        _run(build)


def test_shared_pool_tenants_take_namespaces_from_outputs():
    settings = parse_settings({**fixture_raw("guide-shared-pool"),
                               "sharedPool": {**fixture_raw("guide-shared-pool")["sharedPool"],
                                              "namespacePolicy": "Label"}})

    def build():
        team = k8s.core.v1.Namespace("serving", metadata={"name": "team-a-ml"})
        SharedPoolCohort("pool", SharedPoolCohortArgs(stack=settings, tenant_namespaces={"ns-a": [team.metadata.name]}))

    registered = _stack_objects(_run(build))
    patched = sorted(r["metadata"]["name"] for (typ, _), r in registered.items() if typ.endswith("NamespacePatch"))
    assert patched == ["ns-b", "team-a-ml"]
    with pytest.raises(ValueError, match="ns-c"):
        _run(lambda: SharedPoolCohort("pool", SharedPoolCohortArgs(stack=settings, tenant_namespaces={"ns-c": []})))


def test_a_checkpoint_volume_alone_takes_its_namespace_and_class_from_outputs():
    def build():
        team = k8s.core.v1.Namespace("train", metadata={"name": "team-train"})
        CheckpointVolume("ckpt", CheckpointVolumeArgs(namespace=team.metadata.name,
                                                      settings=CheckpointSettings(claim_name="ckpt", size="50Gi"),
                                                      storage_class_name=pulumi.Output.from_input("efs-rwx")))

    (claim,) = [r.inputs for r in _run(build).registered if r.typ == "kubernetes:core/v1:PersistentVolumeClaim"]
    assert claim["metadata"]["namespace"] == "team-train"
    assert claim["spec"] == {"accessModes": ["ReadWriteMany"], "storageClassName": "efs-rwx",
                             "resources": {"requests": {"storage": "50Gi"}}}


# --- the Args: one dataclass per component, each field documented ----------------------------------------------------

ARGS = sorted((obj for name, obj in vars(library).items() if name.endswith("Args") and dataclasses.is_dataclass(obj)),
              key=lambda cls: cls.__name__)


def _field_docs(cls: type) -> dict[str, str]:
    """Field name -> its attribute docstring (the string right after the field, as pydantic reads them)."""
    tree = ast.parse(inspect.getsource(cls))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs = {}
    for node, after in zip(body, body[1:], strict=False):
        if isinstance(node, ast.AnnAssign) and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
            docs[node.target.id] = after.value.value  # type: ignore[union-attr]
    return docs


@pytest.mark.parametrize("cls", ARGS, ids=lambda cls: cls.__name__)
def test_every_args_field_says_what_happens_when_it_is_omitted(cls):
    docs = _field_docs(cls)
    for field in dataclasses.fields(cls):
        doc = docs.get(field.name, "")
        assert doc, f"{cls.__name__}.{field.name} has no docstring"
        required = field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
        assert re.search(r"\brequired\b" if required else r"\bOmitted\b", doc, re.IGNORECASE), \
            f"{cls.__name__}.{field.name}: the docstring must say {'required' if required else 'Omitted: ...'}"


INPUT_FIELDS = {
    ("InferenceTrainingCohortArgs", "inference_namespaces"), ("InferenceTrainingCohortArgs", "training_namespaces"),
    ("InferenceTrainingCohortArgs", "storage_class_name"), ("SharedPoolCohortArgs", "tenant_namespaces"),
    ("CheckpointVolumeArgs", "namespace"), ("CheckpointVolumeArgs", "storage_class_name"),
    ("PreemptibleTrainingRuntimeArgs", "image"), ("InferenceServiceArgs", "storage_uri"),
}


@pytest.mark.parametrize("cls, field", sorted(INPUT_FIELDS))
def test_the_values_a_program_takes_from_other_resources_are_pulumi_inputs(cls, field):
    (annotation,) = [f.type for f in dataclasses.fields(getattr(library, cls)) if f.name == field]
    assert "pulumi.Input[str]" in str(annotation), f"{cls}.{field}: {annotation}"


def test_the_stack_program_still_passes_settings_it_judged_unchanged():
    """A Settings given to a component is judged as the program judges it: the stand-in-free stack is the program's
    own assembled stack."""
    settings = parse_settings(_dev("Create"))
    assert isinstance(settings, Settings)

    def build():
        InferenceTrainingCohort("c12", InferenceTrainingCohortArgs(stack=settings))

    registered = _stack_objects(_run(build))
    assert _by_ref(registered.values()) == _expected(_dev("Create"), _cohort_part)


def test_a_mapping_of_stack_file_keys_takes_outputs_anywhere():
    """The stack as a mapping in the stack file's shape, an Output where a plain value would be; keys the Args fill
    (the training namespaces here) may be left out of it."""
    raw = _dev("Label")
    del raw["inferenceTraining"]["training"]["namespaces"]

    def build():
        serving = k8s.core.v1.Namespace("serving", metadata={"name": "team-serving"})
        train = k8s.core.v1.Namespace("train", metadata={"name": "team-train"})
        stack = {**raw, "inferenceTraining": {**raw["inferenceTraining"], "inference": {
            **raw["inferenceTraining"]["inference"], "namespaces": [serving.metadata.name]}}}
        InferenceTrainingCohort("c12", InferenceTrainingCohortArgs(stack=stack,
                                                                   training_namespaces=[train.metadata.name]))

    registered = _stack_objects(_run(build))
    written = _dev("Label")
    written["inferenceTraining"]["inference"]["namespaces"] = ["team-serving"]
    written["inferenceTraining"]["training"]["namespaces"] = ["team-train"]
    assert _by_ref(registered.values()) == _expected(written, _cohort_part)
    with pytest.raises(ValueError, match="sharedPool"):
        _run(lambda: SharedPoolCohort("pool", SharedPoolCohortArgs(stack=raw)))
