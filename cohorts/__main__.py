"""``python -m cohorts``: see cohorts.cli."""
import sys

from cohorts.cli import main

sys.exit(main())
