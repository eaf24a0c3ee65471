"""Every policy's passing and failing examples (tests/policy/rules/<policy module>/pass|fail/*.yaml), judged by the
rule book and by the pack's own policy objects, and a check that no policy module of the book goes without them.

An example is a YAML stream of the manifests a user would write, judged as one whole stack. Its header comments say
what it must give (tests/policy/README.md): `# subject:` and `# finding:` on a fail example (the object, as
`<Kind> <namespace/>name`, and the exact `Violation.field` of the policy's finding), `# policy:` where the module
declares two policies, `# config:` the policy pack config options over the schema defaults (JSON, as in
`policy/config/<stack>.json`). A manifest whose kind ends in `Patch` is registered as that Patch resource (type token
`...:<Kind>Patch`, wire kind `<Kind>`, as pulumi-kubernetes sends it). The example of a rule across the clusters of a
MultiKueue stack is one map, `cluster name -> manifests` (`manager` for the stack's own cluster).

Two judges per example: `book.run` (what the settings check and `book.judge`, the catalog's, apply), whose findings
carry the field; and the pack's policies through the pulumi-policy SDK's validation callbacks (`harness.evaluate`),
which report messages only, so they are asserted by policy name. The rules across clusters are judged by
`book.run_clusters` alone (the pack learns each object's cluster from its provider, which the harness does not send;
tests/policy/rules/test_multikueue_workers_ready.py drives the SDK's servicer for them).
"""
from __future__ import annotations

import copy
import importlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi_policy.proxy import unknown_checking_proxy

from kueue_cohorts.policy.rules.book import run, run_clusters
from kueue_cohorts.policy.rules.vocabulary import multikueue
from kueue_cohorts.policy.rules.vocabulary.declaration import Declaration
from kueue_cohorts.policy.rules.vocabulary.objects import KubeObject, from_resource
from kueue_cohorts.policy.rules.vocabulary.values import Violation
from tests.policy.fixtures import type_token
from tests.policy.harness import REPO, evaluate, pack_config

RULES_PACKAGE = REPO / "kueue_cohorts" / "policy" / "rules"
RULES_TESTS = REPO / "tests" / "policy" / "rules"
KINDS = ("pass", "fail")
HEADER_KEYS = ("subject", "finding", "policy", "config")
EXAMPLES = sorted(RULES_TESTS.glob("*/*/*.yaml"))


def policy_modules() -> list[str]:
    """The policy modules of the rule book: every module of kueue_cohorts/policy/rules/ (the book and the vocabulary
    are packages beside them)."""
    return sorted(p.stem for p in RULES_PACKAGE.glob("*.py") if p.stem != "__init__")


def declarations(module: str) -> list[Declaration]:
    """The policies rule module `module` declares (one, or a closely related pair)."""
    mod = importlib.import_module(f"kueue_cohorts.policy.rules.{module}")
    return sorted({id(v): v for v in vars(mod).values() if isinstance(v, Declaration)}.values(), key=lambda d: d.name)


@dataclass
class Example:
    """One example file: its policy module, kind (pass or fail), header and manifests."""

    path: Path
    module: str
    kind: str
    header: dict[str, str]
    manifests: Any  # a list of manifests, or {cluster: manifests} for a rule across clusters
    config: dict[str, dict] = field(default_factory=dict)

    @property
    def policies(self) -> list[str]:
        """The policies the example speaks for: its `# policy:`, else every policy of its module."""
        if "policy" in self.header:
            return [self.header["policy"]]
        return [d.name for d in declarations(self.module)]


def load(path: Path) -> Example:
    """Read example `path` (tests/policy/rules/<module>/<kind>/<name>.yaml). Raises ValueError for a header key this
    format does not have, so a misspelt `# findng:` cannot pass unread."""
    header: dict[str, str] = {}
    text = path.read_text()
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        key, sep, value = line[1:].strip().partition(": ")
        if sep and key in HEADER_KEYS:
            header[key] = value
        elif sep and key.isalpha() and key.islower():
            raise ValueError(f"{path}: unknown header key {key!r}; the keys are {HEADER_KEYS}")
    docs = [d for d in yaml.safe_load_all(text) if d is not None]
    manifests = docs[0] if len(docs) == 1 and isinstance(docs[0], dict) and "apiVersion" not in docs[0] else docs
    module, kind = path.parent.parent.name, path.parent.name
    return Example(path, module, kind, header, manifests, json.loads(header.get("config", "{}")))


