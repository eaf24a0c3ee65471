"""``python -m kueue_cohorts.deploy``: see deploy.cli."""
from kueue_cohorts.deploy.cli import main
from kueue_cohorts.scaffold import run_main

raise SystemExit(run_main(main))
