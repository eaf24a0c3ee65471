"""What a pull request's stack file may select in the live preview (issue 38, class 1): the schema's selecting keys
(components.settings.selecting) are complete, each is pinned to the base's value (deploy.pullrequest.pin), files are
read below the repository without following a link at any component (read_inside), and no kubeconfig whose user
runs a program is loaded (vet)."""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kueue_cohorts.components.settings import LIST, Selects, key_text, selecting_keys
from kueue_cohorts.components.settings.selecting import fields
from kueue_cohorts.deploy import pullrequest
from kueue_cohorts.deploy.pullrequest import PullRequestError, pin, programs, read_inside, values, vet

#: The words of a key name (camelCase) that say it may name a file, a directory, a context, a program or a
#: credential source.
PATH_WORDS = {"kubeconfig", "context", "file", "dir", "directory", "path", "trace", "source", "mode", "secret",
              "secrets", "chart", "exec", "command", "program", "uri", "url", "credential", "credentials", "token"}


def path_like(key: str) -> bool:
    """Whether the last name of `key` (`kueue-cohorts:a.b[].fromFile`) has a word of PATH_WORDS."""
    last = re.sub(r"[\[\]{}]", "", key.rsplit(".", 1)[-1].split(":")[-1])
    return bool({w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", last)} & PATH_WORDS)
#: Path-like names that select nothing on the machine that runs the deploy, each with the reason.
NOT_SELECTING = {
    "kueue-cohorts:inferenceTraining.inference.services[].storageUri":
        "read by KServe's storage initializer inside the cluster, never by the deploy",
    "kueue-cohorts:inferenceTraining.inference.services[].deploymentMode": "a KServe enum written into an object",
    "kueue-cohorts:trainingRuntime.checkpointMountPath": "a path inside the training container",
    "kueue-cohorts:trainingRuntime.imagePullSecrets": "Secrets the kubelet reads in the cluster",
    "kueue-cohorts:trainingRuntime.env{}.secretKeyRef": "a Secret the kubelet reads in the cluster",
    "kueue-cohorts:multiKueue.workers[].secret": "a mapping: its fromFile is marked, its name is a Secret's in the "
                                                 "cluster",
    "kueue-cohorts:monitoring.runbookUrl": "a link written into the alerts, never fetched",
}


def test_every_path_like_key_of_the_schema_is_marked_selecting():
    """Enumerates every key of the settings schema: a key whose name is path-like is marked `Selecting` (and so
    pinned by the live preview), or listed with its reason in NOT_SELECTING. A key added later is held to it."""
    keys = {key_text(path): marker for path, _, marker in fields()}
    unmarked = [key for key, marker in keys.items()
                if path_like(key) and marker is None and key not in NOT_SELECTING]
    assert unmarked == []
    assert set(NOT_SELECTING) <= set(keys)  # no stale exception
    assert {key_text(p): w for p, w in selecting_keys().items()} == {
        "kueue-cohorts:cluster.mode": Selects.TARGET,
        "kueue-cohorts:cluster.renderDir": Selects.PATH,
        "kueue-cohorts:cluster.kubeconfig": Selects.KUBECONFIG,
        "kueue-cohorts:cluster.context": Selects.CONTEXT,
        "kueue-cohorts:kueue.chartSource": Selects.PROGRAM,
        "kueue-cohorts:multiKueue.workers[].kubeconfig": Selects.KUBECONFIG,
        "kueue-cohorts:multiKueue.workers[].context": Selects.CONTEXT,
        "kueue-cohorts:multiKueue.workers[].secret.fromFile": Selects.KUBECONFIG,
        "kueue-cohorts:whatif.trace": Selects.PATH,
    }


# --- pin: every selecting key is the base's ------------------------------------------------------------------------

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20))
anything = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                         st.dictionaries(st.text(max_size=8), inner, max_size=3),
                                                         st.builds(lambda v: {"secure": v}, st.text(max_size=8))),
                        max_leaves=8)
WORKER_NAMES = st.sampled_from(["w1", "w2", "w3"])


def _put(config: dict[str, Any], path: tuple[str, ...], value: Any, names: list[str]) -> None:
    """Set `value` at `path` in `config` (a list step: one item per name of `names`, each a mapping with it)."""
    node: Any = config
    key = f"kueue-cohorts:{path[0]}"
    rest = path[1:]
    while rest:
        step, rest = rest[0], rest[1:]
        if step == LIST:
            items = node.setdefault(key, [{"name": n} for n in names])
            for item in items:
                _put_in(item, rest, value)
            return
        node = node.setdefault(key, {})
        key = step
    node[key] = value


def _put_in(node: dict[str, Any], rest: tuple[str, ...], value: Any) -> None:
    for step in rest[:-1]:
        node = node.setdefault(step, {})
    node[rest[-1]] = value


@pytest.mark.parametrize("path", list(selecting_keys()), ids=key_text)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pr_value=anything, base_value=st.one_of(st.just(pullrequest._ABSENT), st.text(min_size=1, max_size=12)),
       pr_names=st.lists(WORKER_NAMES, unique=True, min_size=1, max_size=3),
       base_names=st.lists(WORKER_NAMES, unique=True, min_size=1, max_size=3))
