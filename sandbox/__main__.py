"""``python -m sandbox``: see sandbox.cli."""
from kueue_cohorts.scaffold import run_main
from sandbox.cli import main

raise SystemExit(run_main(main))
