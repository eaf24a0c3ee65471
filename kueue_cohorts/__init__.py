"""kueue-cohorts, the command: ``kueue-cohorts COMMAND`` (``cli.py``) over the project's tools.

``pip install -e .`` in a checkout puts the ``kueue-cohorts`` console script on the PATH (the checkout stays the
project: its ``stacks/``, ``policy/`` and ``Pulumi.yaml``); ``python -m kueue_cohorts`` is the same command.
``scaffold.py`` (the parser, the one way to fail, a closed pipe ending quietly) is the floor under every tool and
imports nothing of ours; this ``__init__`` imports nothing either, so a tool that stands on the scaffold loads no
other part of the front door.
"""
from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.25.0"
"""The project's version (pyproject.toml reads it from here); CHANGELOG-free until the first release."""
