"""`python -m trainer`: the container's PID 1 (exec-form command of the PreemptibleTrainingRuntime).

The SIGTERM latch is installed before anything heavy is imported: a PID 1 without a handler ignores SIGTERM,
and importing torch and transformers takes seconds. See trainer.entrypoint for configuration.
"""
from . import preemption

preemption.install()

import sys  # noqa: E402

from .entrypoint import run  # noqa: E402

sys.exit(run())
