"""``python -m kueue_cohorts.benchmarks [--write] [--only NAME ...]`` (``make bench``): run every benchmark, one after
the other.

Each prints its figures; with ``--write`` each also rewrites its ``benchmarks/results/<name>.json``. A benchmark
that fails is reported and the others still run; the exit code is 1 if any failed, else 0.
"""

from __future__ import annotations

import argparse
import runpy
import sys
import time
import traceback

from kueue_cohorts.benchmarks import summary
from kueue_cohorts.scaffold import Tool, add_verbose

#: Every benchmark module, in the order ``make bench`` runs them (cheap ones first).
BENCHMARKS = ["planning", "whatif", "policy", "trainer", "toolchain", "engine", "sandbox", "tas", "trainjob",
              "whatif_agreement", "mutation", "fuzz"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--write`` and ``--only NAME ...`` to ``parser`` (``python -m kueue_cohorts.benchmarks`` and ``kueue-cohorts
    bench``); ``run`` reads the Namespace it gives."""
    parser.add_argument("--write", action="store_true", help="let every benchmark rewrite its results file")
    parser.add_argument("--only", nargs="+", choices=BENCHMARKS, default=BENCHMARKS, metavar="NAME",
                        help=f"run only these ({', '.join(BENCHMARKS)})")
    add_verbose(parser, "show the Python traceback of a benchmark that crashes")


def run(args: argparse.Namespace) -> int:
    """Run the benchmarks ``args.only`` (``--write`` passed on); return 0, or 1 if any failed."""
    failed = []
    for name in [b for b in BENCHMARKS if b in args.only]:
        module = f"kueue_cohorts.benchmarks.{name}"
        print(f"== {module}", flush=True)
        start = time.monotonic()
        sys.argv = [module, *(["--write"] if args.write else [])]
        try:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception as exc:  # noqa: BLE001 - one benchmark's crash must not stop the others
            if args.verbose:
                traceback.print_exc()
            print(f"{module} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            code = 1
        print(f"== {module}: {'ok' if code == 0 else f'FAILED (exit {code})'} in {time.monotonic() - start:.0f} s",
              flush=True)
        if code:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


#: ``python -m kueue_cohorts.benchmarks``: the same as ``kueue-cohorts bench``.
TOOL = Tool("python -m kueue_cohorts.benchmarks", summary(__doc__), add_arguments, run)
main = TOOL.main
