"""Benchmark of the checkpoint-safe entrypoint: training steps lost per preemption (goal 0) and checkpoint times.

Run: ``python -m kueue_cohorts.benchmarks.trainer [--preemptions 5] [--seed 7]``. Writes
benchmarks/results/trainer.json and
prints a summary. Needs requirements-trainer.txt installed.

Method: the tiny demo model (trainer/demo.py, GPT-2 with 2 layers built from a config, CPU, one thread) trains
in `python -m trainer` processes. The run is preempted `--preemptions` times: after the process has written a
periodic checkpoint, the benchmark waits a seeded random 0-300 ms (so the signal lands anywhere in a step, an
evaluation or a save) and sends SIGTERM from outside, as the kubelet does, then restarts the run like a
re-admitted TrainJob. Steps lost per preemption = global step reached when the process stopped - global step the
restart resumed from. The run then finishes and its final weights are compared with an uninterrupted run of the
same seed. Checkpoint figures per save: `flush` (fsync of every file of the checkpoint, logged by the callback)
and `save` (the Trainer's whole `_save_checkpoint` including the flush, timed by this module's recipe). For
contrast, a Trainer with periodic saves only loses save_steps/2 steps per preemption on average (uniform arrival).

Distributed part (`distributed` in the JSON): the demo recipe as two nodes (two `python -m trainer` processes
configured by PET_* like the Kubeflow Trainer's torch plugin, torch.distributed over gloo on CPU), preempted
`--distributed-preemptions` times at global steps drawn with `--seed`: each attempt is held at the start of the drawn
step (trainer/local/recipes.py) and both nodes get SIGTERM there, as when Kueue deletes the TrainJob's pods. The
layout is DDP's, the most sharded one the pinned stack trains on CPU (accelerate 1.15.0 attaches FSDP only to
multi-accelerator runs): every rank writes its `rng_state_<rank>.pth`, rank 0 the shared files. Per node: the bytes
of one checkpoint that node wrote and the seconds it spent flushing (fsync, every node flushes the whole checkpoint)
each checkpoint. An uninterrupted two-node run of the same seed runs alongside; its final weights are compared.

Recipe families (`families` in the JSON, trainer/RECIPES.md): LlamaFactory 0.9.5 (`llamafactory:<config.yaml>`, its
own venv, `make recipe-deps`) trains the tiny Llama of trainer/local/tiny_llamafactory.py and is preempted
`--family-preemptions` times at steps drawn with `--seed` (held inside the step, SIGTERM from outside), then
finishes; steps lost, flush seconds and the final weights against an uninterrupted run are reported. mini_trainer
and training_hub cannot train without CUDA: their entries give the reason (trainer.recipe_native.reason) and the
documented loss bound instead of figures.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kueue_cohorts import PROJECT_ROOT
from kueue_cohorts.benchmarks import summary
from kueue_cohorts.trainer import checkpoints
from kueue_cohorts.trainer import recipe_native as native
from kueue_cohorts.trainer.entrypoint import PREEMPTED_EXIT_CODE
from kueue_cohorts.trainer.local import families
from kueue_cohorts.trainer.local.process import TrainerProcess, kill_all, start_nodes, trainer_env

if TYPE_CHECKING:  # the optional trainer dependency, for annotations only (loaded late at run time)
    from transformers import Trainer

ROOT = PROJECT_ROOT
RESULTS = ROOT / "kueue_cohorts" / "benchmarks" / "results" / "trainer.json"
SAVE_STEPS = 20
MAX_STEPS = 400
DIST_SAVE_STEPS = 10
DIST_MAX_STEPS = 30
FAMILY_SAVE_STEPS = 10
FAMILY_MAX_STEPS = 30
_RANK_FILE = re.compile(r"(?:__(\d+)_\d+\.distcp|rng_state_(\d+)\.pth|.*_rank(\d+)\.bin|.*zero_pp_rank_(\d+)_.*)")


# --- the recipe the benchmark runs (imported inside the trainer processes) -------------------------------------------


def build_trainer(output_dir: str) -> Trainer:
    """The demo recipe with `_save_checkpoint` timed: prints `[bench] save checkpoint-N <seconds>` to stderr."""
    from transformers import Trainer  # noqa: PLC0415  # optional trainer dependency: loaded late

    from kueue_cohorts.trainer import demo  # noqa: PLC0415  # optional trainer dependency: loaded late

    class TimedSaveTrainer(Trainer):  # type: ignore[misc]  # transformers is not type-checked (pyproject.toml)
        def _save_checkpoint(self, model: object, trial: object) -> None:
            started = time.perf_counter()
            super()._save_checkpoint(model, trial)
            elapsed = time.perf_counter() - started
            sys.stderr.write(f"[bench] save checkpoint-{self.state.global_step} {elapsed:.6f}\n")
            sys.stderr.flush()

    return demo.build_trainer(output_dir, trainer_class=TimedSaveTrainer)


# --- the driver ------------------------------------------------------------------------------------------------------


def _env() -> dict[str, str]:

    return trainer_env(
        KUEUE_COHORTS_RECIPE="kueue_cohorts.benchmarks.trainer:build_trainer",
        KUEUE_COHORTS_DEMO_MAX_STEPS=str(MAX_STEPS),
        KUEUE_COHORTS_DEMO_SAVE_STEPS=str(SAVE_STEPS),
        KUEUE_COHORTS_DEMO_SAVE_TOTAL_LIMIT="2",
        KUEUE_COHORTS_DEMO_EVAL_STEPS="10",
    )


def _start(root: Path, run: str) -> TrainerProcess:

    argv = [sys.executable, "-m", "trainer", "--checkpoint-root", str(root), "--run-name", run]
    return TrainerProcess(argv, _env(), cwd=ROOT)


def _figures(lines: list[str]) -> tuple[list[float], list[float]]:
    flush = [float(m.group(1)) for line in lines if (m := re.search(r"files flushed in ([0-9.]+) s", line))]
    save = [float(m.group(1)) for line in lines if (m := re.match(r"\[bench\] save checkpoint-\d+ ([0-9.]+)", line))]
    return flush, save


def _summary(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"samples": 0}
    return {"samples": len(values), "median": round(statistics.median(values), 6), "max": round(max(values), 6),
            "min": round(min(values), 6)}


def measure(preemptions: int, seed: int) -> dict[str, Any]:
    """Run the benchmark; return the results document (also the JSON written to benchmarks/results/trainer.json)."""
    import torch  # noqa: PLC0415  # optional trainer dependency: loaded late
    from safetensors.torch import load_file  # noqa: PLC0415  # optional trainer dependency: loaded late

    chooser = random.Random(seed)
    lost, latency, flush, save, stops = [], [], [], [], []
    with tempfile.TemporaryDirectory(prefix="bench-trainer-") as tmp:
        root = Path(tmp)
        reference = _start(root, "reference")
        for _ in range(preemptions):
            process = _start(root, "preempted")
            process.wait_for(r"saved checkpoint-\d+ ", timeout=600)
            time.sleep(chooser.uniform(0.0, 0.3))
            sent = time.perf_counter()
            process.send(signal.SIGTERM)
            code = process.wait()
            latency.append(time.perf_counter() - sent)
            assert code == PREEMPTED_EXIT_CODE, process.log()
            all_lines = process.lines
            f, s = _figures(all_lines)
            flush += f
            save += s
            stopped = [int(m.group(1)) for line in all_lines
                       if (m := re.search(r"stopped at global step (\d+)", line))]
            finished = any("training finished" in line for line in all_lines)
            assert stopped or finished, process.log()
            step = stopped[0] if stopped else MAX_STEPS
            stops.append(step)
            resumed = checkpoints.newest_complete(root / "preempted")
            lost.append(step - (resumed.step if resumed else 0))
        final = _start(root, "preempted")
        assert final.wait() == 0, final.log()
        assert reference.wait() == 0, reference.log()
        f, s = _figures(final.lines + reference.lines)
        flush += f
        save += s
        expected = load_file(str(root / "reference" / f"checkpoint-{MAX_STEPS}" / "model.safetensors"))
        actual = load_file(str(root / "preempted" / f"checkpoint-{MAX_STEPS}" / "model.safetensors"))
        equal = expected.keys() == actual.keys() and all(torch.equal(expected[k], actual[k]) for k in expected)
        checkpoint = root / "reference" / f"checkpoint-{MAX_STEPS}"
        size = sum(p.stat().st_size for p in checkpoint.iterdir())
        parameters = sum(t.numel() for t in expected.values())
    return {
        "command": f"python -m kueue_cohorts.benchmarks.trainer --preemptions {preemptions:d} --seed {seed:d}",
        "model": "GPT-2 from config: 2 layers, n_embd 32, 2 heads, vocab 64, 32 positions (trainer/demo.py)",
        "parameters": parameters,
        "checkpoint_bytes": size,
        "max_steps": MAX_STEPS,
        "save_steps": SAVE_STEPS,
        "preemptions": preemptions,
        "preempted_at_steps": stops,
        "steps_lost_per_preemption": lost,
        "steps_lost_max": max(lost) if lost else None,
        "periodic_saves_only_expected_steps_lost": SAVE_STEPS / 2,
        "final_weights_equal_uninterrupted_run": equal,
        "sigterm_to_exit_seconds": _summary(latency),
        "checkpoint_flush_seconds": _summary(flush),
        "checkpoint_save_seconds": _summary(save),
        "machine": {"cpus": __import__("os").cpu_count(), "torch_threads": 1, "python": platform.python_version(),
                    "torch": torch.__version__},
    }


def bytes_per_node(checkpoint: Path, nodes: int) -> list[int]:
    """Bytes of one checkpoint by the node (rank) that wrote them: files named for a rank (DCP `__<r>_<n>.distcp`,
    `rng_state_<r>.pth`, `*_rank<r>.bin`, DeepSpeed `zero_pp_rank_<r>_*`) to that rank, every other file (trainer
    state, scheduler, DCP `.metadata`, ...) to rank 0, which writes the shared files."""
    written = [0] * nodes
    for path in checkpoint.rglob("*"):
        if path.is_file() and not path.is_symlink():
            match = _RANK_FILE.fullmatch(path.name)
            rank = int(next(g for g in match.groups() if g is not None)) if match else 0
            written[rank] += path.stat().st_size
    return written


def measure_distributed(preemptions: int, seed: int, nodes: int = 2) -> dict[str, Any]:
    """The two-node part: returns the `distributed` section of the results document."""

    import torch  # noqa: PLC0415  # optional trainer dependency: loaded late
    from safetensors.torch import load_file  # noqa: PLC0415  # optional trainer dependency: loaded late

    env = {"KUEUE_COHORTS_RECIPE": "kueue_cohorts.trainer.local.recipes:build_trainer",
           "KUEUE_COHORTS_DEMO_MAX_STEPS": str(DIST_MAX_STEPS), "KUEUE_COHORTS_DEMO_SAVE_STEPS": str(DIST_SAVE_STEPS),
           "KUEUE_COHORTS_DEMO_SAVE_TOTAL_LIMIT": "2"}
    holds = sorted(random.Random(seed).sample(range(1, DIST_MAX_STEPS - 1), preemptions))
    load_before = os.getloadavg()
    lost, stops, latency, saves_after = [], [], [], []
    flush: list[list[float]] = [[] for _ in range(nodes)]
    started = []

    def collect(group: list[TrainerProcess]) -> None:
        for rank, node in enumerate(group):
            flush[rank] += _figures(node.lines)[0]

    with tempfile.TemporaryDirectory(prefix="bench-trainer-dist-") as tmp:
        root = Path(tmp)
        run_dir = root / "preempted"
        try:
            reference = start_nodes(root, "reference", nodes, per_node=None, **env)
            started += reference
            for hold in holds:
                group = start_nodes(root, "preempted", nodes, per_node=None,
                                    KUEUE_COHORTS_TEST_HOLD=f"step:{hold}", **env)
                started += group
                for node in group:
                    node.wait_for(rf"^HOLD step {hold}$", timeout=900)
                sent = time.perf_counter()
                for node in group:
                    node.send(signal.SIGTERM)
                for node in group:
                    assert node.wait() == PREEMPTED_EXIT_CODE, node.log()
                latency.append(time.perf_counter() - sent)
                collect(group)
                stopped = [int(m.group(1)) for line in group[0].lines
                           if (m := re.search(r"stopped at global step (\d+)", line))]
                assert stopped, group[0].log()
                stops.append(stopped[0])
                resumed = checkpoints.newest_complete(run_dir, world_size=nodes)
                lost.append(stopped[0] - (resumed.step if resumed else 0))
                index = [i for i, line in enumerate(group[0].lines) if "SIGTERM received" in line][0]
                saves_after.append(
                    sum(1 for line in group[0].lines[index:] if re.search(r"\] saved checkpoint-", line))
                )
            final = start_nodes(root, "preempted", nodes, per_node=None, **env)
            started += final
            for node in final + reference:
                assert node.wait() == 0, node.log()
            collect(final)
        finally:
            kill_all(started)
        last = f"checkpoint-{DIST_MAX_STEPS}"
        layout = checkpoints.detect_layout(run_dir / last)
        expected, actual = (
            load_file(str(root / run / last / "model.safetensors")) for run in ("reference", "preempted")
        )
        equal = expected.keys() == actual.keys() and all(torch.equal(expected[k], actual[k]) for k in expected)
        per_node = bytes_per_node(root / "reference" / last, nodes)
    return {
        "recipe": "trainer/demo.py, 2 processes, torch.distributed gloo on CPU (DDP: accelerate 1.15.0 attaches FSDP "
                  "only to multi-accelerator runs)",
        "nodes": nodes,
        "layout": f"{layout} with one rng_state_<rank>.pth per rank",
        "max_steps": DIST_MAX_STEPS,
        "save_steps": DIST_SAVE_STEPS,
        "preemptions": preemptions,
        "sigterm_at_steps_in_flight": [hold + 1 for hold in holds],
        "preempted_at_steps": stops,
        "steps_lost_per_preemption": lost,
        "checkpoints_written_after_sigterm": saves_after,
        "periodic_saves_only_expected_steps_lost": DIST_SAVE_STEPS / 2,
        "final_weights_equal_uninterrupted_run": equal,
        "checkpoint_bytes_per_node": per_node,
        "checkpoint_bytes_total": sum(per_node),
        "checkpoint_flush_seconds_per_node": [_summary(values) for values in flush],
        "sigterm_to_exit_seconds": _summary(latency),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }


def measure_llamafactory(preemptions: int, seed: int) -> dict[str, Any]:
    """LlamaFactory 0.9.5 (`llamafactory:<config.yaml>`, its own venv) on the tiny Llama of
    trainer/local/tiny_llamafactory.py:
    preempted at `preemptions` seeded steps (held inside the step, SIGTERM from outside), then finished; compared
    with an uninterrupted run of the same seed."""
    import torch  # noqa: PLC0415  # optional trainer dependency: loaded late
    from safetensors.torch import load_file  # noqa: PLC0415  # optional trainer dependency: loaded late

    holds = sorted(random.Random(seed).sample(range(1, FAMILY_MAX_STEPS - 1), preemptions))
    lost, stops, latency, flush = [], [], [], []
    started: list[TrainerProcess] = []
    with tempfile.TemporaryDirectory(prefix="bench-trainer-llamafactory-") as tmp:
        root = Path(tmp)
        config = families.build_llamafactory_project(
            root / "project", max_steps=FAMILY_MAX_STEPS, save_steps=FAMILY_SAVE_STEPS, save_total_limit=2)
        run_dir = root / "preempted"
        try:
            reference = families.start_llamafactory(root, "reference", config)
            started.append(reference)
            for hold in holds:
                process = families.start_llamafactory(root, "preempted", config,
                                                      KUEUE_COHORTS_TEST_HOLD=f"step:{hold}")
                started.append(process)
                process.wait_for(rf"^HOLD step {hold}$", timeout=900)
                sent = time.perf_counter()
                process.send(signal.SIGTERM)
                assert process.wait() == 0, process.log()
                latency.append(time.perf_counter() - sent)
                flush += _figures(process.lines)[0]
                stopped = [int(m.group(1)) for line in process.lines
                           if (m := re.search(r"stopped at global step (\d+)", line))]
                assert stopped, process.log()
                stops.append(stopped[0])
                resumed = checkpoints.newest_complete(run_dir)
                lost.append(stopped[0] - (resumed.step if resumed else 0))
            final = families.start_llamafactory(root, "preempted", config)
            started.append(final)
            for process in (final, reference):
                assert process.wait() == 0, process.log()
            flush += _figures(final.lines)[0]
        finally:
            kill_all(started)
        last = f"checkpoint-{FAMILY_MAX_STEPS}"
        expected, actual = (
            load_file(str(root / run / last / "model.safetensors")) for run in ("reference", "preempted")
        )
        equal = expected.keys() == actual.keys() and all(torch.equal(expected[k], actual[k]) for k in expected)
    return {
        "recipe": "llamafactory:<config.yaml>, stage sft, finetuning_type full, tiny Llama (2 layers, hidden 32) built "
                  "locally (trainer/local/tiny_llamafactory.py), LlamaFactory 0.9.5 with transformers 5.6.0",
        "flushes_on_sigterm": True,
        "max_steps": FAMILY_MAX_STEPS,
        "save_steps": FAMILY_SAVE_STEPS,
        "sigterm_at_steps_in_flight": [hold + 1 for hold in holds],
        "preempted_at_steps": stops,
        "steps_lost_per_preemption": lost,
        "periodic_saves_only_expected_steps_lost": FAMILY_SAVE_STEPS / 2,
        "final_weights_equal_uninterrupted_run": equal,
        "checkpoint_flush_seconds": _summary(flush),
        "sigterm_to_exit_seconds": _summary(latency),
    }


def measure_families(preemptions: int, seed: int) -> dict[str, Any]:
    """The `families` section: LlamaFactory measured; mini_trainer and training_hub with the reason they cannot run
    on this machine (trainer.recipe_native.reason) and their documented loss bound."""
    results = {"llamafactory": measure_llamafactory(preemptions, seed)}
    for family, algorithm in (("mini-trainer", ""), ("training-hub", "sft"), ("training-hub", "osft")):
        key = f"{family}:{algorithm}" if algorithm else family
        results[key] = {
            "ran": False,
            "reason": native.reason(family, algorithm) or "runs here (CUDA present): not measured by this benchmark",
            "flushes_on_sigterm": True,
            "steps_lost_per_preemption": None,
            "loss_bound_without_sigterm": "everything since the last SIGTERM checkpoint: no periodic full-state "
                                          "save exists (trainer/RECIPES.md)",
        }
    return results


def main(argv: list[str] | None = None) -> int:
    """CLI: run, print a summary, write benchmarks/results/trainer.json. Returns 0."""
    parser = argparse.ArgumentParser(allow_abbrev=False, prog="python -m kueue_cohorts.benchmarks.trainer",
                                     description=summary(__doc__))
    parser.add_argument("--preemptions", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--distributed-preemptions", type=int, default=3)
    parser.add_argument("--family-preemptions", type=int, default=3)
    parser.add_argument("--only", choices=("single", "distributed", "families"), help="run one part; the other "
                        "parts' figures are kept from the existing results file")
    ns = parser.parse_args(argv)
    previous = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    results = dict(previous)
    if ns.only in (None, "single"):
        results.update(measure(ns.preemptions, ns.seed))
    if ns.only in (None, "distributed"):
        results["distributed"] = measure_distributed(ns.distributed_preemptions, ns.seed)
    if ns.only in (None, "families"):
        results["families"] = measure_families(ns.family_preemptions, ns.seed)
    results["command"] = (f"python -m kueue_cohorts.benchmarks.trainer --preemptions {ns.preemptions:d} --seed "
                          f"{ns.seed:d} "
                          f"--distributed-preemptions {ns.distributed_preemptions:d} "
                          f"--family-preemptions {ns.family_preemptions:d}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    if "steps_lost_per_preemption" in results:
        print(f"steps lost per preemption: {results['steps_lost_per_preemption']} (goal 0; periodic saves only: "
              f"~{results['periodic_saves_only_expected_steps_lost']:.0f} on average)")
        print(f"final weights equal to an uninterrupted run: {results['final_weights_equal_uninterrupted_run']}")
        for key in ("checkpoint_flush_seconds", "checkpoint_save_seconds", "sigterm_to_exit_seconds"):
            print(f"{key}: {results[key]}")
    if "distributed" in results:
        dist = results["distributed"]
        print(f"distributed ({dist['nodes']} nodes, {dist['layout']}): steps lost per preemption "
              f"{dist['steps_lost_per_preemption']}, checkpoints written after SIGTERM "
              f"{dist['checkpoints_written_after_sigterm']}, final weights equal: "
              f"{dist['final_weights_equal_uninterrupted_run']}")
        print(f"checkpoint bytes per node: {dist['checkpoint_bytes_per_node']}; flush seconds per node: "
              f"{dist['checkpoint_flush_seconds_per_node']}")
    for family, figures in results.get("families", {}).items():
        if figures.get("ran", True):
            print(f"{family}: steps lost per preemption {figures['steps_lost_per_preemption']}, flush seconds "
                  f"{figures['checkpoint_flush_seconds']}, final weights equal: "
                  f"{figures['final_weights_equal_uninterrupted_run']}")
        else:
            print(f"{family}: not run here: {figures['reason']}")
    print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
