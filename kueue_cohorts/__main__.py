"""``python -m kueue_cohorts``: the ``kueue-cohorts`` command (see kueue_cohorts.cli)."""
import sys

from kueue_cohorts.cli import entry

sys.exit(entry())
