"""One declaration per policy: the name, the module, the options, the README table and the generated pack config of
every policy derive from its one `Declaration` (policy/rules/vocabulary/declaration.py)."""
from __future__ import annotations

import importlib
import pkgutil
import re
import subprocess
from pathlib import Path

import pytest

import kueue_cohorts.policy.rules
from kueue_cohorts.components.model.pack_config import STATED, UNSTATED, facts, pack_config
from kueue_cohorts.components.model.render import render_stack
from kueue_cohorts.components.settings import parse_settings
from kueue_cohorts.policy.rules.book import RULES, config, declaring, run
from kueue_cohorts.policy.rules.checkpoint_safe_runtime import EXEMPT_RUNTIMES
from kueue_cohorts.policy.rules.cohort_nominal_within_capacity import NODE_POOLS
from kueue_cohorts.policy.rules.inference_fits_nominal import INFERENCE_FITS_NOMINAL
from kueue_cohorts.policy.rules.inference_rollout_fits_nominal import INFERENCE_ROLLOUT_FITS_NOMINAL
from kueue_cohorts.policy.rules.vocabulary.declaration import Declaration, Option
from kueue_cohorts.policy.rules.vocabulary.objects import ROLE_LABEL, from_resource
from kueue_cohorts.policy.rules.vocabulary.roles import ROLE_OPTIONS, roles_of
from tests.helpers import stack_raw
from tests.policy.fixtures import compliant, stack, type_token

ROOT = Path(__file__).resolve().parents[3]
STACKS = ("dev", "staging", "prod", "mixed")
HOMONYMS = {"kueue-manager-config": ("kueue_cohorts/policy/rules/vocabulary/kueue_counts.py",
                                     'MANAGER_CONFIG_MAP = "kueue-manager-config"')}
"""Strings spelled like a policy that name something else: the ConfigMap of Kueue's chart that the policy is named
after (charts/kueue/templates/manager/manager-config.yaml, Kueue v0.19.2), written once."""