def test_every_selecting_key_keeps_the_base_value(path, pr_value, base_value, pr_names, base_names):
    """Whatever the pull request writes at a selecting key (a string, a secret, a mapping, a list), the pinned file
    has the base's value there (matched by worker name), or none when the base has none."""
    pr: dict[str, Any] = {"config": {}}
    base: dict[str, Any] = {"config": {}}
    _put(pr["config"], path, pr_value, pr_names)
    if base_value is not pullrequest._ABSENT:
        _put(base["config"], path, base_value, base_names)
    doc, _ = pin(pr, base)
    for key, value in values(doc["config"], path):
        index = re.search(r"\[(\d+)\]", key)
        if LIST in path and index and pr_names[int(index.group(1))] not in base_names:
            assert False, f"{key}: a worker only the pull request has kept {value!r}"
        assert base_value is not pullrequest._ABSENT and value == base_value, (key, value)


def test_only_the_kueue_cohorts_config_of_the_pull_request_is_taken():
    """The engine's own keys and other namespaces' config (a provider's kubeconfig, the secrets provider) are the
    base's; the pull request's settings otherwise come through; what it changed is named."""
    base = {"secretsprovider": "passphrase", "encryptionsalt": "v1:base",
            "config": {"kueue-cohorts:cluster": {"mode": "kubeconfig", "context": "staging"},
                       "kubernetes:context": "staging"}}
    pr = {"secretsprovider": "awskms://alias/theirs", "encryptionsalt": "v1:theirs",
          "config": {"kueue-cohorts:cluster": {"mode": "kubeconfig", "context": "admin", "kubeconfig": "x.json"},
                     "kubernetes:kubeconfig": "x.json", "pulumi:disable-default-providers": [],
                     "kueue-cohorts:monitoring": {"namespace": "mon"},
                     "kueue-cohorts:multiKueue": {"workers": [{"name": "w", "kubeconfig": "k", "context": "c",
                                                               "secret": {"fromFile": "/etc/shadow"}}]}}}
    doc, changed = pin(pr, base)
    assert doc == {"secretsprovider": "passphrase", "encryptionsalt": "v1:base", "config": {
        "kubernetes:context": "staging", "kueue-cohorts:cluster": {"mode": "kubeconfig", "context": "staging"},
        "kueue-cohorts:monitoring": {"namespace": "mon"},
        "kueue-cohorts:multiKueue": {"workers": [{"name": "w", "secret": {}}]}}}
    assert changed == ["kueue-cohorts:cluster.kubeconfig", "kueue-cohorts:cluster.context",
                       "kueue-cohorts:multiKueue.workers[0].kubeconfig", "kueue-cohorts:multiKueue.workers[0].context",
                       "kueue-cohorts:multiKueue.workers[0].secret.fromFile"]


def test_a_secret_or_scalar_where_a_mapping_belongs_is_replaced_by_the_base():
    base = {"config": {"kueue-cohorts:cluster": {"mode": "kubeconfig", "context": "prod"}}}
    for odd in ({"secure": "v1:abc"}, "kubeconfig", ["a"]):
        doc, changed = pin({"config": {"kueue-cohorts:cluster": odd}}, base)
        assert doc["config"]["kueue-cohorts:cluster"] == {"mode": "kubeconfig", "context": "prod"}
        assert changed == ["kueue-cohorts:cluster"]


# --- read_inside: below the repository, no link at any component --------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "file.yaml").write_text("x: 1\n")
    (tmp_path / "outside.yaml").write_text("secret: 1\n")
    return root


def test_read_inside_reads_a_regular_file(repo):
    assert read_inside(repo, "a/b/file.yaml", 100) == b"x: 1\n"


@pytest.mark.parametrize("link", ["a", "a/b", "a/b/file.yaml"])
def test_a_link_at_any_component_is_refused(repo, tmp_path, link):
    """A link anywhere on the way (even one that points inside the repository) is never followed."""
    moved = tmp_path / "moved"
    os.rename(repo / link, moved)
    os.symlink(moved, repo / link)
    with pytest.raises(PullRequestError, match="symbolic link"):
        read_inside(repo, "a/b/file.yaml", 100)


@pytest.mark.parametrize("path", ["../outside.yaml", "/etc/passwd", "a/../../outside.yaml", "~/x", "a//b/file.yaml",
                                  "./a/b/file.yaml"])
def test_a_path_that_could_leave_the_repository_is_refused(repo, path):
    with pytest.raises(PullRequestError, match="must be a path inside the repository"):
        read_inside(repo, path, 100)


def test_a_fifo_or_a_directory_or_a_big_file_is_refused(repo):
    os.mkfifo(repo / "a" / "fifo")
    with pytest.raises(PullRequestError, match="not a regular file"):
        read_inside(repo, "a/fifo", 100)
    with pytest.raises(PullRequestError, match="not a regular file"):
        read_inside(repo, "a/b", 100)
    with pytest.raises(PullRequestError, match="larger than 3 bytes"):
        read_inside(repo, "a/b/file.yaml", 3)


