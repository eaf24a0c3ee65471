"""How the settings check scales with the number of shared-pool tenants (issue 15, item 1).

For N tenants (default 1,000 2,000 5,000 10,000), in one process, each phase timed separately (best of
`--repeat`): the shape (`settings.parse_settings`), the planner (`plans.plan_shared_pool`, which was quadratic:
1,000 tenants took 3.5 s, 2,000 took 19 s), rendering the whole stack (`render.render_stack`), and the whole
settings check (`validation.validate`: shape, settings-only rules, rendering and every rule of the rule book).
Each phase is timed with Python's cyclic collector paused, as `validate` runs them (see
`validation.cyclic_collector_paused`). Printed with the growth per 10x tenants (1.0 = linear) and the machine's
load average; `--write` records benchmarks/results/planning.json. Timing never goes into a test;
`tests/unit/components/model/test_planning_scale.py` counts work.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any, Callable

from kueue_cohorts.benchmarks import summary
from kueue_cohorts.components.checks.validation import cyclic_collector_paused, validate
from kueue_cohorts.components.model.plans import plan_shared_pool
from kueue_cohorts.components.model.render import render_stack
from kueue_cohorts.components.settings import parse_settings

RESULTS = Path(__file__).resolve().parent / "results" / "planning.json"


def pool_config(tenants: int) -> dict[str, Any]:
    """A shared pool of `tenants` tenants, each a floor of 1 cpu, 1Gi and 1 GPU, on as many 8-GPU nodes as needed."""
    return {
        "cluster": {"mode": "render", "renderDir": "build/rendered/bench"},
        "nodePools": [{"name": "gpu", "count": tenants,
                       "capacity": {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": "8"}}],
        "sharedPool": {"cohort": "pool", "tenants": [
            {"name": f"t{i}", "floor": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}} for i in range(tenants)]},
    }


def best(run: Callable[[], Any], repeat: int) -> float:
    """The fastest of `repeat` runs, in seconds."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def measure(tenants: int, repeat: int) -> dict[str, float]:
    """Seconds per phase for `tenants` tenants."""
    raw = pool_config(tenants)
    settings = parse_settings(raw)
    assert settings.shared_pool is not None
    pool = settings.shared_pool
    result = validate(raw)
    assert not result.problems, result.problems[:3]
    with cyclic_collector_paused():  # the phases as the check runs them (validate pauses the collector itself)
        return {
            "shape_s": best(lambda: parse_settings(raw), repeat),
            "plan_s": best(lambda: plan_shared_pool(pool, "default-flavor"), repeat),
            "render_s": best(lambda: render_stack(settings), repeat),
            "settings_check_s": best(lambda: validate(raw), repeat),
        }


def main(argv: list[str] | None = None) -> int:
    """Print (and with --write record) the scaling figures. Exit 0."""
    parser = argparse.ArgumentParser(allow_abbrev=False, prog="python -m kueue_cohorts.benchmarks.planning",
                                     description=summary(__doc__))
    parser.add_argument("--tenants", type=int, nargs="+", default=[1000, 2000, 5000, 10000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--write", action="store_true", help=f"record the figures in {RESULTS.name}")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    rows = {n: measure(n, args.repeat) for n in args.tenants}
    load_after = os.getloadavg()
    print(f"{'tenants':>8} {'shape s':>9} {'plan s':>9} {'render s':>9} {'check s':>9}")
    for n, row in rows.items():
        print(f"{n:>8} {row['shape_s']:>9.3f} {row['plan_s']:>9.3f} {row['render_s']:>9.3f} "
              f"{row['settings_check_s']:>9.3f}")
    low, high = min(rows), max(rows)
    growth = {phase: round((rows[high][phase] / rows[low][phase]) / (high / low), 2) for phase in rows[low]}
    print(f"growth {low} -> {high} tenants, relative to linear (1.0 = linear): {growth}")
    print(f"load average before {load_before}, after {load_after}; {os.cpu_count()} cores")
    if args.write:
        RESULTS.write_text(json.dumps({
            "date": time.strftime("%Y-%m-%d"), "machine": platform.machine(), "cores": os.cpu_count(),
            "load_average_before": load_before, "load_average_after": load_after, "repeat": args.repeat,
            "seconds": {str(n): row for n, row in rows.items()}, "growth_vs_linear": growth,
        }, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
