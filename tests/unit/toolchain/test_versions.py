"""toolchain/versions.toml is the one source of versions: PyPI pins, the provider plugin and the builder agree."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import re
from pathlib import Path

import pytest

from kueue_cohorts.toolchain import build, versions
from kueue_cohorts.toolchain.versions import ToolchainError

ROOT = Path(__file__).resolve().parents[3]
V = versions.load()


def _requirement_pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        m = re.match(r"^\s*([A-Za-z0-9_.-]+)==([^\s#;]+)", line)
        if m:
            pins[m.group(1).lower()] = m.group(2)
    return pins


@pytest.mark.parametrize("package", sorted(V.pypi))
def test_requirements_pin_equals_versions_file(package):
    assert _requirement_pins().get(package) == V.pypi[package], (
        f"requirements.txt pins {package}=={_requirement_pins().get(package)}, toolchain/versions.toml says "
        f"{V.pypi[package]}: change one of them")


@pytest.mark.parametrize("package", sorted(V.pypi))
def test_installed_distribution_equals_versions_file(package):
    assert importlib.metadata.version(package) == V.pypi[package]


def test_cli_version_equals_python_sdk():
    entry = V.entries["pulumi"]
    assert entry.version == V.pypi["pulumi"]
    assert f"version.Version=v{entry.version}" in " ".join(entry.ldflags), "the CLI is stamped with a leading v"


def test_provider_plugin_is_exactly_what_the_sdk_requests():
    """The engine loads resource plugins by exact version; pulumi_kubernetes' pulumi-plugin.json names it."""
    plugin_json = Path(importlib.util.find_spec("pulumi_kubernetes").origin).parent / "pulumi-plugin.json"
    requested = json.loads(plugin_json.read_text())
    entry = V.entries["pulumi-resource-kubernetes"]
    assert entry.plugin is not None
    assert (entry.plugin.kind, entry.plugin.name) == ("resource", requested["name"])
    assert entry.plugin.version == requested["version"] == V.pypi["pulumi-kubernetes"]
    assert f"version.Version={entry.plugin.version}" in " ".join(entry.ldflags), "provider stamped without a v"
    assert entry.generate_env == {"VERSION": entry.plugin.version}


def test_every_contract_binary_is_pinned():
    names = {o for e in V.entries.values() for o in e.outputs}
    assert names == {"pulumi", "pulumi-resource-kubernetes", "etcd", "kube-apiserver", "kube-controller-manager",
                     "kube-scheduler", "kwok", "kueue", "jobset-controller-manager", "trainer-controller-manager",
                     "actionlint", "kubectl", "kserve-manager", "prometheus", "promtool",
                     # the real node's, built on demand only (group real-node)
                     "runc", "containerd", "containerd-shim-runc-v2", "ctr", "kubelet", "loopback", "bridge",
                     "host-local", "pause"}
    assert V.entry_for("kube-scheduler").name == "kubernetes"
    # kubectl is built from the very module and build of the API server it is compared with (benchmarks/engine.py)
    assert V.entry_for("kubectl").name == "kubernetes"
    assert "k8s.io/kubernetes/cmd/kubectl" in V.entries["kubernetes"].packages
    with pytest.raises(ToolchainError, match="unknown binary 'kubectl-convert'"):
        V.entry_for("kubectl-convert")


def test_kubernetes_stamp_is_a_parseable_semver_matching_the_pin():
    entry = V.entries["kubernetes"]
    flags = dict(f.split(" ", 1)[1].split("=", 1) for f in entry.ldflags)
    major, minor, _ = entry.version.split(".")
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        assert flags[f"{pkg}.gitVersion"] == f"v{entry.version}"
        assert (flags[f"{pkg}.gitMajor"], flags[f"{pkg}.gitMinor"]) == (major, minor)
    assert entry.replace_local_with == f"v0.{minor}.{entry.version.split('.')[2]}"


KUBERNETES_GOMOD = """module k8s.io/kubernetes

go 1.26.0

godebug default=go1.26

require (
\tk8s.io/api v0.0.0
\tgithub.com/x/y v1.0.0
)

replace (
\tk8s.io/api => ./staging/src/k8s.io/api
\tk8s.io/streaming => ./staging/src/k8s.io/streaming // comment
\tgithub.com/a/b => github.com/c/b v1.2.3
)

replace github.com/p/q => ../q
"""


def test_local_replaces_keep_only_directory_targets():
    assert build.local_replaces(KUBERNETES_GOMOD) == ["k8s.io/api", "k8s.io/streaming", "github.com/p/q"]


def test_wrapper_gomod_for_kubernetes():
    text = build.wrapper_gomod(V.entries["kubernetes"], KUBERNETES_GOMOD)
    assert "\ngo 1.26.0\ngodebug default=go1.26\n" in text
    assert "\tk8s.io/api => k8s.io/api v0.36.3\n" in text
    assert "\tk8s.io/streaming => k8s.io/streaming v0.36.3\n" in text
    assert "github.com/a/b" not in text
    assert "\tk8s.io/kubernetes v1.36.3\n" in text
    for pkg in V.entries["kubernetes"].packages:
        assert f"\t{pkg}\n" in text


def test_wrapper_gomod_for_scratch_copy_replaces_module_with_src():
    entry = V.entries["pulumi-resource-kubernetes"]
    text = build.wrapper_gomod(
        entry, "module x\n\ngo 1.24.7\n\nreplace github.com/pulumi/pulumi-kubernetes/sdk/v4 => ../sdk\n"
    )
    assert f"\t{entry.module} => ./src\n" in text
    assert "\tgithub.com/pulumi/pulumi-kubernetes/sdk/v4 v4.25.0\n" in text
    assert "=> ../sdk" not in text


