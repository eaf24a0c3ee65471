"""`kueue-cohorts:multiKueue` (issue 33 item 1): the workers, their kubeconfig source, the dispatching queues and
their worker order; every problem at once, each at its key path, as for the rest of the config."""
from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.components.checks.validation import validate
from tests.helpers import stack_raw

MK = "kueue-cohorts:multiKueue"


def _dev(multi: dict, **cluster) -> dict:
    """The dev stack with `multi` as multiKueue (managerTrainer CRDsOnly unless `multi` says: the dev stack's training
    queue runs TrainJobs, see test_dispatching_trainjobs_needs_a_manager_without_the_trainer_controller)."""
    raw = stack_raw("dev")
    raw["multiKueue"] = {"managerTrainer": "CRDsOnly", **multi}
    if cluster:
        raw["cluster"] = cluster
    return raw


GOOD = {"workers": [{"name": "worker-1"}, {"name": "worker-2", "secret": {"name": "w2"}}],
        "dispatch": [{"clusterQueue": "c12-training-cq", "workers": ["worker-2", "worker-1"]}]}


def _problems(raw: dict) -> dict[str, str]:
    return {p.key: p.rule for p in validate(raw).problems}


def test_a_sound_multikueue_block_passes_and_keeps_the_order():
    result = validate(_dev(copy.deepcopy(GOOD)))
    assert result.problems == ()
    mk = result.settings.multi_kueue
    assert [w.name for w in mk.workers] == ["worker-1", "worker-2"]
    assert mk.dispatch[0].workers == ["worker-2", "worker-1"]
    assert mk.workers[0].secret.resolved_name("worker-1") == "worker-1-multikueue"
    assert mk.workers[1].secret.resolved_name("worker-2") == "w2"
    assert mk.dispatch[0].check_name() == "c12-training-cq-multikueue"


CASES = [
    ("unknown-queue", {"workers": [{"name": "w"}], "dispatch": [{"clusterQueue": "nope", "workers": ["w"]}]},
     {f"{MK}.dispatch[0].clusterQueue": "not a ClusterQueue of this stack"}),
    ("unknown-worker", {"workers": [{"name": "w"}], "dispatch": [{"clusterQueue": "c12-training-cq",
                                                                  "workers": ["w", "x"]}]},
     {f"{MK}.dispatch[0].workers[1]": "not a worker"}),
    ("worker-twice-in-order", {"workers": [{"name": "w"}], "dispatch": [{"clusterQueue": "c12-training-cq",
                                                                         "workers": ["w", "w"]}]},
     {f"{MK}.dispatch[0].workers[1]": "already listed"}),
    ("queue-twice", {"workers": [{"name": "w"}], "dispatch": [
        {"clusterQueue": "c12-training-cq", "workers": ["w"]},
        {"clusterQueue": "c12-training-cq", "workers": ["w"], "name": "other"}]},
     {f"{MK}.dispatch[1].clusterQueue": "already dispatches"}),
    ("check-name-twice", {"workers": [{"name": "w"}], "dispatch": [
        {"clusterQueue": "c12-training-cq", "workers": ["w"], "name": "mk"},
        {"clusterQueue": "c12-inference-cq", "workers": ["w"], "name": "mk"}]},
     {f"{MK}.dispatch[1].name": "already used"}),
    ("worker-twice", {"workers": [{"name": "w"}, {"name": "w"}], "dispatch": [
        {"clusterQueue": "c12-training-cq", "workers": ["w"]}]},
     {f"{MK}.workers[1].name": "already used"}),
    ("secret-twice", {"workers": [{"name": "a", "secret": {"name": "s"}}, {"name": "b", "secret": {"name": "s"}}],
                      "dispatch": [{"clusterQueue": "c12-training-cq", "workers": ["a"]}]},
     {f"{MK}.workers[1].secret.name": "two workers would read one kubeconfig"}),
    ("context-in-sandbox", {"workers": [{"name": "w", "context": "ctx", "kubeconfig": "k"}],
                            "dispatch": [{"clusterQueue": "c12-training-cq", "workers": ["w"]}]},
     {f"{MK}.workers[0].context": "cluster mode kubeconfig only",
      f"{MK}.workers[0].kubeconfig": "cluster mode kubeconfig only"}),
    ("from-file-in-sandbox", {"workers": [{"name": "w", "secret": {"fromFile": "w.kubeconfig"}}],
                              "dispatch": [{"clusterQueue": "c12-training-cq", "workers": ["w"]}]},
     {f"{MK}.workers[0].secret.fromFile": "the sandbox writes"}),
    ("feature-off", {"workers": [{"name": "w"}], "dispatch": [{"clusterQueue": "c12-training-cq",
                                                               "workers": ["w"]}]},
     {"kueue-cohorts:kueue.featureGates.MultiKueue": "never dispatches"}),
    ("worker-pool-flavor", {"workers": [{"name": "w", "nodePools": [{"name": "p", "capacity": {"cpu": "8"},
                                                                      "resourceFlavor": "nope"}]}],
                            "dispatch": [{"clusterQueue": "c12-training-cq", "workers": ["w"]}]},
     {f"{MK}.workers[0].nodePools[0].resourceFlavor": "not a ResourceFlavor"}),
    ("worker-pool-fraction", {"workers": [{"name": "w", "nodePools": [{"name": "p",
                                                                        "capacity": {"nvidia.com/gpualloc": "0.5"}}]}],
                              "dispatch": [{"clusterQueue": "c12-training-cq", "workers": ["w"]}]},
     {f'{MK}.workers[0].nodePools[0].capacity["nvidia.com/gpualloc"]': "whole"}),
    ("shape", {"workers": [], "dispatch": [{"clusterQueue": "c12-training-cq", "workers": []}]},
     {f"{MK}.workers": "at least 1", f"{MK}.dispatch[0].workers": "at least 1"}),
]


