"""``python -m toolchain``: see toolchain.cli."""
from kueue_cohorts.scaffold import run_main
from toolchain.cli import main

raise SystemExit(run_main(main))