def test_version_replaces_keep_only_module_targets():
    assert build.version_replaces(KUBERNETES_GOMOD) == ["github.com/a/b => github.com/c/b v1.2.3"]
    assert build.version_replaces("replace x/y v1.0.0 => z/y v2.0.0 // why\nreplace a => ./a\n") == [
        "x/y v1.0.0 => z/y v2.0.0"]


def test_the_kserve_wrapper_builds_with_the_controller_runtime_kserve_builds_with():
    """Go ignores a dependency's replaces: without kserve's own `controller-runtime => v0.19.7` the build takes
    v0.20.4, which KEDA v2.16.1 does not compile against (undefined: webhook.Validator)."""
    entry = V.entries["kserve"]
    gomod = "module github.com/kserve/kserve\n\ngo 1.24.1\n\nreplace sigs.k8s.io/controller-runtime => " \
            "sigs.k8s.io/controller-runtime v0.19.7\n"
    text = build.wrapper_gomod(entry, gomod)
    assert "\tsigs.k8s.io/controller-runtime => sigs.k8s.io/controller-runtime v0.19.7\n" in text
    assert "\tgithub.com/kserve/kserve v0.16.0\n" in text and "sigs.k8s.io/kueue" not in text
    assert build.wrapper_gomod(V.entries["kueue"], gomod).count("controller-runtime") == 0


def test_copy_godebug_requires_the_line():
    with pytest.raises(ToolchainError, match="no godebug line"):
        build.wrapper_gomod(V.entries["kubernetes"], "module k8s.io/kubernetes\n\ngo 1.26.0\n")


def _fresh_toolchain(monkeypatch, tmp_path, pulumi_version_output: str | None):
    """toolchain with an empty cache and, on PATH, only a fake `pulumi` printing ``pulumi_version_output``."""
    from kueue_cohorts import toolchain
    monkeypatch.setenv("KUEUE_COHORTS_CACHE", str(tmp_path / "cache"))
    bindir = tmp_path / "path"
    bindir.mkdir()
    if pulumi_version_output is not None:
        fake = bindir / "pulumi"
        fake.write_text(f"#!/bin/sh\necho {pulumi_version_output}\n")
        fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(bindir))
    toolchain._pulumi_on_path.cache_clear()
    return toolchain


def test_a_pulumi_of_the_pinned_version_on_path_is_used_as_is(monkeypatch, tmp_path):
    toolchain = _fresh_toolchain(monkeypatch, tmp_path, f"v{V.entries['pulumi'].version}")
    try:
        assert toolchain.binary("pulumi") == tmp_path / "path" / "pulumi"
    finally:
        toolchain._pulumi_on_path.cache_clear()


@pytest.mark.parametrize("printed", ["v3.258.0", "3.259.0", None])
def test_any_other_pulumi_on_path_is_not_used(monkeypatch, tmp_path, printed):
    toolchain = _fresh_toolchain(monkeypatch, tmp_path, printed)
    try:
        with pytest.raises(ToolchainError,
                           match=r"pulumi 3\.259\.0 is not built yet; run `python -m kueue_cohorts.toolchain"):
            toolchain.binary("pulumi")
    finally:
        toolchain._pulumi_on_path.cache_clear()


def test_analyzer_shim_starts_pulumi_policy_with_the_packs_virtualenv(tmp_path):
    """The shim follows the engine's legacy analyzer contract: `<addr> . -virtualenv=<rel>` with cwd = pack dir."""
    import subprocess

    pack = tmp_path / "pack"
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    pack.mkdir()
    (venv_bin / "python").write_text('#!/bin/sh\necho "$@"\n')
    (venv_bin / "python").chmod(0o755)
    shim = ROOT / "kueue_cohorts" / "toolchain" / "pulumi-analyzer-policy-python"
    out = subprocess.run([str(shim), "127.0.0.1:4242", ".", "-virtualenv=../venv"], cwd=pack,
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["-u", "-m", "pulumi.policy", "127.0.0.1:4242", str(pack)]
    missing = subprocess.run([str(shim), "127.0.0.1:4242", ".", "-virtualenv=../nope"], cwd=pack,
                             capture_output=True, text=True)
    assert missing.returncode == 1 and "has no bin/python" in missing.stderr


def _required_version(gomod: str, module: str) -> str | None:
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", gomod, re.MULTILINE)
    return match.group(1) if match else None


@pytest.mark.parametrize("entry", ["jobset", "trainer"])
def test_job_controllers_are_the_versions_kueue_is_built_against(entry):
    """The JobSet and Trainer controllers (and their CRDs) are exactly the versions Kueue's go.mod requires: the
    APIs its jobset and trainjob integrations compile against."""
    from kueue_cohorts import toolchain
    kueue = V.entries["kueue"]
    gomod = (toolchain.module_dir(kueue.module, kueue.module_version) / "go.mod").read_text()
    pinned = V.entries[entry]
    assert _required_version(gomod, pinned.module) == pinned.module_version
    assert V.crds[entry].version == pinned.module_version
    assert pinned.align_with == (f"{kueue.module} {kueue.module_version}", kueue.packages[0])


def test_wrapper_gomod_aligned_with_kueue_keeps_its_graph_but_builds_only_the_entry():
    entry = V.entries["trainer"]
    text = build.wrapper_gomod(entry, "module github.com/kubeflow/trainer/v2\n\ngo 1.26.0\n")
    assert "\tgithub.com/kubeflow/trainer/v2 v2.2.1\n\tsigs.k8s.io/kueue v0.19.2\n" in text
    assert (
        "tool (\n\tgithub.com/kubeflow/trainer/v2/cmd/trainer-controller-manager\n\tsigs.k8s.io/kueue/cmd/kueue\n)"
        in text
    )
    assert entry.packages == ("github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager",)
