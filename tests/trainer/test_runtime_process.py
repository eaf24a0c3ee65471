"""The pod that PreemptibleTrainingRuntime renders, started the way a container runtime starts it.

A small stand-in for the kubelet reads the rendered TrainingRuntime and ConfigMap: it writes the ConfigMap's files
where the `trainer` volume is mounted, maps every volumeMount to a host directory, resolves the downward-API env
(the pod's jobset-name label, i.e. the TrainJob name) and `$(VAR)` references, and execs the container's command in
a new PID namespace (util-linux `unshare --pid --fork`), so the command runs as PID 1, as in a container. A PID 1
that has not installed a SIGTERM handler ignores SIGTERM, so this also proves the entrypoint installs it.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Optional

import pytest

from kueue_cohorts.components.model import runtime as runtime_manifests
from kueue_cohorts.components.resources import training
from kueue_cohorts.policy.rules.checkpoint_safe_runtime import check_checkpoint_safe_runtime
from kueue_cohorts.trainer import checkpoints
from kueue_cohorts.trainer.entrypoint import PREEMPTED_EXIT_CODE
from kueue_cohorts.trainer.local.process import ROOT, TrainerProcess
from tests.policy.fixtures import kube

TRAINJOB = "c12-run-e"


def _container(manifest: dict) -> tuple[dict, dict]:
    (job,) = manifest["spec"]["template"]["spec"]["replicatedJobs"]
    pod = job["template"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    return pod, container


def _expand(value: str, env: dict[str, str]) -> str:
    """Kubernetes `$(VAR)` expansion of earlier variables (core/v1 EnvVar.value)."""
    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m.group(1), m.group(0)), value)


def kubelet_start(manifest: dict, config_map: dict[str, str], host: Path, pod_labels: dict[str, str]) -> TrainerProcess:
    """Materialise the pod's volumes under `host` (a stand-in root file system) and start its container command as
    PID 1 of a new PID namespace.

    Each volumeMount's path P becomes `host/P`; env values and workingDir that are P, under P or an ancestor of P
    (PYTHONPATH is the parent of the `trainer` mount) are rewritten the same way.
    """
    pod, container = _container(manifest)
    volumes = {v["name"]: v for v in pod["volumes"]}
    mount_paths = []
    for mount in container["volumeMounts"]:
        target = host / mount["mountPath"].lstrip("/")
        target.mkdir(parents=True)
        volume = volumes[mount["name"]]
        if "configMap" in volume:
            for key, text in config_map.items():
                (target / key).write_text(text)
                (target / key).chmod(volume["configMap"]["defaultMode"])
        mount_paths.append(mount["mountPath"])

    def to_host(value: str) -> str:
        for path in mount_paths:
            if value == path or value.startswith(path + "/") or path.startswith(value.rstrip("/") + "/"):
                return str(host / value.lstrip("/"))
        return value

    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(host / "home")}
    for item in container["env"]:
        if "valueFrom" in item:
            (label,) = re.fullmatch(
                r"metadata\.labels\['([^']+)'\]", item["valueFrom"]["fieldRef"]["fieldPath"]
            ).groups()
            env[item["name"]] = pod_labels[label]
        else:
            env[item["name"]] = to_host(_expand(item["value"], env))
    unshare = shutil.which("unshare")
    assert unshare, "util-linux unshare is needed to run the command as PID 1 in a new PID namespace"
    argv = (
        [unshare, "--pid", "--fork", "--kill-child", "--mount-proc", "--"]
        + container["command"]
        + container.get("args", [])
    )
    return TrainerProcess(argv, env, cwd=Path(to_host(container["workingDir"])))


def _child(pid: int, timeout: float = 30) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        if children:
            return int(children[0])
        time.sleep(0.05)
    raise AssertionError("unshare started no child")


@pytest.mark.timeout(300)
def test_rendered_runtime_runs_python_as_pid_1_and_sigterm_flushes_a_checkpoint(tmp_path):
    settings = training.TrainingRuntimeSettings.model_validate(
        {"image": "registry.example/trainer:1",
         "secondsPerStep": 1, "maxLostWorkSeconds": 5, "env": {"KUEUE_COHORTS_DEMO_MAX_STEPS": "100000",
                                                                 "OMP_NUM_THREADS": "1"}}
    )
    manifest = runtime_manifests.render_runtime(settings, "c12-training", "c12-ckpt")
    process = kubelet_start(manifest, runtime_manifests.trainer_sources(), tmp_path,
                            {"jobset.sigs.k8s.io/jobset-name": TRAINJOB})
    try:
        process.wait_for(r"saved checkpoint-5 ")  # KUEUE_COHORTS_SAVE_STEPS=5 from the runtime's plan
        pid = _child(process.proc.pid)
        status = Path(f"/proc/{pid}/status").read_text()
        (nspid,) = re.findall(r"^NSpid:\s+(.*)$", status, re.M)
        assert nspid.split()[-1] == "1", f"the command is not PID 1 in its namespace: NSpid {nspid}"
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:-1]
        assert [part.decode() for part in cmdline] == container_command(manifest)  # python itself, no shell
        process.send(signal.SIGTERM, pid=pid)
        assert process.wait() == PREEMPTED_EXIT_CODE, process.log()
    finally:
        if process.proc.poll() is None:
            process.proc.kill()
    (line,) = [ln for ln in process.ours() if ln.startswith("preempted:")]
    step = int(re.match(r"preempted: stopped at global step (\d+) with checkpoint-\1 complete", line).group(1))
    run_dir = tmp_path / "mnt" / "checkpoints" / TRAINJOB  # <checkpoint root>/<TrainJob name>
    assert checkpoints.newest_complete(run_dir).step == step
    assert 5 <= step < 100000


def container_command(manifest: dict) -> list[str]:
    return _container(manifest)[1]["command"]


def test_the_configmap_package_is_self_contained():
    """The entrypoint ships alone: no module in it imports the Pulumi program or the tests."""
    for name, text in runtime_manifests.trainer_sources().items():
        assert not re.search(r"^\s*(from|import)\s+(components|tests|pulumi)\b", text, re.M), name
    main = (ROOT / "kueue_cohorts" / "trainer" / "__main__.py").read_text()
    assert main == runtime_manifests.trainer_sources()["__main__.py"]
    assert os.access(ROOT / "kueue_cohorts" / "trainer" / "__main__.py", os.R_OK)


def _held_runtime(tmp_path: Path, command: Optional[list[str]] = None) -> tuple[dict, TrainerProcess]:
    """Our rendered runtime (save every 5 steps), its trainer held inside step 8 until SIGTERM reaches it
    (trainer.local.recipes, shipped in the ConfigMap beside the entrypoint), started as the kubelet would; `command`
    replaces the container's command (a shell wrapper, as a user might write it)."""
    settings = training.TrainingRuntimeSettings.model_validate(
        {"image": "registry.example/trainer:1", "secondsPerStep": 1, "maxLostWorkSeconds": 5,
         "recipe": "trainer.local_recipes:build_trainer",
         "env": {"KUEUE_COHORTS_DEMO_MAX_STEPS": "100000", "OMP_NUM_THREADS": "1",
                 "KUEUE_COHORTS_TEST_HOLD": "step:7"}})
    manifest = runtime_manifests.render_runtime(settings, "c12-training", "c12-ckpt")
    if command is not None:
        _container(manifest)[1]["command"] = command
    sources = {**runtime_manifests.trainer_sources(),
               "local_recipes.py": (ROOT / "kueue_cohorts/trainer/local/recipes.py").read_text()}
    return manifest, kubelet_start(manifest, sources, tmp_path, {"jobset.sigs.k8s.io/jobset-name": TRAINJOB})


