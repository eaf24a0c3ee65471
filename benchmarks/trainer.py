"""Benchmark of the checkpoint-safe entrypoint: training steps lost per preemption (goal 0) and checkpoint times.

Run: ``python -m benchmarks.trainer [--preemptions 5] [--seed 7]``. Writes benchmarks/results/trainer.json and
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
"""
from __future__ import annotations

import argparse
import json
import platform
import random
import re
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "trainer.json"
SAVE_STEPS = 20
MAX_STEPS = 400


# --- the recipe the benchmark runs (imported inside the trainer processes) -------------------------------------------


def build_trainer(output_dir: str):
    """The demo recipe with `_save_checkpoint` timed: prints `[bench] save checkpoint-N <seconds>` to stderr."""
    from transformers import Trainer

    from trainer import demo

    class TimedSaveTrainer(Trainer):
        def _save_checkpoint(self, model, trial):
            started = time.perf_counter()
            super()._save_checkpoint(model, trial)
            elapsed = time.perf_counter() - started
            sys.stderr.write(f"[bench] save checkpoint-{self.state.global_step} {elapsed:.6f}\n")
            sys.stderr.flush()

    return demo.build_trainer(output_dir, trainer_class=TimedSaveTrainer)


# --- the driver ------------------------------------------------------------------------------------------------------


def _env() -> dict[str, str]:
    from tests.trainer.process import trainer_env

    return trainer_env(
        KUEUE_COHORTS_RECIPE="benchmarks.trainer:build_trainer",
        KUEUE_COHORTS_DEMO_MAX_STEPS=str(MAX_STEPS),
        KUEUE_COHORTS_DEMO_SAVE_STEPS=str(SAVE_STEPS),
        KUEUE_COHORTS_DEMO_SAVE_TOTAL_LIMIT="2",
        KUEUE_COHORTS_DEMO_EVAL_STEPS="10",
    )


def _start(root: Path, run: str):
    from tests.trainer.process import TrainerProcess

    argv = [sys.executable, "-m", "trainer", "--checkpoint-root", str(root), "--run-name", run]
    return TrainerProcess(argv, _env(), cwd=ROOT)


def _figures(lines: list[str]) -> tuple[list[float], list[float]]:
    flush = [float(m.group(1)) for line in lines if (m := re.search(r"files flushed in ([0-9.]+) s", line))]
    save = [float(m.group(1)) for line in lines if (m := re.match(r"\[bench\] save checkpoint-\d+ ([0-9.]+)", line))]
    return flush, save


def _summary(values: list[float]) -> dict:
    if not values:
        return {"samples": 0}
    return {"samples": len(values), "median": round(statistics.median(values), 6), "max": round(max(values), 6),
            "min": round(min(values), 6)}


def measure(preemptions: int, seed: int) -> dict:
    """Run the benchmark; return the results document (also the JSON written to benchmarks/results/trainer.json)."""
    import torch
    from safetensors.torch import load_file

    from trainer import checkpoints

    chooser = random.Random(seed)
    lost, latency, flush, save, stops = [], [], [], [], []
    with tempfile.TemporaryDirectory(prefix="bench-trainer-") as tmp:
        root = Path(tmp)
        reference = _start(root, "reference")
        resumed_from = 0
        for _ in range(preemptions):
            process = _start(root, "preempted")
            process.wait_for(r"saved checkpoint-\d+ ", timeout=600)
            time.sleep(chooser.uniform(0.0, 0.3))
            sent = time.perf_counter()
            process.send(signal.SIGTERM)
            code = process.wait()
            latency.append(time.perf_counter() - sent)
            assert code == 0, process.log()
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
        "command": "python -m benchmarks.trainer --preemptions %d --seed %d" % (preemptions, seed),
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


def main(argv: list[str] | None = None) -> int:
    """CLI: run, print a summary, write benchmarks/results/trainer.json. Returns 0."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.trainer", description=__doc__.splitlines()[0])
    parser.add_argument("--preemptions", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    ns = parser.parse_args(argv)
    results = measure(ns.preemptions, ns.seed)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(f"steps lost per preemption: {results['steps_lost_per_preemption']} (goal 0; periodic saves only: "
          f"~{results['periodic_saves_only_expected_steps_lost']:.0f} on average)")
    print(f"final weights equal to an uninterrupted run: {results['final_weights_equal_uninterrupted_run']}")
    for key in ("checkpoint_flush_seconds", "checkpoint_save_seconds", "sigterm_to_exit_seconds"):
        print(f"{key}: {results[key]}")
    print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
