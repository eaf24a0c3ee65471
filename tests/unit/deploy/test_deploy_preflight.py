"""The cluster preflight of a kubeconfig-mode stack, through the deploy CLI (issue 20.3): before any engine call,
the kubeconfig file and context must exist and the API server must answer; otherwise one line names the context,
the file and the fix. A live API server answering is tested in tests/e2e (the sandbox's)."""
from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml

from tests.deploycli import bare_env, clone, deploy

TEAM = {"PULUMI_BACKEND_URL": "s3://team-bucket/kueue-cohorts", "PULUMI_CONFIG_PASSPHRASE": "team-secret"}


def kubeconfig(path: Path, contexts: dict[str, str], current: str | None = None) -> Path:
    """A kubeconfig with one cluster per context, each at the given server URL."""
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": current or next(iter(contexts)),
        "clusters": [{"name": c, "cluster": {"server": url, "insecure-skip-tls-verify": True}}
                     for c, url in contexts.items()],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": c, "context": {"cluster": c, "user": "u"}} for c in contexts],
    }))
    return path


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return clone(tmp_path_factory.mktemp("clone") / "kueue-cohorts")


def _run(project, tmp_path, stack, **env):
    environment = bare_env(tmp_path, KUEUE_COHORTS_CACHE=str(tmp_path / "empty-cache"), **TEAM, **env)
    proc = deploy(project, "preview", "--stack", stack, env=environment, timeout=120)
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "not built yet" not in proc.stderr  # stopped before the engine (the cache is empty)
    return proc


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_missing_kubeconfig_file(project, tmp_path, stack):
    proc = _run(project, tmp_path, stack, KUBECONFIG=str(tmp_path / "nope"))
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"deploy: stack '{stack}': kubeconfig {tmp_path / 'nope'} does not exist (needed for context \"{stack}\"). "
        "Fix: write the cluster's kubeconfig there, or point KUBECONFIG at it"]


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_missing_context_names_the_context_the_file_and_the_fix(project, tmp_path, stack):
    path = kubeconfig(tmp_path / "config", {"kind-dev": "https://127.0.0.1:1", "other": "https://127.0.0.1:2"})
    proc = _run(project, tmp_path, stack, KUBECONFIG=str(path))
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"deploy: stack '{stack}': context \"{stack}\" does not exist in kubeconfig {path} "
                           "(it has kind-dev, other). Fix: add the context")


def test_merged_kubeconfig_list_is_searched_like_kubectl(project, tmp_path):
    first = kubeconfig(tmp_path / "a", {"kind-dev": "https://127.0.0.1:1"})
    second = kubeconfig(tmp_path / "b", {"staging": f"https://127.0.0.1:{closed_port()}"})
    proc = _run(project, tmp_path, "staging", KUBECONFIG=f"{first}:{second}")
    assert "does not exist" not in proc.stderr  # found in the second file; fails later, at the API server
    assert proc.returncode == 1 and "did not answer GET /version" in proc.stderr


def test_an_api_server_that_does_not_answer(project, tmp_path):
    port = closed_port()
    path = kubeconfig(tmp_path / "config", {"staging": f"https://127.0.0.1:{port}"})
    proc = _run(project, tmp_path, "staging", KUBECONFIG=str(path))
    assert proc.returncode == 1
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"deploy: stack 'staging': the API server of context \"staging\" in kubeconfig {path} "
                           f"(https://127.0.0.1:{port}) did not answer GET /version within 10 s: ")
    assert "Fix: check the network, VPN or credentials of that context" in line


def test_an_unreadable_kubeconfig(project, tmp_path):
    bad = tmp_path / "config"
    bad.write_text("clusters: [this is: not: a kubeconfig")
    proc = _run(project, tmp_path, "prod", KUBECONFIG=str(bad))
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert f"kubeconfig {bad} cannot be read for context \"prod\"" in line and "Fix: repair the file" in line
