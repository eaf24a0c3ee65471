"""A MultiKueue manager declared `multiKueue.managerTrainer: CRDsOnly` must serve the Trainer's CRDs only: with its
webhook configurations, Trainer v2.2.1's controller would also run every dispatched TrainJob (no managedBy check), or
its failurePolicy Fail webhooks refuse every TrainJob. The decision is pure; the cluster read is tried on the
sandbox (tests/e2e/test_26_multikueue.py)."""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kueue_cohorts.components.stack.preflight import CRDS_ONLY_FINDING, crds_only_problem

KEY = "kueue-cohorts:multiKueue.managerTrainer"
OTHERS = st.sampled_from(["kueue-validating-webhook-configuration", "kueue-mutating-webhook-configuration",
                          "cert-manager-webhook", "jobset-validating-webhook-configuration", "trainer.kubeflow.org",
                          "validator.trainer.kubeflow.org.example"])
TRAINER = st.sampled_from(["validator.trainer.kubeflow.org", "defaulter.trainer.kubeflow.org"])


@given(st.lists(OTHERS, max_size=6))
def test_a_manager_without_the_trainers_webhooks_passes(names):
    assert crds_only_problem(names, KEY) is None


@given(st.lists(OTHERS, max_size=6), st.lists(TRAINER, min_size=1, max_size=2, unique=True))
def test_every_trainer_webhook_configuration_is_named_with_the_key_and_the_fix(others, trainer):
    problem = crds_only_problem([*others, *trainer], KEY)
    assert problem is not None and problem.startswith(f"{CRDS_ONLY_FINDING}: {KEY} = 'CRDsOnly'")
    assert f"({', '.join(sorted(trainer))})" in problem
    assert "Fix: on the manager, uninstall the Trainer's controller and delete these webhook configurations" in problem
    assert f"or set {KEY}: Controller" in problem
