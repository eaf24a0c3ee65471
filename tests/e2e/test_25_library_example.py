"""examples/own-program, a Pulumi program of a user's own that uses kueue-cohorts as a library, goes `up` on the
sandbox from a fresh venv with the package installed from the checkout, and `destroy` takes it down again (issue 29
item 6). Its namespaces come from Namespace resources' Outputs, so the cohort's objects land in them only once they
resolved and the settings check accepted them."""
from __future__ import annotations

import os
from pathlib import Path

from kueue_cohorts.deploy import scratch
from tests.library_env import copy_example, fresh_venv, run_example

NAMESPACES = ("example-serving", "example-training")


def _env() -> dict[str, str]:
    return {"HOME": os.environ["HOME"], "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
            **{k: v for k, v in os.environ.items() if k == "KUEUE_COHORTS_CACHE"}}


def test_the_example_program_goes_up_on_the_sandbox_and_comes_down(sandbox, cluster, tmp_path: Path):
    python = fresh_venv(tmp_path / "venv", scratch.clone(tmp_path / "kueue-cohorts"))
    example = copy_example(tmp_path / "example")
    (tmp_path / "state").mkdir()
    backend = f"file://{tmp_path / 'state'}"
    config = {"kubeconfig": str(sandbox.paths.kubeconfig)}
    try:
        up = run_example(python, example, "up", backend, config, _env(), timeout=600)
        assert up["summary"].get("create", 0) >= 14, up["summary"]
        queue = cluster.cluster_queue("example-inference-cq")
        assert queue["spec"]["cohortName"] == "example-shared"
        assert queue["spec"]["namespaceSelector"]["matchExpressions"][0]["values"] == ["example-serving"]
        local = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in cluster.kueue_objects("localqueues")}
        assert {("example-serving", "inference"), ("example-training", "training")} <= local
        labels = {ns: cluster.core.read_namespace(ns).metadata.labels or {} for ns in NAMESPACES}
        assert labels["example-serving"].get("kueue.x-k8s.io/queue") == "example-inference-cq", labels
        assert labels["example-training"].get("kueue.x-k8s.io/queue") == "example-training-cq", labels
    finally:
        down = run_example(python, example, "destroy", backend, config, _env(), timeout=600)
    assert down["summary"].get("delete", 0) >= 14, down["summary"]
    assert not [q for q in cluster.kueue_objects("clusterqueues") if q["metadata"]["name"].startswith("example-")]
    assert not [f for f in cluster.kueue_objects("resourceflavors") if f["metadata"]["name"] == "example-gpu"]
