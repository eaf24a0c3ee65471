"""``python -m benchmarks`` (``make bench``): see benchmarks.cli."""
from benchmarks.cli import main
from kueue_cohorts.scaffold import run_main

raise SystemExit(run_main(main))
