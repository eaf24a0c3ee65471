"""``python -m kueue_cohorts.prsummary``: see prsummary.cli."""
from kueue_cohorts.prsummary.cli import main
from kueue_cohorts.scaffold import run_main

raise SystemExit(run_main(main))
