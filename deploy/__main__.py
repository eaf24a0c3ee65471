"""``python -m deploy``: see deploy.cli."""
from deploy.cli import main
from kueue_cohorts.scaffold import run_main

raise SystemExit(run_main(main))
