"""``python -m kueue_cohorts.cohorts``: see cohorts.cli."""
from kueue_cohorts.cohorts.cli import main
from kueue_cohorts.scaffold import run_main

raise SystemExit(run_main(main))
