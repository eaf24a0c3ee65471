"""A worker kubeconfig the stack writes into the manager's Secret is checked as Kueue v0.19.2 checks it
(pkg/controller/admissionchecks/multikueue/multikueuecluster.go `validateKubeconfig`), before any change: the
deploy refuses what Kueue would refuse later, silently, as an inactive MultiKueueCluster."""
from __future__ import annotations

import copy

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.components.checks.multikueue_rules import kubeconfig_problems
from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.components.settings import raw_from_stack_file
from kueue_cohorts.components.stack.preflight import PreflightError
from kueue_cohorts.components.stack.target import SandboxTarget, _worker_target
from tests.helpers import STACKS

GOOD = {"apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "w", "cluster": {"server": "https://worker.example.com:6443",
                                               "certificate-authority-data": "Q0E="}}],
        "users": [{"name": "w", "user": {"token": "abc"}}],
        "contexts": [{"name": "w", "context": {"cluster": "w", "user": "w"}}], "current-context": "w"}


def _with(path: str, value) -> dict:
    config = copy.deepcopy(GOOD)
    section, key = path.split(".")
    config[section][0][section[:-1]][key] = value
    return config


CASES = [
    ("token-file", _with("users.tokenFile", "/var/run/token"), "tokenFile"),
    ("insecure", _with("clusters.insecure-skip-tls-verify", True), "skips TLS verification"),
    ("ca-file", _with("clusters.certificate-authority", "/etc/ca.crt"), "certificate-authority file"),
    ("no-server", _with("clusters.server", ""), "no server URL"),
    ("bad-host", _with("clusters.server", "https://Bad_Host:6443"), "not an IP address or DNS name"),
    ("basic-auth", _with("users.password", "secret"), "basic auth"),
    ("exec", _with("users.exec", {"command": "aws"}), "an exec plugin"),
    ("auth-provider", _with("users.auth-provider", {"name": "oidc"}), "an auth provider"),
    ("client-cert-file", _with("users.client-certificate", "/home/me/.kube/me.crt"), "client-certificate file"),
]


def test_a_kubeconfig_kueue_accepts_passes():
    assert kubeconfig_problems(yaml.safe_dump(GOOD)) == []
    ip = _with("clusters.server", "https://127.0.0.1:40123")
    assert kubeconfig_problems(yaml.safe_dump(ip)) == []


@pytest.mark.parametrize("config,words", [(c, w) for _, c, w in CASES], ids=[c[0] for c in CASES])
def test_what_kueue_refuses_is_named(config, words):
    found = kubeconfig_problems(yaml.safe_dump(config))
    assert len(found) == 1 and words in found[0], found


@settings(max_examples=40, deadline=None)
@given(st.text(max_size=200))
def test_any_text_gives_reasons_never_an_exception(text):
    assert isinstance(kubeconfig_problems(text), list)


def _settings(tmp_path, from_file):
    raw = raw_from_stack_file(STACKS / "Pulumi.staging.yaml")
    raw["multiKueue"] = {"managerTrainer": "CRDsOnly",
                         "workers": [{"name": "w", "context": "w", "secret": {"fromFile": str(from_file)}}],
                         "dispatch": [{"clusterQueue": raw["inferenceTraining"]["training"]["clusterQueue"],
                                       "workers": ["w"]}]}
    raw["protected"] = False  # a lab stack: a protected one may not store the kubeconfig (issue 38 class 2)
    return load_settings(raw)


def _no_sandbox():
    raise AssertionError("kubeconfig mode never asks the sandbox")