def resource(index: int, manifest: dict) -> tuple[str, str, str, dict]:
    """(type token, URN, resource name, properties) of `manifest` as the engine sends it; a `<Kind>Patch` goes as that
    Patch resource with wire kind `<Kind>`."""
    token = type_token(manifest)
    props = copy.deepcopy(manifest)
    if manifest["kind"].endswith("Patch"):
        props["kind"] = manifest["kind"][:-len("Patch")]
    name = f"{manifest['kind']}-{manifest.get('metadata', {}).get('name', '')}-{index}".lower()
    return token, f"urn:pulumi:test::kueue-cohorts::{token}::{name}", name, props


def objects(manifests: list[dict]) -> list[KubeObject]:
    """The KubeObjects the analyzer builds from `manifests` (props in the SDK's unknown-checking proxy)."""
    out = []
    for index, manifest in enumerate(manifests):
        token, urn, name, props = resource(index, manifest)
        obj = from_resource(token, unknown_checking_proxy(props), urn, name)
        assert obj is not None, f"{manifest['kind']} is no Kubernetes resource"
        out.append(obj)
    return out


def config_of(example: Example) -> dict[str, dict]:
    """The policy pack config of `example`: every policy's schema defaults, its `# config:` options over them."""
    config = pack_config()
    for policy, options in example.config.items():
        config[policy] = {**config.get(policy, {}), **options}
    return config


def book_findings(example: Example) -> list[tuple[str, Violation]]:
    """(policy name, violation) of the rule book over the example's stack (or clusters)."""
    if isinstance(example.manifests, dict):
        clusters = {multikueue.MANAGER if name == "manager" else name: objects(ms)
                    for name, ms in example.manifests.items()}
        return [(rule.name, v) for rule, v in run_clusters(clusters, config_of(example))]
    return [(rule.name, v) for rule, v in run(objects(example.manifests), config_of(example))]


def subject(violation: Violation) -> str:
    """`<Kind> <namespace/>name` of the object a violation is about ("" for none)."""
    ref = violation.subject
    return f"{ref.kind} {ref.namespace + '/' if ref.namespace else ''}{ref.name}" if ref else ""


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: str(p.relative_to(RULES_TESTS).with_suffix("")))
def test_each_example_gets_the_verdict_its_folder_names(path):
    example = load(path)
    found = [(policy, subject(v), v.field) for policy, v in book_findings(example) if policy in example.policies]
    pack = set() if isinstance(example.manifests, dict) else \
        set(evaluate([resource(i, m) for i, m in enumerate(example.manifests)], config_of(example)))
    if example.kind == "pass":
        assert "finding" not in example.header, "a pass example names no finding"
        assert found == [] and pack.isdisjoint(example.policies)
        return
    assert len(example.policies) == 1, f"{path}: the module declares two policies; name one with # policy:"
    [policy] = example.policies
    assert (policy, example.header["subject"], example.header["finding"]) in found, found
    assert isinstance(example.manifests, dict) or policy in pack


def test_every_policy_module_has_its_test_module_and_passing_and_failing_examples():
    """A new policy without its test module, a passing example, and a failing example for each policy it declares
    fails here; so does an examples folder left behind by a policy that is gone, or a test module in rules/ named
    after no policy module (`test_<module>.py`, or `test_<module>_<topic>.py` beside it)."""
    problems = []
    for module in policy_modules():
        if not (RULES_TESTS / f"test_{module}.py").is_file():
            problems.append(f"tests/policy/rules/test_{module}.py is missing")
        for kind in KINDS:
            if not list((RULES_TESTS / module / kind).glob("*.yaml")):
                problems.append(f"tests/policy/rules/{module}/{kind}/ has no example")
        named = {load(p).policies[0] for p in (RULES_TESTS / module / "fail").glob("*.yaml")
                 if len(load(p).policies) == 1}
        problems += [f"tests/policy/rules/{module}/fail/ has no example of {d.name} (# policy: {d.name})"
                     for d in declarations(module) if d.name not in named]
    modules = set(policy_modules())
    problems += [f"tests/policy/rules/{d.name}/ holds examples of no policy module" for d in RULES_TESTS.iterdir()
                 if d.is_dir() and d.name != "__pycache__" and d.name not in modules]
    problems += [f"tests/policy/rules/{p.name} tests no policy module" for p in RULES_TESTS.glob("test_*.py")
                 if not any(p.stem == f"test_{m}" or p.stem.startswith(f"test_{m}_") for m in modules)]
    assert problems == []


def test_an_example_header_with_an_unknown_key_is_refused(tmp_path):
    path = tmp_path / "inference_reclaim_any" / "fail" / "typo.yaml"
    path.parent.mkdir(parents=True)
    path.write_text("# A typo.\n# findng: spec.preemption.reclaimWithinCohort\n---\napiVersion: v1\nkind: Namespace\n"
                    "metadata: {name: x}\n")
    with pytest.raises(ValueError, match="unknown header key 'findng'"):
        load(path)
