"""``python -m kueue_cohorts.toolchain``: see toolchain.cli."""
from kueue_cohorts.scaffold import run_main
from kueue_cohorts.toolchain.cli import main

raise SystemExit(run_main(main))