def test_the_deploy_reads_the_file_and_refuses_an_insecure_one_at_its_key(tmp_path):
    path = tmp_path / "w.kubeconfig"
    path.write_text(yaml.safe_dump(GOOD))
    settings = _settings(tmp_path, path)
    sandbox = SandboxTarget(tmp_path / "unused", _no_sandbox)
    target = _worker_target(settings, 0, settings.multi_kueue.workers[0], sandbox)
    assert target.kubeconfig_text == path.read_text()
    assert "abc" not in repr(target)  # the text never shows in a repr (logs, tracebacks)
    path.write_text(yaml.safe_dump(_with("clusters.insecure-skip-tls-verify", True)))
    with pytest.raises(PreflightError) as refused:
        _worker_target(settings, 0, settings.multi_kueue.workers[0], sandbox)
    assert "kueue-cohorts:multiKueue.workers[0].secret.fromFile" in str(refused.value)
    assert "skips TLS verification" in str(refused.value)
    path.unlink()
    with pytest.raises(PreflightError) as missing:
        _worker_target(settings, 0, settings.multi_kueue.workers[0], sandbox)
    assert "cannot be read" in str(missing.value)


def test_a_sandbox_worker_that_is_not_up_says_how_to_start_it(tmp_path):
    raw = raw_from_stack_file(STACKS / "Pulumi.dev.yaml")
    raw["multiKueue"] = {"managerTrainer": "CRDsOnly", "workers": [{"name": "a"}, {"name": "b"}],
                         "dispatch": [{"clusterQueue": "c12-training-cq", "workers": ["a", "b"]}]}
    settings = load_settings(raw)

    def absent(name):
        raise FileNotFoundError(name)

    with pytest.raises(PreflightError) as refused:
        _worker_target(settings, 1, settings.multi_kueue.workers[1], SandboxTarget(tmp_path, _no_sandbox, absent))
    assert "kueue-cohorts sandbox up --workers 2" in str(refused.value)


# --- issue 38 class 7: never raises on a malformed fromFile, whatever its shape --------------------------------------

_ANY = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=12)),
                    lambda inner: st.one_of(st.lists(inner, max_size=3),
                                            st.dictionaries(st.text(max_size=8), inner, max_size=3)), max_leaves=10)
_SHAPED = st.fixed_dictionaries({}, optional={
    "clusters": st.one_of(_ANY, st.lists(st.fixed_dictionaries({}, optional={
        "name": _ANY, "cluster": st.one_of(_ANY, st.fixed_dictionaries({}, optional={
            "server": st.one_of(_ANY, st.sampled_from(["http://[::1", "https://[", "https://h:99999", "//x"])),
            "insecure-skip-tls-verify": _ANY, "certificate-authority": _ANY}))}), max_size=3)),
    "users": st.one_of(_ANY, st.lists(st.fixed_dictionaries({}, optional={
        "name": _ANY, "user": st.one_of(_ANY, st.dictionaries(st.sampled_from(
            ["exec", "auth-provider", "token", "tokenFile", "username"]), _ANY, max_size=3))}), max_size=3)),
    "contexts": _ANY, "current-context": _ANY})


@pytest.mark.parametrize("text", [
    "clusters: [{name: w, cluster: [1, 2]}]\nusers: [{name: w, user: token}]\n",
    "clusters: {w: {server: https://x}}\nusers: 3\n",
    "clusters: [{name: w, cluster: {server: 'http://[::1'}}]\n",
    "clusters: [{name: w, cluster: {server: https://x}}]\nusers: [{name: w, user: [exec]}]\n",
    "when: 2001-02-30\n",
    "[" * 5000 + "]" * 5000,
])
def test_a_malformed_kubeconfig_gives_reasons_never_an_exception(text):
    """Each of these raised on main (AttributeError on a list or string where a mapping belongs, ValueError from
    urlsplit or from a YAML 1.1 date out of range, RecursionError from deep nesting)."""
    problems = kubeconfig_problems(text)
    assert problems and all(isinstance(p, str) and p for p in problems)


@settings(max_examples=400, deadline=None)
@given(_SHAPED)
def test_any_kubeconfig_shaped_document_gives_reasons_never_an_exception(doc):
    assert isinstance(kubeconfig_problems(yaml.safe_dump(doc)), list)