def _judged(manifest: dict) -> list[str]:
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c12-ckpt",
                                                                             "namespace": "c12-training"},
           "spec": {"accessModes": ["ReadWriteMany"]}}
    return [v.message for v in check_checkpoint_safe_runtime([kube("runtime", manifest), kube("ckpt", pvc)])]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("command", [
    ["/bin/sh", "-c", "python -m trainer; echo trainer exited $?"],
    ["/bin/bash", "-c", "cd . && python -m trainer\necho trainer exited"],
    ["env", "A=1", "/bin/sh", "-c", "python -m trainer || exit 1"],
])
def test_a_shell_wrapped_trainer_never_hears_sigterm_and_loses_the_steps_since_its_save(tmp_path, command):
    """Harm without the rule: the shell stays PID 1, ignores the kubelet's SIGTERM (no handler, PID 1) and does not
    pass it on, so at the kubelet's SIGKILL the trainer, inside step 8, has saved nothing since checkpoint-5. The
    rule refuses that runtime; the same runtime in exec form saves step 8 and exits 75."""
    manifest, process = _held_runtime(tmp_path, command)
    try:
        process.wait_for(r"^HOLD step 7$")  # inside step 8, checkpoint-5 written
        init = _child(process.proc.pid)
        shell = Path(f"/proc/{init}/cmdline").read_bytes().split(b"\0")[0].decode()
        assert shell in ("/bin/sh", "/bin/bash"), shell  # the shell is PID 1 (env replaced itself with it)
        process.send(signal.SIGTERM, pid=init)  # the kubelet's SIGTERM to the container's PID 1
        time.sleep(3)  # a grace period: the trainer never learns of it
        assert process.proc.poll() is None and not any("SIGTERM received" in line for line in process.lines), \
            process.log()
        process.send(signal.SIGKILL, pid=init)  # grace period over: the kubelet's SIGKILL ends the namespace
        process.wait()
    finally:
        if process.proc.poll() is None:
            process.proc.kill()
    run_dir = tmp_path / "mnt" / "checkpoints" / TRAINJOB
    assert checkpoints.newest_complete(run_dir).step == 5  # steps 6, 7 and the one in flight are lost
    [refused] = _judged(manifest)
    assert "so sh stays PID 1 and SIGTERM never reaches it" in refused or \
        "so bash stays PID 1 and SIGTERM never reaches it" in refused, refused


