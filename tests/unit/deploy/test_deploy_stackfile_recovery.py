"""deploy.stackfile (the few keys deploy reads, secrets reported, never a crash), deploy.protection's rules as a
table, and the pure parts of deploy.recovery (pending operations -> the engine's refresh arguments)."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from kueue_cohorts.components.settings.stackfile import StackFileError
from kueue_cohorts.deploy import protection, recovery, stackfile
from kueue_cohorts.deploy.settings import DEV_PASSPHRASE

SECRET = {"secure": "v1:abc:def"}


def write(tmp_path: Path, config, **top) -> Path:
    path = tmp_path / "Pulumi.s.yaml"
    path.write_text(yaml.safe_dump({**top, "config": config}))
    return path


@pytest.mark.parametrize("config, mode, protected, secrets", [
    ({}, "sandbox", False, ()),
    ({"kueue-cohorts:cluster": {"mode": "render", "renderDir": "x"}}, "render", False, ()),
    ({"kueue-cohorts:cluster": {"mode": "kubeconfig", "context": "prod"}}, "kubeconfig", True, ()),
    ({"kueue-cohorts:cluster": SECRET}, None, True, ("kueue-cohorts:cluster",)),
    ({"kueue-cohorts:cluster": {"mode": SECRET}}, None, True, ("kueue-cohorts:cluster.mode",)),
    ({"kueue-cohorts:cluster": {"mode": "kubeconfig", "kubeconfig": SECRET}}, "kubeconfig", True,
     ("kueue-cohorts:cluster.kubeconfig",)),
    ({"kueue-cohorts:protected": True}, "sandbox", True, ()),
    ({"kueue-cohorts:protected": "True"}, "sandbox", True, ()),
    ({"kueue-cohorts:protected": "false"}, "sandbox", False, ()),
    ({"kueue-cohorts:protected": False}, "sandbox", False, ()),
    ({"kueue-cohorts:protected": SECRET}, "sandbox", True, ("kueue-cohorts:protected",)),
    ({"kueue-cohorts:protected": 1}, "sandbox", True, ()),
    ({"kueue-cohorts:trainingRuntime": {"env": {"HF_TOKEN": SECRET}}, "other:key": SECRET}, "sandbox", False, ()),
])
def test_read_target(tmp_path, config, mode, protected, secrets):
    target = stackfile.read("s", write(tmp_path, config))
    assert (target.mode, target.protected, target.secret_keys) == (mode, protected, secrets)
    assert bool(target.problems) == (type(config.get("kueue-cohorts:protected")) is int)


@pytest.mark.parametrize("text", ["config: [1, 2]", "- a list", "config:\n  kueue-cohorts:cluster: kubeconfig\n",
                                  "key: [unclosed"])
def test_unreadable_stack_files_raise_one_error(tmp_path, text):
    path = tmp_path / "Pulumi.s.yaml"
    path.write_text(text)
    with pytest.raises(StackFileError):
        stackfile.read("s", path)
    with pytest.raises(StackFileError):
        stackfile.read("s", tmp_path / "missing.yaml")


yaml_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                           lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=6), kids,
                                                                                    max_size=3), max_leaves=8)


@given(st.dictionaries(st.sampled_from(["kueue-cohorts:protected", "kueue-cohorts:cluster", "kueue-cohorts:x"]),
                       yaml_values | st.just(SECRET), max_size=3))
def test_any_config_values_read_or_raise_stackfileerror_only(config):
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        try:
            target = stackfile.read("s", write(Path(tmp), config))
        except StackFileError:
            return
        assert isinstance(target.protected, bool)


TEAM = {"PULUMI_BACKEND_URL": "s3://b/k", "PULUMI_CONFIG_PASSPHRASE": "team"}


@pytest.mark.parametrize("top, env, no_policy, expected", [
    ({}, TEAM, False, []),
    ({}, {**TEAM, "PULUMI_BACKEND_URL": ""}, False, ["PULUMI_BACKEND_URL is not set"]),
    ({}, {**TEAM, "PULUMI_BACKEND_URL": "file:///tmp/x"}, False, ["is a local file backend"]),
    ({}, {**TEAM, "PULUMI_BACKEND_URL": "/tmp/x"}, False, ["is a local file backend"]),
    ({}, {**TEAM, "PULUMI_CONFIG_PASSPHRASE": DEV_PASSPHRASE}, False, ["is the public dev passphrase"]),
    ({}, {**TEAM, "PULUMI_CONFIG_PASSPHRASE": ""}, False, ["PULUMI_CONFIG_PASSPHRASE is empty"]),
    ({}, {"PULUMI_BACKEND_URL": "s3://b/k"}, False, ["PULUMI_CONFIG_PASSPHRASE is not set"]),
    ({}, TEAM, True, ["--no-policy is refused"]),
    ({"secretsprovider": "awskms://alias/k"}, {"PULUMI_BACKEND_URL": "s3://b/k"}, False, []),
    ({"secretsprovider": "passphrase"}, {"PULUMI_BACKEND_URL": "s3://b/k"}, False, ["is not set"]),
    ({"encryptionsalt": "v1:x"}, {"PULUMI_BACKEND_URL": "s3://b/k", "KUEUE_COHORTS_SECRETS_PROVIDER": "awskms://a"},
     False, ["is not set"]),  # an existing passphrase stack keeps its provider
    ({}, {"PULUMI_BACKEND_URL": "s3://b/k", "KUEUE_COHORTS_SECRETS_PROVIDER": "awskms://a"}, False, []),
    ({}, {}, True, ["PULUMI_BACKEND_URL", "PULUMI_CONFIG_PASSPHRASE", "--no-policy"]),
])
def test_protection_rules(tmp_path, top, env, no_policy, expected):
    target = stackfile.read("s", write(tmp_path, {"kueue-cohorts:protected": True}, **top))
    found = protection.problems(target, env, no_policy=no_policy, policy_pack=tmp_path)
    assert len(found) == len(expected), found
    for problem, text in zip(found, expected, strict=False):
        assert text in problem
    unprotected = stackfile.read("s", write(tmp_path, {}, **top))
    assert protection.problems(unprotected, env, no_policy=no_policy, policy_pack=None) == []


def test_passphrase_file_rules(tmp_path):
    target = stackfile.read("s", write(tmp_path, {"kueue-cohorts:protected": True}))
    base = {"PULUMI_BACKEND_URL": "s3://b/k"}
    good, dev, empty = (tmp_path / n for n in ("good", "dev", "empty"))
    good.write_text("team\n"), dev.write_text(DEV_PASSPHRASE + "\n"), empty.write_text("\n")
    check = lambda f: protection.problems(target, {**base, "PULUMI_CONFIG_PASSPHRASE_FILE": str(f)},  # noqa: E731
                                          no_policy=False, policy_pack=tmp_path)
    assert check(good) == []
    assert "holds the public dev passphrase" in check(dev)[0]
    assert "is empty" in check(empty)[0]
    assert "cannot be read" in check(tmp_path / "missing")[0]
    assert "the policy pack" in protection.problems(target, {**base, "PULUMI_CONFIG_PASSPHRASE": "t"},
                                                    no_policy=False, policy_pack=None)[0]


def _op(kind: str, rtype: str, metadata=None, urn=None) -> dict:
    inputs = {"metadata": metadata} if metadata is not None else {}
    return {"type": kind, "resource": {"urn": urn or f"urn:pulumi:dev::kueue-cohorts::{rtype}::x", "type": rtype,
                                       "inputs": inputs}}


def test_pending_operations_and_refresh_arguments():
    deployment = {"pending_operations": [
        _op("creating", "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue", {"name": "cq"}, "urn:a"),
        _op("creating", "kubernetes:core/v1:PersistentVolumeClaim", {"name": "ckpt", "namespace": "t"}, "urn:b"),
        _op("creating", "pulumi:providers:kubernetes", None, "urn:c"),
        _op("updating", "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue", {"name": "lq", "namespace": "t"}, "urn:d"),
        _op("deleting", "kubernetes:core/v1:Namespace", {"name": "old"}, "urn:e"),
    ]}
    ops = recovery.pending_operations(deployment)
    assert [(o.type, o.urn, o.provider_id) for o in ops] == [
        ("creating", "urn:a", "cq"), ("creating", "urn:b", "t/ckpt"), ("creating", "urn:c", None),
        ("updating", "urn:d", "t/lq"), ("deleting", "urn:e", "old")]
    args = recovery.refresh_args("dev", "/p/stacks/Pulumi.dev.yaml", ops)
    assert args[:8] == ["refresh", "--stack", "dev", "--config-file", "/p/stacks/Pulumi.dev.yaml", "--yes",
                        "--skip-preview", "--color"]
    pairs = [args[i + 1] for i, a in enumerate(args) if a == "--import-pending-creates"]
    assert pairs == ["urn:a", "cq", "urn:b", "t/ckpt"]  # only creates of Kubernetes objects, URN then ID
    assert args[-1] == "--clear-pending-creates"  # the provider resource's pending create is dropped
    updates_only = recovery.refresh_args("dev", "f", ops[3:])
    assert "--clear-pending-creates" not in updates_only and "--import-pending-creates" not in updates_only
    assert recovery.pending_operations({}) == [] and recovery.pending_operations({"pending_operations": None}) == []
