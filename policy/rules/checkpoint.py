"""checkpoint-safe-runtime (stack policy): a training runtime that borrows quota can be preempted at any time,
so it must be able to save a checkpoint on SIGTERM and find it again after re-admission.

Judged for every TrainingRuntime and ClusterTrainingRuntime (trainer.kubeflow.org, any version) unless listed in
the config `exemptRuntimes`, on its trainer pod template (the replicated job named `node` or labelled
`trainer.kubeflow.org/trainjob-ancestor-step: trainer`, Trainer v2 `pkg/constants/constants.go`):
1. it mounts a PersistentVolumeClaim whose claim (in this stack) is ReadWriteMany, so a re-admitted pod on
   another node sees the checkpoints;
2. `terminationGracePeriodSeconds` (Kubernetes default 30 when unset) is at least the configured minimum and
   above the declared checkpoint save time, the annotation `kueue-cohorts/checkpoint-save-seconds` (seconds, on
   the runtime or on the trainer pod template; our runtime component sets it);
3. the trainer container starts in exec form: a `sh -c`/`bash -c` wrapper whose script does not `exec` the
   trainer keeps the shell as PID 1, and SIGTERM never reaches the trainer.
A TrainJob's `spec.trainer.command`/`args` replace the runtime's, so rule 3 is also applied to them.
"""
from __future__ import annotations

import posixpath
import re
from typing import Any, Iterable, Mapping, Optional, Sequence

from .objects import KubeObject, guarded, unknown_violation, violation
from .values import MISSING, UnknownValueError, Violation, as_list, as_map, get

TRAINER_GROUP = "trainer.kubeflow.org"
RUNTIME_KINDS = ("TrainingRuntime", "ClusterTrainingRuntime")
SAVE_SECONDS_ANNOTATION = "kueue-cohorts/checkpoint-save-seconds"
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
DEFAULT_GRACE_SECONDS = 30  # core/v1 PodSpec.terminationGracePeriodSeconds default
SHELLS = {"sh", "bash", "dash", "ash", "zsh", "ksh", "busybox"}
_KEYWORDS = {"then", "else", "do", "{", "(", "!"}
POLICY = "checkpoint-safe-runtime"


def shell_wrapper_problem(command: Sequence[Any], args: Sequence[Any]) -> Optional[str]:
    """Explain why a container start keeps a shell as PID 1, or return None when it is exec form.

    Args:
        command: the container's `command` (empty: the image ENTRYPOINT, which cannot be judged here).
        args: the container's `args`.
    Returns:
        None when the start is exec form (no shell, or a `-c` script whose trainer command is started with
        `exec`); otherwise a sentence fragment saying what is wrong. A script counts as exec form when one of its
        commands (split on newlines, `;`, `&&`, `||`) starts with `exec <program>`; `exec` used only for
        redirections (`exec 2>&1`) does not count.
    """
    argv = [str(a) for a in list(command) + list(args)]
    if not command or not argv:
        return None
    start = 0
    if posixpath.basename(argv[0]) == "env" and len(argv) > 1:
        start = 1
    if posixpath.basename(argv[start]) not in SHELLS:
        return None
    shell = posixpath.basename(argv[start])
    has_c, script = False, None
    for token in argv[start + 1:]:
        if token.startswith("--"):
            continue  # long options such as --login
        if token.startswith("-") and len(token) > 1:
            has_c = has_c or "c" in token[1:]
            continue
        script = token
        break
    if not has_c:
        return (f"runs '{' '.join(argv[start:start + 2])}', a {shell} script as PID 1 that this policy cannot see "
                f"into")
    if script is None:
        return f"runs '{shell} -c' without a script"
    if _script_execs(script):
        return None
    return f"wraps the trainer in '{shell} -c' without exec, so {shell} stays PID 1 and SIGTERM never reaches it"


def _script_execs(script: str) -> bool:
    for line in script.splitlines():
        for part in re.split(r";|&&|\|\|", line):
            tokens = part.split()
            while tokens and tokens[0] in _KEYWORDS:
                tokens = tokens[1:]
            if len(tokens) >= 2 and tokens[0] == "exec" and not re.match(r"^\d*[<>&]", tokens[1]):
                return True
    return False


