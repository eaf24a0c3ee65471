"""`kueue-cohorts:whatif`: the what-if section of the pull-request summary (whatif/, `kueue-cohorts whatif`)."""
from __future__ import annotations

from pydantic import Field

from components.settings.base import Model


class WhatIfSettings(Model):
    """`kueue-cohorts:whatif`: the demand trace the pull-request summary replays on the base and the head quotas."""

    trace: str = Field(min_length=1, pattern=r"^[^/].*\.jsonl$")
    """A demand trace (JSON Lines, schema/demand-trace.schema.json), relative to the project root, e.g.
    traces/staging.jsonl: the pull-request summary replays it against the base and the head quotas."""
