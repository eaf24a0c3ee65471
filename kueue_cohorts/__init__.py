"""kueue-cohorts, the command: ``kueue-cohorts COMMAND`` (``cli.py``) over the project's tools.

``pip install -e .`` in a checkout puts the ``kueue-cohorts`` console script on the PATH (the checkout stays the
project: its ``stacks/``, ``policy/`` and ``Pulumi.yaml``); ``python -m kueue_cohorts`` is the same command.
``pipes.py`` (a closed pipe ends a command quietly) is shared by every ``python -m`` entry point.
"""
from __future__ import annotations

from toolchain import versions

__all__ = ["__version__", "versions_line"]

__version__ = "0.25.0"
"""The project's version (pyproject.toml reads it from here); CHANGELOG-free until the first release."""

#: The pinned components ``--version`` names, in this order (toolchain/versions.toml ``[binaries.<entry>]``).
_SHOWN = ("kueue", "trainer", "jobset", "kubernetes", "pulumi", "pulumi-resource-kubernetes")


def versions_line() -> str:
    """One line naming the pinned versions this checkout builds and tests against, e.g. ``Kueue 0.19.2, ...``.

    Reads toolchain/versions.toml (the one versions file). Raises nothing a user can cause: a missing entry is
    left out.
    """
    entries = versions.load().entries
    labels = {"kueue": "Kueue", "trainer": "Trainer", "jobset": "JobSet", "kubernetes": "Kubernetes",
              "pulumi": "pulumi", "pulumi-resource-kubernetes": "pulumi-kubernetes"}
    return ", ".join(f"{labels[name]} {entries[name].version}" for name in _SHOWN if name in entries)