def _trainer_jobs(runtime: KubeObject) -> list[tuple[str, Any]]:
    jobs = as_list(get(runtime.spec, "template", "spec", "replicatedJobs"))
    picked = []
    for i, job in enumerate(jobs):
        labels = as_map(get(job, "template", "metadata", "labels"))
        if get(job, "name") == "node" or get(labels, ANCESTOR_LABEL) == "trainer":
            picked.append((f"spec.template.spec.replicatedJobs[{i}]", job))
    return picked or [(f"spec.template.spec.replicatedJobs[{i}]", job) for i, job in enumerate(jobs)]


def _seconds(raw: Any) -> Optional[float]:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return None
    return value if value >= 0 else None


def _show_seconds(raw: Any) -> str:
    """Seconds as written, but a JSON/protobuf float that is a whole number without its ".0" (35.0 -> "35")."""
    if isinstance(raw, float) and raw.is_integer():
        return str(int(raw))
    return str(raw)


def _rwx_claims(objects: Sequence[KubeObject], found: list[Violation]) -> dict[str, list[tuple[Optional[str], bool]]]:
    """claim name -> [(namespace, is ReadWriteMany)] for the stack's PersistentVolumeClaims; claims with unknown
    names or access modes are reported into `found` (fail closed) and left out."""
    claims: dict[str, list[tuple[Optional[str], bool]]] = {}
    for pvc in objects:
        if pvc.is_kind("", "PersistentVolumeClaim"):
            try:
                modes = [str(m) for m in as_list(get(pvc.spec, "accessModes"))]
                claims.setdefault(pvc.name, []).append((pvc.namespace, "ReadWriteMany" in modes))
            except UnknownValueError as err:
                found.append(unknown_violation(pvc, err))
    return claims


def _check_runtime(
    runtime: KubeObject, claims: Mapping[str, list[tuple[Optional[str], bool]]], min_grace: int
) -> list[Violation]:
    found = []
    what = f"The {runtime.describe()}"
    jobs = _trainer_jobs(runtime)
    if not jobs:
        return [violation(runtime, POLICY, "spec.template.spec.replicatedJobs", MISSING,
                          "a training runtime needs its trainer replicated job to be judged",
                          "add the trainer replicated job 'node'",
                          message=f"{what} has no spec.template.spec.replicatedJobs, so its trainer cannot be checked; "
                          f"add the trainer replicated job 'node'.")]
    for job_path, job in jobs:
        pod_path = f"{job_path}.template.spec.template.spec"
        pod = as_map(get(job, "template", "spec", "template", "spec"))
        template_meta = as_map(get(job, "template", "spec", "template", "metadata"))
        declared = get(runtime.annotations, SAVE_SECONDS_ANNOTATION)
        if declared is MISSING:
            declared = get(as_map(get(template_meta, "annotations")), SAVE_SECONDS_ANNOTATION)
        save = None
        if declared is not MISSING:
            save = _seconds(declared)
            if save is None:
                found.append(violation(
                    runtime, POLICY, f'metadata.annotations["{SAVE_SECONDS_ANNOTATION}"]', declared,
                    "the checkpoint save time is a number of seconds", "write it in seconds, e.g. \"20\"",
                    message=f"{what} declares {SAVE_SECONDS_ANNOTATION}: {declared!r}, which is not a number of "
                    f"seconds; write the checkpoint save time in seconds, e.g. \"20\"."))
        raw_grace = get(pod, "terminationGracePeriodSeconds")
        grace = DEFAULT_GRACE_SECONDS if raw_grace is MISSING else _seconds(raw_grace)
        shown = (f"not set (Kubernetes default {DEFAULT_GRACE_SECONDS})" if raw_grace is MISSING
                 else _show_seconds(raw_grace))
        if grace is None or grace < min_grace or (save is not None and grace <= save):
            need = f"at least {min_grace}"
            if save is not None:
                need += f" and above the declared checkpoint save time of {_show_seconds(declared)} seconds"
            found.append(violation(
                runtime, POLICY, f"{pod_path}.terminationGracePeriodSeconds", raw_grace,
                f"the grace period must be {need}, so that a preempted trainer can finish writing its checkpoint "
                "before it is killed",
                f"set terminationGracePeriodSeconds to {need.replace('at least ', 'at least ')}",
                message=f"{what} has {pod_path}.terminationGracePeriodSeconds {shown}; it must be {need}, so that a "
                f"preempted trainer can finish writing its checkpoint before it is killed."))

        containers = as_list(get(pod, "containers"))
        trainers = [(i, c) for i, c in enumerate(containers) if get(c, "name") == "node"] or list(enumerate(containers))
        volumes = {get(v, "name"): get(v, "persistentVolumeClaim", "claimName") for v in as_list(get(pod, "volumes"))}
        mounted = []
        for _, container in trainers:
            for mount in as_list(get(container, "volumeMounts")):
                claim = volumes.get(get(mount, "name"), MISSING)
                if claim is not MISSING:
                    mounted.append(str(claim))
        if not mounted:
            found.append(violation(
                runtime, POLICY, f"{pod_path}.volumes", MISSING,
                "the trainer container must mount a ReadWriteMany PersistentVolumeClaim for its checkpoints",
                "mount the checkpoint claim (inferenceTraining.training.checkpoint)",
                message=f"{what} mounts no PersistentVolumeClaim into its trainer container ({pod_path}); mount a "
                f"ReadWriteMany claim for checkpoints, so that a re-admitted pod on another node resumes from them."))
        else:
            namespace = runtime.namespace if runtime.kind == "TrainingRuntime" else None
            for claim in dict.fromkeys(mounted):
                matches = [rwx for ns, rwx in claims.get(claim, []) if namespace is None or ns in (namespace, None)]
                if not matches:
                    found.append(violation(
                        runtime, POLICY, f"{pod_path}.volumes", claim,
                        "the checkpoint claim must be in this stack, so that its access mode can be checked",
                        "define the claim in this stack with accessModes [ReadWriteMany]",
                        message=
                            f"{what} mounts PersistentVolumeClaim '{claim}', which is not in this stack, so its access "
                        f"mode cannot be checked and the policy fails closed; define the claim in this stack with "
                        f"accessModes [ReadWriteMany]."))
                elif not any(matches):
                    found.append(violation(
                        runtime, POLICY, f"{pod_path}.volumes", claim,
                        "checkpoints must be on a ReadWriteMany claim", "use a ReadWriteMany claim",
                        message=
                            f"{what} mounts PersistentVolumeClaim '{claim}', which is not ReadWriteMany; checkpoints "
                        f"must be on a ReadWriteMany claim so that a re-admitted pod on another node can read them."))

        for i, container in trainers:
            problem = shell_wrapper_problem(as_list(get(container, "command")), as_list(get(container, "args")))
            if problem:
                found.append(violation(
                    runtime, POLICY, f"{pod_path}.containers[{i}].command", get(container, "command"), problem,
                    "start the trainer in exec form (command: [python, train.py]) or end the script with "
                    "'exec <trainer>'",
                    message=f"{what} trainer container '{get(container, 'name')}' ({pod_path}.containers[{i}]) "
                    f"{problem}; start the trainer in exec form (command: [python, train.py]) or end the script with "
                    f"'exec <trainer>'."))
    return found


