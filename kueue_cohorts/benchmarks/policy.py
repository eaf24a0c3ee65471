"""Policy pack overhead: wall time of `pulumi preview` with and without the CrossGuard pack, on the dev stack and on a
symmetric cohort of N tenants (render mode: no cluster), and the pack's cost per resource.

Run: ``python -m kueue_cohorts.benchmarks.policy [--runs 3] [--tenants 500] [--write]``. Prints the runs and medians;
``--write`` rewrites benchmarks/results/policy.json.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from pulumi.automation.events import OpType

from kueue_cohorts.benchmarks import add_write_flag, load_average, save, summary, utc_now
from kueue_cohorts.deploy import engine
from kueue_cohorts.deploy.scratch import Project


def _shared_pool_config(tenants: int, render_dir: Path) -> dict[str, Any]:
    """``config:`` of a render-mode stack with one symmetric cohort of ``tenants`` tenants (1 cpu, 4Gi, 1 GPU
    floor each; one node pool holding exactly the sum)."""
    floor = {"cpu": "1", "memory": "4Gi", "nvidia.com/gpu": "1"}
    return {
        "kueue-cohorts:cluster": {"mode": "render", "renderDir": str(render_dir)},
        "kueue-cohorts:nodePools": [{"name": "gpu", "count": 1, "capacity": {
            "cpu": str(tenants), "memory": f"{4 * tenants}Gi", "nvidia.com/gpu": str(tenants)}}],
        "kueue-cohorts:resourceFlavor": {"name": "bench"},
        "kueue-cohorts:sharedPool": {
            "cohort": "bench-pool",
            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
            "tenants": [{"name": f"tenant-{i:04d}", "floor": floor} for i in range(tenants)],
        },
    }


def _preview(target: str, policy: bool) -> tuple[float, int, float]:
    """One preview of ``target`` ("dev" or "pool-<N>") in a fresh scratch project; return (seconds, resources
    to create, 1-minute load average before)."""
    with tempfile.TemporaryDirectory(prefix="bench-policy-") as scratch:
        return _preview_in(Path(scratch), target, policy)


def _preview_in(tmp: Path, target: str, policy: bool) -> tuple[float, int, float]:
    project = Project(tmp)
    if target == "dev":
        name = "dev"
        project.render_to(name, tmp / "rendered")
    else:
        name = "bench"
        tenants = int(target.split("-", 1)[1])
        project.stack_file(name).write_text(yaml.safe_dump({"config": _shared_pool_config(tenants, tmp / "r")}))
    stack = project.open(name)
    kwargs = engine.run_kwargs(stack, policy=policy, color="never")
    load = load_average()[0]
    start = time.monotonic()
    result = stack.preview(**kwargs)
    return time.monotonic() - start, result.change_summary.get(OpType.CREATE, 0), load


def measure(runs: int, targets: list[str]) -> dict[str, Any]:
    """Preview each target ``runs`` times without, then with the pack; return seconds per run, medians, loads and
    the overhead per resource (median difference / resources)."""
    out = {}
    for target in targets:
        figures: dict[str, Any] = {}
        for policy in (False, True):
            samples = [_preview(target, policy) for _ in range(runs)]
            figures["with_pack" if policy else "without_pack"] = {
                "runs_s": [round(s, 2) for s, _, _ in samples],
                "median_s": round(statistics.median(s for s, _, _ in samples), 2),
                "load1_before": [load for _, _, load in samples]}
            figures["resources"] = samples[0][1]
        overhead = figures["with_pack"]["median_s"] - figures["without_pack"]["median_s"]
        figures["overhead_median_s"] = round(overhead, 2)
        figures["overhead_per_resource_ms"] = round(1000 * overhead / max(figures["resources"], 1), 2)
        figures["with_vs_without"] = round(figures["with_pack"]["median_s"] / figures["without_pack"]["median_s"], 2)
        out[target] = figures
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the previews, print the figures; with ``--write`` record them. Returns 0."""
    parser = argparse.ArgumentParser(allow_abbrev=False, prog="python -m kueue_cohorts.benchmarks.policy",
                                     description=summary(__doc__))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tenants", type=int, nargs="*", default=[500],
                        help="also preview a symmetric cohort of this many tenants (default 500; none: dev only)")
    add_write_flag(parser)
    args = parser.parse_args(argv)
    started, load_start = utc_now(), load_average()
    figures = measure(args.runs, ["dev", *[f"pool-{n}" for n in args.tenants]])
    for target, f in figures.items():
        print(f"{target}: {f['resources']} resources, preview without pack {f['without_pack']['median_s']} s, "
              f"with pack {f['with_pack']['median_s']} s (x{f['with_vs_without']}; "
              f"{f['overhead_per_resource_ms']} ms per resource; medians of {args.runs})")
    save("policy", {
        "benchmark": "policy",
        "what": "pulumi preview (render mode, Automation API as deploy runs it) without and with the policy pack",
        "command": f"python -m kueue_cohorts.benchmarks.policy --runs {args.runs} "
                   f"--tenants {' '.join(map(str, args.tenants))}",
        "measured_at": started,
        "machine": {"loadavg_1_5_15_start": load_start, "loadavg_1_5_15_end": load_average()},
        "targets": figures,
    }, args.write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
