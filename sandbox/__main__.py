"""Entry point of ``python -m sandbox``; see :mod:`sandbox.cli`."""

import sys

from kueue_cohorts.pipes import run_main
from sandbox.cli import main

sys.exit(run_main(main))
