"""Policy pack overhead: wall time of `pulumi preview` of the dev stack (render mode) with and without the pack.

Prints the runs and medians and writes benchmarks/results/policy.json. Usage: python -m benchmarks.policy [--runs N]
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from deploy import engine
from deploy.scratch import Project

RESULTS = Path(__file__).resolve().parent / "results" / "policy.json"


def measure(runs: int) -> dict:
    """Preview the dev stack `runs` times without and with the policy pack; returns seconds per run and medians."""
    out = {}
    for policy in (False, True):
        times = []
        for _ in range(runs):
            tmp = Path(tempfile.mkdtemp(prefix="bench-policy-"))
            project = Project(tmp)
            project.render_to("dev", tmp / "rendered")
            stack = project.open("dev")
            kwargs = engine.run_kwargs(stack, policy=policy, color="never")
            start = time.monotonic()
            stack.preview(**kwargs)
            times.append(time.monotonic() - start)
        out["with_pack" if policy else "without_pack"] = {
            "runs_s": [round(t, 2) for t in times], "median_s": round(statistics.median(times), 2)}
    out["overhead_median_s"] = round(out["with_pack"]["median_s"] - out["without_pack"]["median_s"], 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    figures = measure(parser.parse_args().runs)
    print(json.dumps(figures, indent=1))
    RESULTS.write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
