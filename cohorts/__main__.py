"""``python -m cohorts``: see cohorts.cli."""
import sys

from cohorts.cli import main
from kueue_cohorts.pipes import run_main

sys.exit(run_main(main))
