"""`kueue-cohorts:whatif`: the what-if section of the pull-request summary (whatif/, `kueue-cohorts whatif`)."""
from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from kueue_cohorts.components.settings.base import SELECTS_PATH, Model, inside_repository

TRACE_PATTERN = r"^[^/].*\.jsonl$"


class WhatIfSettings(Model):
    """`kueue-cohorts:whatif`: the demand trace the pull-request summary replays on the base and the head quotas."""

    trace: Annotated[str, Field(min_length=1, pattern=TRACE_PATTERN), AfterValidator(inside_repository), SELECTS_PATH]
    """A demand trace (JSON Lines, schema/demand-trace.schema.json), relative to the project root and inside it (no
    `..`, no absolute path), e.g. traces/staging.jsonl: the pull-request summary replays it against the base and
    the head quotas."""
