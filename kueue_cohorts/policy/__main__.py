"""Entry of the kueue-cohorts policy pack: assembles the PolicyPack and nothing else (after making the SDK parse the
stack config once per run instead of on every call, and judge each stack once per AnalyzeStack call instead of once
per stack policy, each resource converted once per call: `rules.book.catalog.parse_config_env_once`,
`judge_each_stack_once`).

The analyzer runs this file with `policy/` first on sys.path, so the rules import as `rules`. Constructing
`PolicyPack` starts the gRPC server and blocks forever: tests import `rules.book.catalog` (as
`kueue_cohorts.policy.rules.book.catalog`), never this file.
"""
from pulumi_policy import EnforcementLevel, PolicyPack
from rules.book.catalog import PACK_NAME, build_policies, judge_each_stack_once, parse_config_env_once

parse_config_env_once()
judge_each_stack_once()
PolicyPack(name=PACK_NAME, policies=build_policies(), enforcement_level=EnforcementLevel.MANDATORY)