def check_checkpoint_safe_runtime(objects: Iterable[KubeObject], min_grace_seconds: int = 60,
                                  exempt_runtimes: Iterable[str] = ()) -> list[Violation]:
    """checkpoint-safe-runtime over the whole stack.

    Args:
        objects: every Kubernetes object of the stack (runtimes, TrainJobs and PersistentVolumeClaims are read).
        min_grace_seconds: policy config `minTerminationGracePeriodSeconds` (default 60).
        exempt_runtimes: policy config `exemptRuntimes`: runtimes not meant for borrowing training.
    Returns:
        Violations as described in the module docstring, plus fail-closed ones for unknown values.
    """
    objects = list(objects)
    exempt = set(exempt_runtimes)
    found: list[Violation] = []
    claims = _rwx_claims(objects, found)
    for obj in objects:
        if obj.group != TRAINER_GROUP:
            continue
        if obj.kind in RUNTIME_KINDS:
            def check_runtime(obj: KubeObject = obj) -> list[Violation]:
                return [] if obj.name in exempt else _check_runtime(obj, claims, min_grace_seconds)
            found.extend(guarded(obj, check_runtime))
        elif obj.kind == "TrainJob":
            def check_trainjob(obj: KubeObject = obj) -> list[Violation]:
                trainer = as_map(get(obj.spec, "trainer"))
                problem = shell_wrapper_problem(as_list(get(trainer, "command")), as_list(get(trainer, "args")))
                if not problem:
                    return []
                return [violation(
                    obj, POLICY, "spec.trainer.command", get(trainer, "command"), problem,
                    "start the trainer in exec form or end the script with 'exec <trainer>'",
                    message=f"The {obj.describe()} spec.trainer {problem}; start the trainer in exec form or end the "
                    f"script with 'exec <trainer>'.")]
            found.extend(guarded(obj, check_trainjob))
    return found