@pytest.mark.parametrize("multi,expected", [(m, e) for _, m, e in CASES], ids=[c[0] for c in CASES])
def test_each_problem_at_its_key(multi, expected):
    raw = _dev(multi)
    if "kueue-cohorts:kueue.featureGates.MultiKueue" in expected:
        raw["kueue"] = {**raw.get("kueue", {}), "featureGates": {"MultiKueue": False}}
    found = _problems(raw)
    for key, words in expected.items():
        assert key in found, f"{key} not reported; got {sorted(found)}"
        assert words in found[key], found[key]


def test_every_problem_in_one_message():
    """Several mistakes at once: one validation lists them all."""
    multi = {"workers": [{"name": "w", "context": "c"}, {"name": "w"}],
             "dispatch": [{"clusterQueue": "nope", "workers": ["w", "x"]}]}
    found = _problems(_dev(multi))
    assert {f"{MK}.workers[0].context", f"{MK}.workers[1].name", f"{MK}.dispatch[0].clusterQueue",
            f"{MK}.dispatch[0].workers[1]"} <= set(found)


def test_kubeconfig_mode_needs_a_context_that_is_not_the_manager():
    raw = _dev({"workers": [{"name": "a"}, {"name": "b", "context": "mgr"}, {"name": "c", "context": "c",
                                                                            "secret": {"fromFile": "c.yaml"}}],
                "dispatch": [{"clusterQueue": "c12-training-cq", "workers": ["a", "b", "c"]}]},
               mode="kubeconfig", context="mgr")
    raw["protected"] = False
    raw["admission"] = {"identities": {"users": ["deployer"]}}
    found = _problems(raw)
    assert "needs its own kubeconfig context" in found[f"{MK}.workers[0].context"]
    assert "manager's own cluster" in found[f"{MK}.workers[1].context"]
    assert not [k for k in found if k.startswith(f"{MK}.workers[2]")]


def test_render_mode_never_writes_credentials():
    raw = _dev({"workers": [{"name": "w", "secret": {"fromFile": "w.yaml"}}],
                "dispatch": [{"clusterQueue": "c12-training-cq", "workers": ["w"]}]}, mode="render", renderDir="out")
    assert "plain text" in _problems(raw)[f"{MK}.workers[0].secret.fromFile"]


def test_a_derived_name_kueue_cannot_take_is_refused():
    raw = _dev({"workers": [{"name": "w"}], "dispatch": [{"clusterQueue": "c12.training", "workers": ["w"]}]})
    raw["inferenceTraining"]["training"]["clusterQueue"] = "c12.training"  # a subdomain, not a label
    found = _problems(raw)
    assert "DNS-1123 label" in found[f"{MK}.dispatch[0].clusterQueue"]
    raw["multiKueue"]["dispatch"][0] = {"clusterQueue": "c12.training", "workers": ["w"], "name": "c12-training"}
    assert not [k for k in _problems(raw) if k.startswith(MK)]


NAMES = st.sampled_from(["w1", "w2", "w3", "ghost"])


@settings(max_examples=60, deadline=None)
@given(order=st.lists(NAMES, min_size=1, max_size=6))
def test_the_dispatch_order_is_reported_at_each_bad_position(order):
    """Any worker order: exactly the positions naming an undeclared worker or repeating an earlier one are
    reported, each at its own index."""
    raw = _dev({"workers": [{"name": "w1"}, {"name": "w2"}, {"name": "w3"}],
                "dispatch": [{"clusterQueue": "c12-training-cq", "workers": order}]})
    found = {k for k in _problems(raw) if k.startswith(f"{MK}.dispatch[0].workers[")}
    seen: set[str] = set()
    expected = set()
    for index, name in enumerate(order):
        if name == "ghost" or name in seen:
            expected.add(f"{MK}.dispatch[0].workers[{index}]")
        seen.add(name)
    assert found == expected