@pytest.mark.timeout(300)
def test_the_same_runtime_in_exec_form_saves_the_step_in_flight(tmp_path):
    manifest, process = _held_runtime(tmp_path)
    try:
        process.wait_for(r"^HOLD step 7$")
        process.send(signal.SIGTERM, pid=_child(process.proc.pid))
        assert process.wait() == PREEMPTED_EXIT_CODE, process.log()
    finally:
        if process.proc.poll() is None:
            process.proc.kill()
    assert checkpoints.newest_complete(tmp_path / "mnt" / "checkpoints" / TRAINJOB).step == 8
    assert _judged(manifest) == []


TRAP = "trap 'kill -TERM $pid' TERM; python -m trainer & pid=$!; wait $pid"


@pytest.mark.timeout(300)
def test_a_forwarding_trap_that_waits_once_ends_the_container_before_the_trainer_has_saved(tmp_path):
    """The trap forwards SIGTERM, but the trapped signal ends the only `wait` at once (POSIX wait): bash exits with
    143 (always: the wait is interrupted, whatever the trainer does) and the PID namespace dies with it, taking the
    trainer, which still had a step and a save to do. The exit code is bash's 143, not the trainer's 75, so the pod's
    reclaim would also count as a failure."""
    manifest, process = _held_runtime(tmp_path, ["/bin/bash", "-c", TRAP])
    try:
        process.wait_for(r"^HOLD step 7$")
        process.send(signal.SIGTERM, pid=_child(process.proc.pid))  # to bash, PID 1: its trap forwards it
        assert process.wait() == 128 + signal.SIGTERM, process.log()
    finally:
        if process.proc.poll() is None:
            process.proc.kill()
    [refused] = _judged(manifest)
    assert "waits only once" in refused, refused


@pytest.mark.timeout(300)
def test_a_forwarding_trap_that_waits_again_lets_the_trainer_save(tmp_path):
    manifest, process = _held_runtime(tmp_path, ["/bin/bash", "-c", TRAP + "; wait $pid"])
    try:
        process.wait_for(r"^HOLD step 7$")
        process.send(signal.SIGTERM, pid=_child(process.proc.pid))
        assert process.wait() == PREEMPTED_EXIT_CODE, process.log()  # the second wait returns the trainer's code
    finally:
        if process.proc.poll() is None:
            process.proc.kill()
    assert checkpoints.newest_complete(tmp_path / "mnt" / "checkpoints" / TRAINJOB).step == 8
    assert _judged(manifest) == []
