"""The what-if simulator against the real Kueue 0.19.2: seeded traces replayed in the sandbox, agreement and time.

For each layout of `whatif.replay.AGREEMENT_LAYOUTS` (the guide's asymmetric cohort, the symmetric floors, two
flavors) and each seed (default 1 to 5), a six-workload agreement trace is simulated and replayed as Jobs in a
sandbox of its own (`whatif.replay.run_agreement`: instant by instant, the next one once Kueue has settled); the
admissions and the preemptions (victim, preemptor, reason) are compared instant by instant. Printed per run: the
size, whether it agrees (else the first difference), the replay's wall-clock seconds and the simulation's; with the
load average. `--write` records benchmarks/results/whatif_agreement.json. Needs the toolchain's binaries.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from kubernetes import config as kconfig

from kueue_cohorts.benchmarks import add_write_flag, load_average, save, summary, utc_now
from kueue_cohorts.components.settings.stackfile import stack_path
from kueue_cohorts.sandbox.cluster import Sandbox
from kueue_cohorts.sandbox.paths import SandboxPaths
from kueue_cohorts.whatif.kueue import setup_from_objects
from kueue_cohorts.whatif.replay import AGREEMENT_LAYOUTS, agreement_trace, run_agreement
from kueue_cohorts.whatif.scheduler import simulate


def main(argv: list[str] | None = None) -> int:
    """Run the agreement replays in a fresh sandbox; print (and with --write record) the figures. Exit 0 when every
    run agrees, 1 otherwise."""
    parser = argparse.ArgumentParser(allow_abbrev=False, prog="python -m kueue_cohorts.benchmarks.whatif_agreement",
                                     description=summary(__doc__))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--layouts", nargs="+", choices=sorted(AGREEMENT_LAYOUTS), default=list(AGREEMENT_LAYOUTS))
    parser.add_argument("--count", type=int, default=6, help="workloads per trace (default 6)")
    add_write_flag(parser)
    args = parser.parse_args(argv)
    load_before = load_average()
    runs = []
    with tempfile.TemporaryDirectory(prefix="whatif-agreement-") as tmp:
        box = Sandbox(SandboxPaths(Path(tmp)))
        try:
            box.up(stack_path("dev"))
            api = kconfig.new_client_from_config(config_file=str(box.paths.kubeconfig))
            for layout in args.layouts:
                objects, queues = AGREEMENT_LAYOUTS[layout]
                setup = setup_from_objects(objects)
                for seed in args.seeds:
                    started = time.perf_counter()
                    simulate(setup, agreement_trace(setup, queues, seed, count=args.count))
                    simulated = time.perf_counter() - started
                    run = run_agreement(api, layout, seed, count=args.count)
                    result = run.agreement
                    runs.append({"layout": layout, "seed": seed, "workloads": run.workloads,
                                 "admissions": result.admissions, "preemptions": result.preemptions,
                                 "agrees": result.equal, "first_difference": result.first_difference,
                                 "replay_s": round(run.replay_seconds, 1), "simulate_s": round(simulated, 3)})
                    print(f"{layout:>12} seed {seed}: {run.workloads} workloads, {result.admissions} admissions, "
                          f"{result.preemptions} preemptions: "
                          f"{'agrees' if result.equal else 'DIFFERS: ' + str(result.first_difference)} "
                          f"(replay {run.replay_seconds:.0f} s, simulation {simulated:.3f} s)", flush=True)
        finally:
            box.down()
    load_after = load_average()
    agreeing = sum(1 for r in runs if r["agrees"])
    print(f"agreement: {agreeing}/{len(runs)} traces; load average {load_before[0]:.1f} -> {load_after[0]:.1f}")
    save("whatif_agreement", {
        "what": "six-workload agreement traces per layout, simulated and replayed in the sandbox (Kueue 0.19.2); "
                "admissions and preemptions compared instant by instant",
        "measured_at": utc_now(), "load_average_before": load_before, "load_average_after": load_after,
        "agreeing": agreeing, "runs": runs}, args.write)
    return 0 if agreeing == len(runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
