"""Benchmark of the real engine on the symmetric layout: `pulumi preview` and a render-mode `up` for 10, 100 and 500
tenants, next to `kubectl apply --dry-run=client` of the same rendered manifests.

Run: ``python -m benchmarks.engine [--tenants 10 100 500] [--kubeconfig PATH]``. Writes
benchmarks/results/engine.json and prints a table with the ratios and the growth from 100 to 500 tenants.

Each size gets a fresh temporary project copy (Pulumi.yaml + one generated stack file), a fresh file backend and a
fresh render directory, so every preview is "everything to create" and every up creates everything. kubectl needs
an API server for its REST mapping even with --dry-run=client: it is pointed at ``--kubeconfig`` (default: the
sandbox's, when running), and the figure is omitted with the reason when none is reachable.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import yaml

import toolchain
from deploy import engine

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "engine.json"


def shared_pool_stack(tenants: int, render_dir: Path) -> dict:
    """Return a stack document (``{"config": {...}}``) with a symmetric cohort of ``tenants`` tenants.

    Each tenant has a floor of 1 cpu, 4Gi memory and 1 nvidia.com/gpu; one node pool holds exactly the sum.
    """
    return {"config": {
        "kueue-cohorts:cluster": {"mode": "render", "renderDir": str(render_dir)},
        "kueue-cohorts:nodePools": [{"name": "gpu", "count": tenants,
                                     "capacity": {"cpu": "1", "memory": "4Gi", "nvidia.com/gpu": "1"}}],
        "kueue-cohorts:resourceFlavor": {"name": "bench"},
        "kueue-cohorts:sharedPool": {
            "cohort": "bench-pool",
            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
            "tenants": [{"name": f"tenant-{i:03d}", "floor": {"cpu": "1", "memory": "4Gi", "nvidia.com/gpu": "1"}}
                        for i in range(tenants)],
        },
    }}


def _timed(fn) -> tuple[float, object]:
    start = time.monotonic()
    result = fn()
    return time.monotonic() - start, result


def kubectl_dry_run(render_dir: Path, kubeconfig: Path | None) -> tuple[float | None, str]:
    """Time ``kubectl apply --dry-run=client -R -f <render_dir>``; return (seconds or None, note)."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return None, "kubectl not on PATH"
    if kubeconfig is None or not kubeconfig.is_file():
        return None, "no API server (kubectl's client dry-run still needs discovery): start the sandbox"
    cmd = [kubectl, "--kubeconfig", str(kubeconfig), "apply", "--dry-run=client", "-R", "-f", str(render_dir)]
    seconds, proc = _timed(lambda: subprocess.run(cmd, capture_output=True, text=True))
    if proc.returncode != 0:
        return None, f"kubectl failed: {proc.stderr.strip()[:300]}"
    return seconds, f"{len(proc.stdout.splitlines())} objects ({kubectl})"


def bench_size(tenants: int, kubeconfig: Path | None) -> dict:
    """Run preview, render-mode up and kubectl for one size; return the figures (seconds, counts)."""
    with tempfile.TemporaryDirectory(prefix=f"bench-engine-{tenants}-") as tmp:
        tmp_path = Path(tmp)
        project = tmp_path / "project"
        (project / "stacks").mkdir(parents=True)
        shutil.copy2(ROOT / "Pulumi.yaml", project / "Pulumi.yaml")
        render_dir = tmp_path / "rendered"
        (project / "stacks" / "Pulumi.bench.yaml").write_text(
            yaml.safe_dump(shared_pool_stack(tenants, render_dir), sort_keys=False))
        (tmp_path / "state").mkdir()
        stack = engine.open_stack("bench", work_dir=project, backend=f"file://{tmp_path / 'state'}")
        kwargs = engine.run_kwargs(stack, policy=False, color="never")
        preview_s, preview = _timed(lambda: stack.preview(**kwargs))
        up_s, up = _timed(lambda: stack.up(**kwargs))
        noop_s, _ = _timed(lambda: stack.preview(expect_no_changes=True, **kwargs))
        files = sorted(render_dir.rglob("*.yaml"))
        kubectl_s, kubectl_note = kubectl_dry_run(render_dir, kubeconfig)
        return {
            "tenants": tenants,
            "resources_created": up.summary.resource_changes.get("create", 0),
            "manifests": len(files),
            "preview_s": round(preview_s, 2),
            "up_render_s": round(up_s, 2),
            "preview_no_changes_s": round(noop_s, 2),
            "kubectl_dry_run_client_s": None if kubectl_s is None else round(kubectl_s, 2),
            "kubectl_note": kubectl_note,
            "preview_vs_kubectl": None if not kubectl_s else round(preview_s / kubectl_s, 1),
            "up_vs_kubectl": None if not kubectl_s else round(up_s / kubectl_s, 1),
            "preview_change_summary": preview.change_summary,
        }


def toolchain_builds() -> dict[str, dict]:
    """Return the recorded build of each cached binary (``bin/<name>-<version>/build.json``: seconds per step).

    These are the times of the builds that filled this cache, whatever the state of the shared Go module and
    build caches was then (see the ``note``), not a controlled cold-build measurement.
    """
    records = {}
    for path in sorted((toolchain.cache_root() / "bin").glob("*/build.json")):
        record = json.loads(path.read_text())
        records[record["output"]] = {"version": record["version"], "seconds": record["seconds"],
                                     "built_at": record["built_at"]}
    return records


def _default_kubeconfig() -> Path | None:
    try:
        from sandbox.paths import kubeconfig_path
    except ImportError:
        return None
    path = kubeconfig_path()
    return path if path.is_file() else None


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark for each ``--tenants`` size, print the table, write benchmarks/results/engine.json."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.engine", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tenants", type=int, nargs="+", default=[10, 100, 500])
    parser.add_argument("--kubeconfig", type=Path, default=None, help="API server for kubectl (default: sandbox)")
    args = parser.parse_args(argv)
    toolchain.ensure(["pulumi", "pulumi-resource-kubernetes"])
    kubeconfig = args.kubeconfig or _default_kubeconfig()
    rows = []
    for n in args.tenants:
        row = bench_size(n, kubeconfig)
        rows.append(row)
        print(f"{n:4d} tenants: {row['resources_created']:5d} resources, preview {row['preview_s']:7.2f} s, "
              f"up(render) {row['up_render_s']:7.2f} s, no-change preview {row['preview_no_changes_s']:7.2f} s, "
              f"kubectl dry-run {row['kubectl_dry_run_client_s']} s ({row['kubectl_note']})", flush=True)
    by_n = {r["tenants"]: r for r in rows}
    growth = {}
    if 100 in by_n and 500 in by_n:
        for key in ("preview_s", "up_render_s", "preview_no_changes_s", "kubectl_dry_run_client_s"):
            a, b = by_n[100][key], by_n[500][key]
            growth[key] = None if not a or b is None else round(b / a, 2)
        print(f"growth 100 -> 500 tenants (5x objects): {growth}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({
        "benchmark": "engine",
        "command": "python -m benchmarks.engine " + " ".join(f"--tenants {n}" for n in args.tenants),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": "2 cores shared with other jobs; wall times, one run each",
        "pulumi": str(toolchain.binary("pulumi")),
        "rows": rows,
        "growth_100_to_500": growth,
        "toolchain_builds": toolchain_builds(),
    }, indent=2) + "\n")
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
