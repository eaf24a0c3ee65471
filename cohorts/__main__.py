"""``python -m cohorts``: see cohorts.cli."""
from cohorts.cli import main
from kueue_cohorts.scaffold import run_main

raise SystemExit(run_main(main))
