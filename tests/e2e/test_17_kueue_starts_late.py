"""A Kueue manager that starts late (``python -m kueue_cohorts.sandbox up --kueue-delay``) on a sandbox of its own.

1. ``down`` stops a component by its process group even when the group's leader has died: while the manager's
   start is delayed, its process group is a shell (the leader) and its ``sleep``; the shell is killed, the
   ``sleep`` lives on, and ``down`` must still stop it (issue 14 item 7).
2. One ``pulumi up`` of a dev-like stack with ``kueue.install: true`` against a sandbox whose Kueue manager is not
   running yet succeeds: KueueInstallation holds the cohorts back until Kueue's webhooks answer (issue 14
   item 5). Without that wait the ResourceFlavor is refused ("failed calling webhook ... connection refused")
   and the first ``up`` fails.

The session's sandbox (conftest.py) is not touched; this module's sandbox is stopped when the module ends.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import signal

import pytest
import yaml
from e2e_support import REPO, Cluster, is_true, sandbox_in, start_sandbox, wait_for
from kubernetes import config as kconfig

from kueue_cohorts.deploy.scratch import Project
from kueue_cohorts.sandbox import process

STACK = "kueue-late"
#: Seconds the manager starts late in the ``up`` test: longer than ``pulumi up`` needs to reach the cohorts (the
#: test checks that the manager indeed started only after the ``up`` had begun).
LATE_S = 90


@pytest.fixture(scope="module")
def late_box(tmp_path_factory):
    """This module's sandbox directory (``$KUEUE_COHORTS_SANDBOX_DIR`` pointed at it for the inline program);
    stopped at the end, the environment restored."""
    with sandbox_in(tmp_path_factory.mktemp("sandbox-kueue-late")) as box:
        yield box


def _group(pgid: int) -> list[int]:
    return process._group_members(pgid)


def test_down_stops_the_group_of_a_component_whose_leader_died(late_box):
    start_sandbox(late_box, "--kueue-delay", "3600")
    rec = late_box.state().processes["kueue"]
    members = wait_for(lambda: [p for p in _group(rec.pid) if p != rec.pid], 30, "the delay's sleep to start")
    os.kill(rec.pid, signal.SIGKILL)  # the leader (the shell waiting to exec the manager) dies ...
    wait_for(lambda: not process.alive(rec), 30, "the leader to be gone")
    assert all(process.start_ticks(p) is not None for p in members)  # ... its sleep lives on in the group

    stopped = late_box.down()

    assert "kueue" in stopped
    assert [p for p in members if process.start_ticks(p) is not None] == []
    assert late_box.state().processes == {}


def _stack_config() -> dict:
    doc = yaml.safe_load((REPO / "stacks" / "Pulumi.dev.yaml").read_text())
    doc["config"]["kueue-cohorts:kueue"] = {"install": True, "chartSource": "GoModule"}
    return doc


def test_one_up_with_kueue_install_waits_for_a_manager_that_starts_late(late_box, tmp_path):
    start_sandbox(late_box, "--kueue-delay", str(LATE_S))
    cluster = Cluster(kconfig.new_client_from_config(config_file=str(late_box.paths.kubeconfig)))
    assert not late_box.health()["kueue"][1], "the manager must not answer yet"
    project = Project(tmp_path / "project")
    project.add_stack(STACK, _stack_config())
    began = dt.datetime.now(dt.UTC).replace(microsecond=0)

    result = project.run(STACK, "up")

    assert result.summary.result == "succeeded", result.stdout
    log = late_box.paths.log("kueue").read_text()
    started = dt.datetime.strptime(re.findall(r"=== kueue-delay over at (\S+): starting", log)[-1],
                                   "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    assert started >= began, "the manager started before the up: nothing was waited for"
    # The installation's gate was written only once the late manager answered, and the cohort's objects after it.
    gate = cluster.core.read_namespaced_config_map("kueue-cohorts-webhooks-ready", "kueue-system")
    assert gate.data == {"webhooks": "answered"}
    assert gate.metadata.creation_timestamp >= started, (gate.metadata.creation_timestamp, started)
    flavor = cluster.custom.get_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "resourceflavors", "c12-default")
    assert dt.datetime.fromisoformat(flavor["metadata"]["creationTimestamp"].replace("Z", "+00:00")) >= started
    for name in ("c12-inference-cq", "c12-training-cq"):
        wait_for(lambda n=name: (q := cluster.cluster_queue(n)) and is_true(q, "Active"), 90,
                 f"ClusterQueue {name} to be Active")