def _source() -> dict[str, list[str]]:
    """Every Python file of the repository outside tests/ (tracked or new), path -> lines."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split()
    return {path: (ROOT / path).read_text().splitlines() for path in listed
            if not path.startswith("tests/") and (ROOT / path).is_file()}


def _pattern(name: str) -> re.Pattern[str]:
    """A policy name as a token; a one-word name (`quantities`) only where it is quoted as a name, since the word is
    also plain English and a module name."""
    if "-" in name:
        return re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])")
    return re.compile(rf"([\"'`]){re.escape(name)}\1")


def _declaring_module(rule: Declaration) -> str:
    """The module whose source declares `rule` (`<NAME>: Declaration = Declaration(`)."""
    constant = rule.name.upper().replace("-", "_")
    found = [module.__name__ for module in _rule_modules()
             if f"\n{constant}: Declaration = Declaration(\n" in Path(str(module.__file__)).read_text()]
    assert len(found) == 1, (rule.name, found)
    return found[0]


def _rule_modules() -> list:
    return [importlib.import_module(f"kueue_cohorts.policy.rules.{info.name}")
            for info in pkgutil.iter_modules(kueue_cohorts.policy.rules.__path__) if not info.ispkg]


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_every_policy_name_is_written_once_in_the_source_in_its_declaration(rule):
    pattern = _pattern(rule.name)
    hits = [(path, line.strip()) for path, lines in _source().items() for line in lines if pattern.search(line)]
    module = _declaring_module(rule).replace(".", "/") + ".py"
    expected = [(module, f'name="{rule.name}",')]
    if rule.name in HOMONYMS:
        expected.append(HOMONYMS[rule.name])
    assert sorted(hits) == sorted(expected), (
        f"{rule.name} is written outside its declaration: refer to the declaration ({rule.name.upper()}"
        ".name in code, its upper-case name in prose)")


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_each_policy_is_declared_in_the_module_named_after_it(rule):
    module = _declaring_module(rule)
    stem = module.rsplit(".", 1)[1]
    assert rule.name.replace("-", "_").endswith(stem), (rule.name, module)
    assert getattr(importlib.import_module(module), rule.name.upper().replace("-", "_")) is rule


def test_the_rule_modules_hold_the_policies_and_the_book_only():
    """Every top-level module of policy/rules/ is a policy's (or pair's), or one of the four that assemble them;
    helpers live in policy/rules/vocabulary/, which declares no policy."""
    assembling = {"book", "catalog", "config", "admission"}
    for module in _rule_modules():
        stem = module.__name__.rsplit(".", 1)[1]
        declared = [v for v in vars(module).values() if isinstance(v, Declaration)]
        if stem in assembling:
            continue
        assert declared, f"{module.__name__} declares no policy: move it to policy/rules/vocabulary/"
    vocabulary = importlib.import_module("kueue_cohorts.policy.rules.vocabulary")
    for info in pkgutil.iter_modules(vocabulary.__path__):
        module = importlib.import_module(f"kueue_cohorts.policy.rules.vocabulary.{info.name}")
        assert not [v for v in vars(module).values() if isinstance(v, Declaration)], module.__name__


def test_names_are_unique_and_the_schema_is_the_declarations():
    assert len({rule.name for rule in RULES}) == len(RULES)
    assert config.SCHEMAS == {rule.name: rule.schema() for rule in RULES}
    for rule in RULES:
        assert [key for key in config.SCHEMAS[rule.name]] == [option.key for option in rule.options]


def test_the_policy_readme_options_table_is_the_generated_one():
    assert config.main(["--check"]) == 0, "run: python -m kueue_cohorts.policy.rules.book.config --write"


def test_the_options_table_lists_every_option_with_every_policy_that_declares_it():
    table = config.options_table()
    for rule in RULES:
        for option in rule.options:
            [row] = [line for line in table.splitlines() if line.startswith(f"| `{option.key}` |")]
            assert f"`{rule.name}`" in row and option.type_text in row
    # the options the hand-written table had left out
    for key in ("protectedNamespaces", "allowedAddOnNamespaces", "excludeResourcePrefixes", "clusterQueueRoles",
                "inferencePriorityClasses", "trainingPriorityClasses"):
        assert f"| `{key}` |" in table


def test_a_changed_option_doc_makes_the_policy_readme_stale(monkeypatch):
    changed = Option(EXEMPT_RUNTIMES.key, EXEMPT_RUNTIMES.schema, EXEMPT_RUNTIMES.default, "something else")
    monkeypatch.setattr(config, "options", lambda: [(changed, ["checkpoint-safe-runtime"])])
    assert config.readme_with_options(config.README.read_text()) != config.README.read_text()


def test_a_check_reads_only_the_options_it_declares():
    """A policy whose check read an option it does not declare would judge with a fact its generated pack config
    never carries (the rollout rule was silent that way): reading one through its options is refused."""
    with pytest.raises(KeyError, match="inference-fits-nominal reads option"):
        roles_of(stack(compliant()), INFERENCE_FITS_NOMINAL.options_of({}))
    with pytest.raises(KeyError, match="reads option nodePools"):
        NODE_POOLS.read(INFERENCE_ROLLOUT_FITS_NOMINAL.options_of({"nodePools": []}))
    assert NODE_POOLS.read({"nodePools": [{"name": "p"}]}) == [{"name": "p"}]  # a plain mapping: no declaration


@pytest.mark.parametrize("name", STACKS)
def test_the_generated_pack_config_gives_each_policy_the_facts_it_declares(name):
    settings = parse_settings(stack_raw(name))
    generated = pack_config(settings)
    stated = facts(settings)
    for option, value in stated:
        for rule in declaring(option):
            assert generated[rule.name][option.key] == value, (rule.name, option.key)
    for name, section in generated.items():
        [rule] = [r for r in RULES if r.name == name]
        assert set(section) <= {option.key for option in rule.options}, name
    # every policy that reads the ClusterQueue roles gets the stack's roles
    for rule in RULES:
        if any(rule.declares(option) for option in ROLE_OPTIONS):
            assert "clusterQueueRoles" in generated[rule.name], rule.name


def test_every_option_is_either_a_fact_a_stack_file_can_state_or_listed_as_unstated():
    stated, unstated = {id(option) for option in STATED}, {id(option) for option in UNSTATED}
    for name in STACKS:
        assert {id(option) for option, _ in facts(parse_settings(stack_raw(name)))} <= stated
    declared = {id(option) for rule in RULES for option in rule.options}
    assert stated | unstated == declared and not stated & unstated


def test_the_rollout_policy_judges_a_queue_that_only_the_generated_config_declares_inference():
    """The dev stack's inference ClusterQueue without our role label (written by hand, by a ConfigGroup or a patch
    that drops it), and a Deployment queued to it whose update cannot fit: the generated pack config tells the
    rollout policy which queue is inference, as it tells every other role-aware policy."""
    settings = parse_settings(stack_raw("dev"))
    manifests = [r.manifest for r in render_stack(settings)]
    cq = next(m for m in manifests if m["kind"] == "ClusterQueue" and m["metadata"]["name"] == "c12-inference-cq")
    del cq["metadata"]["labels"][ROLE_LABEL]
    nominal = settings.inference_training.inference.nominal_quota if settings.inference_training else {}
    labels = {"kueue.x-k8s.io/queue-name": "c12-inference-lq", "kueue.x-k8s.io/priority-class": "c12-inference-prio"}
    manifests.append({"apiVersion": "apps/v1", "kind": "Deployment",
                      "metadata": {"name": "serve", "namespace": "c12-inference"},
                      "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "serve"}},
                               "template": {"metadata": {"labels": {"app": "serve", **labels}},
                                            "spec": {"containers": [{"name": "serve", "image": "x", "resources": {
                                                "requests": {k: str(v) for k, v in nominal.items()}}}]}}}})
    objects = [from_resource(type_token(m), m, urn="", resource_name=f"obj-{i}") for i, m in enumerate(manifests)]
    found = [v for rule, v in run(objects, pack_config(settings)) if rule is INFERENCE_ROLLOUT_FITS_NOMINAL]
    assert [v.field for v in found] == ["spec.strategy"]
    assert "more than the nominalQuota of ClusterQueue 'c12-inference-cq'" in found[0].message