# --- programs / vet: no kubeconfig whose user runs a program --------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=200), anything.map(lambda v: yaml.safe_dump(v).encode()),
                 st.builds(lambda users: yaml.safe_dump({"users": users}).encode(), anything)))
def test_programs_never_raises(text):
    assert isinstance(programs(text), list)


@pytest.mark.parametrize("user,found", [
    ({"exec": {"command": "sh"}}, ["user u has exec"]),
    ({"auth-provider": {"name": "oidc"}}, ["user u has auth-provider"]),
    ({"exec": {}, "auth-provider": {}}, ["user u has exec", "user u has auth-provider"]),
    ({"token": "t"}, []),
])
def test_programs_names_each_user_that_runs_one(user, found):
    assert programs(yaml.safe_dump({"users": [{"name": "u", "user": user}]}).encode()) == found
    assert programs(b'{"users": [{"name": "u", "user": %s}]}' % yaml.safe_dump(user, default_flow_style=True)
                    .strip().encode()) == found  # JSON is a kubeconfig too


def _worker_doc(**worker: Any) -> dict[str, Any]:
    return {"config": {"kueue-cohorts:cluster": {"mode": "kubeconfig", "kubeconfig": "k/main.yaml"},
                       "kueue-cohorts:multiKueue": {"workers": [{"name": "w", **worker}]}}}


def test_vet_refuses_every_kubeconfig_the_run_would_load_with_a_program(repo):
    """The cluster's, each worker's and each worker's fromFile, all at once; a link on the way too."""
    (repo / "k").mkdir()
    exec_config = yaml.safe_dump({"users": [{"name": "u", "user": {"exec": {"command": "sh"}}}]})
    (repo / "k" / "main.yaml").write_text(exec_config)
    (repo / "k" / "worker.yaml").write_text(yaml.safe_dump({"users": [{"name": "v", "user": {"token": "t"}}]}))
    (repo / "k" / "from.yaml").write_text(yaml.safe_dump({"users": [{"name": "f", "user": {"auth-provider": {}}}]}))
    os.symlink(repo / "k" / "worker.yaml", repo / "k" / "link.yaml")
    doc = _worker_doc(kubeconfig="k/link.yaml", context="w", secret={"fromFile": "k/from.yaml"})
    assert vet(repo, doc, {}) == [
        "kueue-cohorts:cluster.kubeconfig = 'k/main.yaml': user u has exec, which the client would run while loading "
        "it. Fix: use a kubeconfig with a token or client certificate (docs/previews.md)",
        "kueue-cohorts:multiKueue.workers[0].kubeconfig = 'k/link.yaml': 'k/link.yaml': a component is a symbolic "
        "link or not a directory (links are never followed: one could point at any file of the runner). Fix: name a "
        "file inside the repository, with no link on the way (the live preview never follows one)",
        "kueue-cohorts:multiKueue.workers[0].secret.fromFile = 'k/from.yaml': user f has auth-provider, which the "
        "client would run while loading it. Fix: use a kubeconfig with a token or client certificate "
        "(docs/previews.md)"]


def test_vet_checks_the_default_kubeconfig_where_a_worker_leaves_it_to_the_default(repo, tmp_path):
    (repo / "k").mkdir()
    (repo / "k" / "main.yaml").write_text(yaml.safe_dump({"users": [{"name": "u", "user": {"token": "t"}}]}))
    default = tmp_path / "job-kubeconfig"
    default.write_text(yaml.safe_dump({"users": [{"name": "j", "user": {"exec": {"command": "x"}}}]}))
    assert vet(repo, _worker_doc(context="w"), {"KUBECONFIG": str(default)}) == [
        f"KUBECONFIG {default}: user j has exec, which the client would run while loading it. Fix: give the live "
        "preview a kubeconfig with a token (docs/previews.md, \"The preview identity\")"]


def test_vet_checks_the_default_kubeconfig_when_one_worker_of_several_leaves_it_to_the_default(repo, tmp_path):
    (repo / "k").mkdir()
    token = yaml.safe_dump({"users": [{"name": "u", "user": {"token": "t"}}]})
    (repo / "k" / "main.yaml").write_text(token)
    (repo / "k" / "w1.yaml").write_text(token)
    default = tmp_path / "job-kubeconfig"
    default.write_text(yaml.safe_dump({"users": [{"name": "j", "user": {"auth-provider": {"name": "gcp"}}}]}))
    doc = _worker_doc(kubeconfig="k/w1.yaml", context="w1")
    doc["config"]["kueue-cohorts:multiKueue"]["workers"].append({"name": "w2", "context": "w2"})
    assert vet(repo, doc, {"KUBECONFIG": str(default)}) == [
        f"KUBECONFIG {default}: user j has auth-provider, which the client would run while loading it. Fix: give the "
        "live preview a kubeconfig with a token (docs/previews.md, \"The preview identity\")"]
    assert vet(repo, _worker_doc(kubeconfig="k/w1.yaml", context="w1"), {"KUBECONFIG": str(default)}) == []
