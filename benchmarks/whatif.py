"""How long the what-if simulator takes for a week of demand (issue 32: "a week of a 1,000-workload trace in seconds").

For each stack (default prod, staging, mixed), a seeded synthetic week (`whatif.synth`, seed 1; staging with the
rates raised to reach about 1,000 workloads) replayed against the stack's Kueue objects (`whatif.scheduler`):
workloads, events (admissions, preemptions, ...) and the seconds the simulation took (best of `--repeat`), next to
the machine's load average. `--write` records benchmarks/results/whatif.json. Timing never goes into a test.
"""
from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path
from typing import Any

from benchmarks import add_write_flag, load_average, save, summary, utc_now
from components.checks.validation import load_settings
from components.settings import raw_from_stack_file
from whatif.scheduler import simulate
from whatif.stack import setup_of
from whatif.synth import synth

ROOT = Path(__file__).resolve().parents[1]
RATES = {"staging": {"training_per_day": 90.0, "tenant_per_day": 30.0}}
"""Synth rates per stack where the defaults give fewer than about 1,000 workloads a week."""


def measure(stack: str, repeat: int) -> dict[str, Any]:
    """Workloads, events and the best simulation time (seconds) of a synthetic week of `stack`."""
    settings = load_settings(raw_from_stack_file(ROOT / "stacks" / f"Pulumi.{stack}.yaml"))
    demand = synth(settings, seed=1, days=7, **RATES.get(stack, {}))
    setup = setup_of(settings)
    times, events, admissions, preemptions = [], 0, 0, 0
    for _ in range(repeat):
        started = time.perf_counter()
        result = simulate(setup, demand)
        times.append(time.perf_counter() - started)
        events = len(result.events)
        admissions, preemptions = len(result.admission_order()), len(result.preemptions())
    return {"workloads": len(demand.workloads), "events": events, "admissions": admissions,
            "preemptions": preemptions, "simulate_s": round(min(times), 3)}


def main(argv: list[str] | None = None) -> int:
    """Print (and with --write record) the figures. Exit 0."""
    parser = argparse.ArgumentParser(allow_abbrev=False, prog="python -m benchmarks.whatif",
                                     description=summary(__doc__))
    parser.add_argument("--stacks", nargs="+", default=["prod", "staging", "mixed"])
    parser.add_argument("--repeat", type=int, default=3)
    add_write_flag(parser)
    args = parser.parse_args(argv)
    load_before = load_average()
    rows = {stack: measure(stack, args.repeat) for stack in args.stacks}
    load_after = load_average()
    print(f"{'stack':>8} {'workloads':>10} {'events':>8} {'admitted':>9} {'preempted':>10} {'simulate s':>11}")
    for stack, row in rows.items():
        print(f"{stack:>8} {row['workloads']:>10} {row['events']:>8} {row['admissions']:>9} {row['preemptions']:>10} "
              f"{row['simulate_s']:>11.2f}")
    print(f"load average {load_before[0]:.1f} -> {load_after[0]:.1f} on {os.cpu_count()} cores")
    save("whatif", {
        "what": f"a synthetic week (seed 1) per stack replayed by the what-if simulator; best of {args.repeat} runs",
        "measured_at": utc_now(),
        "machine": {"cores": os.cpu_count(), "python": platform.python_version(),
                    "load_average_before": load_before, "load_average_after": load_after},
        "stacks": rows}, args.write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
