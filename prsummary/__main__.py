"""``python -m prsummary``: see prsummary.cli."""
from kueue_cohorts.scaffold import run_main
from prsummary.cli import main

raise SystemExit(run_main(main))
