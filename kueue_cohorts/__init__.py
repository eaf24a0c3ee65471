"""kueue-cohorts, the command: ``kueue-cohorts COMMAND`` (``cli.py``) over the project's tools.

``pip install -e .`` in a checkout puts the ``kueue-cohorts`` console script on the PATH (the checkout stays the
project: its ``stacks/``, ``policy/`` and ``Pulumi.yaml``); ``python -m kueue_cohorts`` is the same command.
``scaffold.py`` (the parser, the one way to fail, a closed pipe ending quietly) is the floor under every tool and
imports nothing of ours; this ``__init__`` imports nothing either, so a tool that stands on the scaffold loads no
other part of the front door.
"""
from __future__ import annotations

from pathlib import Path

__all__ = ["PROJECT_ROOT", "__version__"]

__version__ = "0.25.0"
"""The project's version (pyproject.toml reads it from here); CHANGELOG-free until the first release."""

PROJECT_ROOT = Path(__file__).resolve().parent.parent
"""The project checkout this package runs from (Path): the directory of Pulumi.yaml, stacks/, schema/, docs/ and the
Pulumi program __main__.py; `pip install -e .` keeps it (docs/library.md: a wheel installed elsewhere carries no
stacks). The one definition every tool reads (tests/unit/test_one_definition.py)."""
