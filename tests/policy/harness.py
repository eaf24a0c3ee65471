"""Run the pack's real policy objects over (type token, properties) pairs, as the analyzer would, without a server.

Config per policy is what the engine would pass: the schema defaults overlaid with one policy pack config file
(`policy/config/<stack>.json` format).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Optional

from pulumi_policy import (
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import unknown_checking_proxy

from kueue_cohorts.policy.rules.book.catalog import build_policies
from kueue_cohorts.policy.rules.book.config import SCHEMAS

REPO = Path(__file__).resolve().parents[2]


def pack_config(path: Optional[Path] = None) -> dict[str, dict]:
    """Each policy's config: schema defaults, overlaid with the options of the policy pack config file `path`."""
    given = json.loads(path.read_text()) if path else {}
    config = {}
    for policy, schema in SCHEMAS.items():
        options = {key: prop["default"] for key, prop in schema.items() if "default" in prop}
        value = given.get(policy, {})
        if isinstance(value, dict):
            options.update({k: v for k, v in value.items() if k != "enforcementLevel"})
        config[policy] = options
    return config


def evaluate(resources: Iterable[tuple[str, str, str, dict]], config: dict[str, dict]) -> dict[str, list[str]]:
    """Run every policy over `resources` = (type token, urn, name, properties); return policy -> messages."""
    resources = list(resources)
    opts = PolicyResourceOptions(False, [], None, [], None, [], None)
    found: dict[str, list[str]] = {}
    for policy in build_policies():
        out: list[str] = []
        report = lambda msg, urn=None, out=out: out.append(msg)  # noqa: E731
        if isinstance(policy, StackValidationPolicy):
            stack = [PolicyResource(t, unknown_checking_proxy(dict(p)), u, n, opts, None, None, [], {})
                     for t, u, n, p in resources]
            policy.validate(StackValidationArgs(stack, config[policy.name]), report)
        else:
            for t, u, n, p in resources:
                policy.validate(ResourceValidationArgs(t, unknown_checking_proxy(dict(p)), u, n, opts, None,
                                                       config[policy.name]), report)
        if out:
            found[policy.name] = out
    return found