def test_dispatching_trainjobs_needs_a_manager_without_the_trainer_controller():
    """The pinned Kubeflow Trainer v2.2.1 ignores spec.managedBy (kubeflow/trainer#3632): with its controller on the
    manager a dispatched TrainJob would run there too. The training queue of a stack with a trainingRuntime may
    dispatch only with managerTrainer CRDsOnly; the inference queue, a stack without runtime, or without the trainjob
    integration, may."""
    multi = {"workers": [{"name": "w"}], "dispatch": [{"clusterQueue": "c12-training-cq", "workers": ["w"]},
                                                      {"clusterQueue": "c12-inference-cq", "workers": ["w"]}]}
    found = _problems(_dev({**multi, "managerTrainer": "Controller"}))
    assert set(k for k in found if k.startswith(MK)) == {f"{MK}.dispatch[0].clusterQueue"}
    assert "kubeflow/trainer#3632" in found[f"{MK}.dispatch[0].clusterQueue"]
    assert not [k for k in _problems(_dev(multi)) if k.startswith(MK)]
    no_runtime = _dev({**multi, "managerTrainer": "Controller"})
    del no_runtime["trainingRuntime"]
    assert not [k for k in _problems(no_runtime) if k.startswith(MK)]


# --- issue 38 class 2: the worker credential is the stack's own, and a protected stack only references it ----------

KUEUES_OWN_SECRETS = ["kueue-webhook-server-cert", "kueue-metrics-server-cert", "kueue-visibility-server-cert",
                      "sh.helm.release.v1.kueue.v1"]


@pytest.mark.parametrize("name", KUEUES_OWN_SECRETS)
def test_a_worker_secret_named_as_one_of_kueues_own_is_refused_at_its_key(name):
    raw = _dev({"workers": [{"name": "w", "secret": {"name": name}}],
                "dispatch": [{"clusterQueue": "c12-training-cq", "workers": ["w"]}]})
    problems = {p.key: p for p in validate(raw).problems}
    problem = problems[f"{MK}.workers[0].secret.name"]
    assert problem.value == name and "Kueue's own Secrets in kueue-system" in problem.rule
    assert problem.fix == "give secret.name a name of its own, e.g. <worker>-multikueue"


@pytest.mark.parametrize("account", ["kueue-controller-manager", "default", "my-kueue-controller-manager"])
def test_a_worker_account_that_is_kueues_own_is_refused_at_its_key(account):
    """`my-kueue` is the fullname of a chart installed with fullnameOverride: my-kueue (the stack's chart values)."""
    raw = _dev({"workers": [{"name": "w", "serviceAccount": account}],
                "dispatch": [{"clusterQueue": "c12-training-cq", "workers": ["w"]}]})
    raw.setdefault("kueue", {})["values"] = {"fullnameOverride": "my-kueue"}
    problems = {p.key: p for p in validate(raw).problems}
    problem = problems[f"{MK}.workers[0].serviceAccount"]
    assert problem.value == account
    assert problem.fix == "use an account of its own, e.g. multikueue (the default)"


def test_a_derived_secret_name_that_collides_is_reported_at_the_worker_name():
    raw = _dev({"workers": [{"name": "kueue-webhook-server-cert"}],
                "dispatch": [{"clusterQueue": "c12-training-cq", "workers": ["kueue-webhook-server-cert"]}]})
    assert f"{MK}.workers[0].name" not in _problems(raw)  # <name>-multikueue is not Kueue's
    raw["multiKueue"]["workers"][0]["secret"] = {"name": "kueue-metrics-server-cert"}
    assert "Kueue's own" in _problems(raw)[f"{MK}.workers[0].secret.name"]


@pytest.mark.parametrize("protected,expected", [(None, True), (True, True), (False, False)])
def test_a_protected_stack_references_the_worker_secret_and_never_stores_it(protected, expected):
    """Cluster mode kubeconfig is protected unless the stack file says `protected: false` (deploy/stackfile.py)."""
    raw = _dev({"workers": [{"name": "w", "context": "w-ctx", "secret": {"fromFile": "w.kubeconfig"}}],
                "dispatch": [{"clusterQueue": "c12-training-cq", "workers": ["w"]}]},
               mode="kubeconfig", context="manager")
    if protected is not None:
        raw["protected"] = protected
    problems = {p.key: p for p in validate(raw).problems}
    key_path = f"{MK}.workers[0].secret.fromFile"
    assert (key_path in problems) == expected
    if expected:
        assert problems[key_path].value == "w.kubeconfig"
        assert problems[key_path].fix.startswith("create the Secret w-multikueue in kueue-system outside the stack")
