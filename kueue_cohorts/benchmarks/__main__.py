"""``python -m kueue_cohorts.benchmarks`` (``make bench``): see benchmarks.cli."""
from kueue_cohorts.benchmarks.cli import main
from kueue_cohorts.scaffold import run_main

raise SystemExit(run_main(main))
