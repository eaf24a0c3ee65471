"""Two nodes of one TrainJob (two processes, torch.distributed over gloo on CPU), configured only through the
variables the Kubeflow Trainer's torch plugin sets (PET_*).

- SIGTERM reaching one node only: both stop at the same step, with one complete checkpoint, and exit 0 (a node that
  kept training would hang in its next collective).
- A two-node run preempted by SIGTERM three times at seeded steps: no step lost beyond the one in flight, one complete
  checkpoint per preemption, final weights equal to an uninterrupted two-node run. The layout is the most sharded one
  the pinned stack trains on CPU: DDP, where every rank writes its own `rng_state_<rank>.pth` and rank 0 the shared
  files. FSDP is not it: torch 2.15 runs FSDP2 on CPU, but accelerate 1.15.0 (`AcceleratorState.__init__`) attaches
  the FSDP plugin only to multi-accelerator runs and trains MULTI_CPU with DDP; the FSDP layouts are covered by the
  fixtures of test_checkpoints.py.
- save_on_each_node on the shared volume is forced off and only world rank 0 rotates.
"""
from __future__ import annotations

import random
import signal
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from kueue_cohorts.trainer import checkpoints
from kueue_cohorts.trainer.entrypoint import PREEMPTED_EXIT_CODE, ConfigError, distributed_env
from kueue_cohorts.trainer.local.process import TrainerProcess, kill_all, start_nodes
from tests.trainer.test_preemption import KNOBS, saves_after_signal, steps

TWO_NODES = {
    "KUEUE_COHORTS_DEMO_MAX_STEPS": "30",
    "KUEUE_COHORTS_DEMO_SAVE_STEPS": "10",
    "KUEUE_COHORTS_DEMO_SAVE_TOTAL_LIMIT": "2",
}
PREEMPTION_SEED = 16


def preemption_steps(seed: int, count: int, max_steps: int) -> list[int]:
    """`count` distinct global steps in [1, max_steps - 2], ascending, drawn with `seed`: the test holds each attempt
    at the beginning of step N+1 and delivers SIGTERM there, so the step in flight is N+1."""
    return sorted(random.Random(seed).sample(range(1, max_steps - 1), count))


def weights(checkpoint: Path) -> dict[str, torch.Tensor]:
    return load_file(str(checkpoint / "model.safetensors"))


def wait_all(nodes: list[TrainerProcess], code: int = 0) -> None:
    """Wait for every node; each must exit with `code` (PREEMPTED_EXIT_CODE after a SIGTERM)."""
    for node in nodes:
        assert node.wait() == code, node.log()


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
    nodes = start_nodes(tmp_path, "job", per_node=[{}, {"KUEUE_COHORTS_TEST_HOLD": "step:12"}], **KNOBS)
    try:
        nodes[1].wait_for(r"^HOLD step 12$")  # node 0 waits for node 1 in step 13's gradient all-reduce
        nodes[1].send(signal.SIGTERM)
        wait_all(nodes, PREEMPTED_EXIT_CODE)
    finally:
        kill_all(nodes)
    for node in nodes:
        assert any(line.startswith("preempted: stopped at global step 13 with checkpoint-13 complete")
                   for line in node.ours()), node.log()
    run_dir = tmp_path / "job"
    assert steps(run_dir) == [10, 13]
    assert checkpoints.is_complete(checkpoints.Checkpoint(13, run_dir / "checkpoint-13"), world_size=2)


@pytest.mark.timeout(1500)
def test_two_nodes_preempted_three_times_lose_no_step_and_end_with_the_uninterrupted_weights(tmp_path):
    run_dir = tmp_path / "job"
    holds = preemption_steps(PREEMPTION_SEED, 3, int(TWO_NODES["KUEUE_COHORTS_DEMO_MAX_STEPS"]))
    reference = start_nodes(tmp_path, "reference", **TWO_NODES)
    started: list[TrainerProcess] = list(reference)
    try:
        resumed_from = None
        for hold in holds:
            nodes = start_nodes(tmp_path, "job", KUEUE_COHORTS_TEST_HOLD=f"step:{hold}", **TWO_NODES)
            started += nodes
            for node in nodes:
                node.wait_for(rf"^HOLD step {hold}$")
            for node in nodes:  # Kueue's preemption deletes every pod of the TrainJob: every node gets SIGTERM
                node.send(signal.SIGTERM)
            wait_all(nodes, PREEMPTED_EXIT_CODE)
            if resumed_from is not None:
                assert f"resuming from {run_dir / f'checkpoint-{resumed_from}'} at global step {resumed_from}" \
                    in nodes[0].ours()
            in_flight = hold + 1
            for node in nodes:
                assert any(line.startswith(f"preempted: stopped at global step {in_flight} with "
                                           f"checkpoint-{in_flight} complete") for line in node.ours()), node.log()
            assert saves_after_signal(nodes[0].ours()) == [f"checkpoint-{in_flight}"]  # one checkpoint per preemption
            newest = checkpoints.newest_complete(run_dir, world_size=2)
            assert newest.step == in_flight  # the next attempt loses nothing beyond the step in flight
            assert checkpoints.is_complete(newest, world_size=2)
            assert sorted(p.name for p in newest.path.glob("rng_state*")) == ["rng_state_0.pth", "rng_state_1.pth"]
            resumed_from = in_flight

        final = start_nodes(tmp_path, "job", **TWO_NODES)
        started += final
        wait_all(final)
        assert (
            f"resuming from {run_dir / f'checkpoint-{resumed_from}'} at global step {resumed_from}" in final[0].ours()
        )
        assert "training finished at global step 30" in final[0].ours()
        wait_all(reference)
    finally:
        kill_all(started)
    expected = weights(tmp_path / "reference" / "checkpoint-30")
    actual = weights(run_dir / "checkpoint-30")
    assert expected.keys() == actual.keys() and expected
    for name in expected:
        assert torch.equal(expected[name], actual[name]), name


@pytest.mark.timeout(600)
def test_save_on_each_node_on_the_shared_volume_is_forced_off_and_only_rank_0_rotates(tmp_path):
    knobs = {**KNOBS, "KUEUE_COHORTS_DEMO_SAVE_STEPS": "5", "KUEUE_COHORTS_DEMO_SAVE_TOTAL_LIMIT": "1",
             "KUEUE_COHORTS_TEST_SAVE_ON_EACH_NODE": "1"}
    nodes = start_nodes(tmp_path, "job", **knobs)
    try:
        wait_all(nodes)
    finally:
        kill_all(nodes)
    for node in nodes:
        assert any(line.startswith("save_on_each_node=True ignored") for line in node.ours()), node.log()
        assert "training finished at global step 30" in node.ours()
        # every node leaves the process group before it exits (a rank once aborted at exit, -6, without it)
        assert node.ours()[-1] == "left the torch.distributed process group", node.log()
    assert any("rotated away" in line for line in nodes[0].ours())
    assert not any("rotated away" in line for line in nodes[1].ours())
    assert steps(tmp_path / "job") == [30]
    assert checkpoints.is_complete(checkpoints.Checkpoint(30, tmp_path / "job" / "checkpoint-30"), world_size=2)
