"""Two nodes of one TrainJob (two processes, torch.distributed over gloo on CPU), configured only through the
variables the Kubeflow Trainer's torch plugin sets (PET_*). SIGTERM reaches one node only: both must stop at the
same step, with one complete checkpoint, and exit 0 (a node that kept training would hang in its next collective)."""
from __future__ import annotations

import signal
import socket

import pytest

from tests.trainer.process import start
from tests.trainer.test_preemption import KNOBS, complete, steps
from trainer.entrypoint import ConfigError, distributed_env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_pet_variables_become_torch_distributed_variables():
    pet = {"PET_NNODES": "2", "PET_NODE_RANK": "1", "PET_MASTER_ADDR": "job-node-0-0.job", "PET_MASTER_PORT": "29500",
           "PET_NPROC_PER_NODE": "1"}
    assert distributed_env(pet) == {"WORLD_SIZE": "2", "RANK": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1",
                                    "MASTER_ADDR": "job-node-0-0.job", "MASTER_PORT": "29500"}
    assert distributed_env({"PET_NNODES": "1"}) == {}
    assert distributed_env({}) == {}
    with pytest.raises(ConfigError, match="PET_MASTER_ADDR"):
        distributed_env({"PET_NNODES": "2", "PET_NODE_RANK": "0", "PET_MASTER_PORT": "1"})


@pytest.mark.timeout(300)
def test_sigterm_on_one_node_stops_every_node_at_the_same_step(tmp_path):
    pet = {"PET_NNODES": "2", "PET_MASTER_ADDR": "127.0.0.1", "PET_MASTER_PORT": str(_free_port())}
    node0 = start(tmp_path, "job", PET_NODE_RANK="0", **pet, **KNOBS)
    node1 = start(tmp_path, "job", PET_NODE_RANK="1", KUEUE_COHORTS_TEST_HOLD="step:12", **pet, **KNOBS)
    try:
        node1.wait_for(r"^HOLD step 12$")  # node 0 waits for node 1 in step 13's gradient all-reduce
        node1.send(signal.SIGTERM)
        assert node1.wait() == 0, node1.log()
        assert node0.wait() == 0, node0.log()
    finally:
        for node in (node0, node1):
            if node.proc.poll() is None:
                node.proc.kill()
    for node in (node0, node1):
        assert any(line.startswith("preempted: stopped at global step 13 with checkpoint-13 complete")
                   for line in node.ours()), node.log()
    run_dir = tmp_path / "job"
    assert steps(run_dir) == [10, 13]
    assert complete(run_dir, 13)
