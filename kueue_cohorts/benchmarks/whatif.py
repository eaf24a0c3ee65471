"""How long the what-if simulator takes for a week of demand at 1,000, 10,000 and 100,000 workloads, and how that
time grows (issue 41: "10,000 workloads, preemptions included, in at most 2 s, growing linearly").

One stack (default prod), a seeded synthetic week (`whatif.synth`, seed 1) whose training and tenant rates are
scaled so that the week holds about each target number of workloads, replayed against the stack's Kueue objects
(`whatif.scheduler`): workloads, events, admissions, preemptions, the wall-clock and CPU seconds of the simulation
(best of `--repeat`), microseconds per workload, and the growth factor from one size to the next (the CPU time
ratio divided by the workload ratio: 1.0 is linear), next to the machine's load average. The stack's quota stays
the same, so the larger weeks overload it: `never_admitted` counts the workloads that wait to the end; the
smallest week's rates over ten weeks (`--long-days`) show the growth at the same load. `--write` records
benchmarks/results/whatif.json. Timing never goes into a test.
"""
from __future__ import annotations

import argparse
import os
import platform
import time
from typing import Any

from kueue_cohorts import PROJECT_ROOT
from kueue_cohorts.benchmarks import add_write_flag, load_average, save, summary, utc_now
from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.components.settings import raw_from_stack_file
from kueue_cohorts.components.settings.stackfile import stack_path
from kueue_cohorts.whatif.scheduler import simulate
from kueue_cohorts.whatif.stack import setup_of
from kueue_cohorts.whatif.synth import synth

ROOT = PROJECT_ROOT
BASE_RATES = {"training_per_day": 60.0, "tenant_per_day": 24.0}
"""The synth's default rates: a week of the prod stack at these rates holds about 1,000 workloads."""


def measure(stack: str, target: int, repeat: int, days: float = 7.0) -> dict[str, Any]:
    """Workloads, events, admissions, preemptions and the best simulation time (wall and CPU seconds) of a
    synthetic week of `stack` with its training rates scaled to about `target` workloads; with `days` other than 7,
    that many days at those rates (about target * days / 7 workloads)."""
    settings = load_settings(raw_from_stack_file(stack_path(stack, ROOT)))
    scale = target / 1000
    demand = synth(settings, seed=1, days=days, **{k: v * scale for k, v in BASE_RATES.items()})
    setup = setup_of(settings)
    walls, cpus, events, admissions, preemptions, never = [], [], 0, 0, 0, 0
    for _ in range(repeat):
        started, cpu_started = time.perf_counter(), time.process_time()
        result = simulate(setup, demand)
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu_started)
        events = len(result.events)
        admissions, preemptions = len(result.admission_order()), len(result.preemptions())
        never = len(demand.workloads) - len(set(result.admission_order()))
    return {"target": target, "days": days, "workloads": len(demand.workloads), "events": events,
            "admissions": admissions, "preemptions": preemptions, "never_admitted": never,
            "simulate_s": round(min(walls), 3), "cpu_s": round(min(cpus), 3),
            "us_per_workload": round(min(cpus) / max(1, len(demand.workloads)) * 1e6, 1)}


def growth(rows: list[dict[str, Any]]) -> list[float]:
    """From each size to the next: (CPU seconds ratio) / (workload ratio); 1.0 is linear."""
    return [round((b["cpu_s"] / a["cpu_s"]) / (b["workloads"] / a["workloads"]), 2)
            for a, b in zip(rows, rows[1:], strict=False) if a["cpu_s"] > 0]


def main(argv: list[str] | None = None) -> int:
    """Print (and with --write record) the figures. Exit 0."""
    parser = argparse.ArgumentParser(allow_abbrev=False, prog="python -m kueue_cohorts.benchmarks.whatif",
                                     description=summary(__doc__))
    parser.add_argument("--stack", default="prod")
    parser.add_argument("--sizes", nargs="+", type=int, default=[1_000, 10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--long-days", type=float, default=70.0,
                        help="also run the smallest size's rates over this many days (default 70: ten weeks at the "
                             "load of the first week; 0: skip)")
    add_write_flag(parser)
    args = parser.parse_args(argv)
    load_before = load_average()
    rows = []
    for size in args.sizes:
        rows.append(measure(args.stack, size, args.repeat if size <= 10_000 else 1))
        row = rows[-1]
        print(f"{row['workloads']:>8} workloads {row['events']:>8} events {row['admissions']:>7} admitted "
              f"{row['never_admitted']:>6} never {row['preemptions']:>6} preempted  "
              f"wall {row['simulate_s']:>7.2f} s  cpu {row['cpu_s']:>7.2f} s  "
              f"{row['us_per_workload']:>6.0f} us/workload  load {load_average()[0]:.1f}", flush=True)
    factors = growth(rows)
    print("growth per step (cpu ratio / workload ratio, 1.0 = linear): " + ", ".join(
        f"{a['workloads']:,} -> {b['workloads']:,}: {f:.2f}" for a, b, f in zip(rows, rows[1:], factors, strict=False)))
    longer: dict[str, Any] | None = None
    if args.long_days > 0 and rows:
        longer = measure(args.stack, args.sizes[0], args.repeat, args.long_days)
        longer["growth"] = growth([rows[0], longer])[0]
        print(f"the {args.sizes[0]:,} week's rates over {args.long_days:g} days: {longer['workloads']:,} workloads "
              f"{longer['preemptions']} preempted  wall {longer['simulate_s']:.2f} s  cpu {longer['cpu_s']:.2f} s  "
              f"growth {longer['growth']:.2f} (the same load, a longer trace)", flush=True)
    load_after = load_average()
    print(f"load average {load_before[0]:.1f} -> {load_after[0]:.1f} on {os.cpu_count()} cores")
    save("whatif", {
        "what": (f"a synthetic week (seed 1) of the {args.stack} stack at about {', '.join(map(str, args.sizes))} "
                 f"workloads replayed by the what-if simulator; best of {args.repeat} runs up to 10,000, one above"),
        "measured_at": utc_now(),
        "machine": {"cores": os.cpu_count(), "python": platform.python_version(),
                    "load_average_before": load_before, "load_average_after": load_after},
        "stack": args.stack, "sizes": rows, "growth": factors, "same_load_longer": longer}, args.write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
