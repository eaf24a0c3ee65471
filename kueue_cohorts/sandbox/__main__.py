"""``python -m kueue_cohorts.sandbox``: see sandbox.cli."""
from kueue_cohorts.sandbox.cli import main
from kueue_cohorts.scaffold import run_main

raise SystemExit(run_main(main))
