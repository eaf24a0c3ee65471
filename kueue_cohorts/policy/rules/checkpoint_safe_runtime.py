"""CHECKPOINT_SAFE_RUNTIME (stack policy), promise 4: a preempted trainer loses at most one save interval.

A training runtime that borrows quota can be reclaimed at any time. Kueue evicts the Workload and suspends the
TrainJob (Kueue v0.19.2 `pkg/controller/jobs/trainjob`), the Trainer suspends the JobSet, JobSet suspends its Jobs
(JobSet v0.12.0 `pkg/controllers/jobset_controller.go` suspendJobs) and the Job controller deletes their pods
(Kubernetes v1.36.3 `pkg/controller/job/job_controller.go` manageJob). The kubelet then runs the container's preStop
hook, sends SIGTERM, and SIGKILLs what is left when the grace period is over (`pkg/kubelet/kuberuntime/
kuberuntime_container.go` killContainer). For the trainer to lose at most the steps since its last save:

Judged for every TrainingRuntime and ClusterTrainingRuntime (trainer.kubeflow.org, any version) unless listed in
the config `exemptRuntimes`, on its trainer pod template (the replicated job named `node` or labelled
`trainer.kubeflow.org/trainjob-ancestor-step: trainer`, Trainer v2.2.1 `pkg/constants/constants.go`):
1. the save can be written where the next attempt finds it: the trainer container mounts a PersistentVolumeClaim
   whose claim (in this stack) is ReadWriteMany, neither the mount (`volumeMounts[].readOnly`) nor the volume
   (`persistentVolumeClaim.readOnly`) read-only; when the container sets `KUEUE_COHORTS_CHECKPOINT_ROOT`, the
   mount holding that path is the one judged;
2. there is time to save: `terminationGracePeriodSeconds` (Kubernetes default 30 when unset) minus what a preStop
   hook spends of it (killContainer subtracts the hook's run time from the grace period before SIGTERM; a `sleep`
   hook or an exec of `sleep N` spends N seconds, any other exec or httpGet hook an unknown part, up to all of it)
   is at least the configured minimum and above the declared checkpoint save time, the annotation
   `kueue-cohorts/checkpoint-save-seconds` (seconds, on the runtime or on the trainer pod template);
3. SIGTERM reaches the trainer: the start (`command` + `args`) is judged by `signals.signal_problem` (shell
   wrappers in any form, exec wrappers, forwarding inits);
4. a stop is not a failure. What the pinned controllers count (checked on the sandbox,
   tests/e2e/test_08_trainjob_reclaimed_again_and_again.py): a Kueue reclaim itself never counts, as suspend is no
   JobSet restart (suspendJobs leaves `status.restarts` alone) and the Job controller takes its tracking finalizer
   off every pod it deletes for a suspension before it deletes it (`pkg/controller/job/job_controller.go`
   manageJob -> deleteJobPods, removeTrackingFinalizerPatch), so those pods are neither failures nor completions.
   A pod that ends while its Job still tracks it does count: evicted or drained (the eviction API marks it
   DisruptionTarget and deletes it), preempted by the scheduler, or failing before its own Job is suspended (JobSet
   suspends its Jobs one by one). It counts as failed (isPodFailed: "Count deleted Pods as failures") unless the Job
   has a podFailurePolicy whose first rule matching it is `Ignore`; past backoffLimit the Job fails, and JobSet fails
   the JobSet without a failurePolicy or restarts it counting toward `failurePolicy.maxRestarts` (JobSet v0.12.0
   `pkg/controllers/failure_policy.go` executeFailurePolicy, restartJobSetActionApplier; the count jobset#1117
   reports). A trainer that exits 0 after its save is worse there: the kubelet makes a deleted pod whose containers
   all exited 0 `Succeeded` (`pkg/kubelet/kubelet_pods.go` getPhase) and the Job counts it as a completion, so a
   drained TrainJob ends Complete half-trained. So the runtime declares the exit code of its trainer after a stop
   save, the annotation `kueue-cohorts/preempted-exit-code` (on the runtime or its trainer pod template; 1-127: not
   0, not a signal's 128+n), and the trainer Job sets `restartPolicy: Never` and a `podFailurePolicy` whose first
   rule matching that code in the trainer container is `Ignore`.
A TrainJob of the stack is judged too (Trainer v2.2.1 `pkg/runtime/framework/plugins/jobset/builder.go`: its
`spec.trainer.command` and `args` each replace the runtime's, its `env` is upserted over the runtime's): its
`runtimeRef` (kind default ClusterTrainingRuntime) names a runtime of this stack (one outside it cannot be judged,
fail closed), its start is judged as in 3 with the runtime's command or args where it sets none, and its env does
not override the variables the runtime's save depends on (`RESERVED_ENV`); its `spec.runtimePatches` are merged into
the runtime as the Trainer merges them (`pkg/runtime/core/trainingruntime.go` mergeRuntimePatches, a strategic merge:
a patch can replace the checkpoint volume, remount it read-only or change the env) and the patched runtime is judged
again, what the patches break reported on the TrainJob. Its numNodes and resourcesPerNode are judged by
TRAINING_RUNTIME_FITS_QUEUE.
"""
from __future__ import annotations

import posixpath
import re
from typing import Any, Iterable, Mapping, Optional, Sequence

from .vocabulary.declaration import Declaration, Level, Promise, Scope, integer, names
from .vocabulary.durations import seconds_field
from .vocabulary.objects import KubeObject, guarded, unknown_violation, violation
from .vocabulary.signals import signal_problem
from .vocabulary.trainer import RUNTIME_KINDS, TRAINER_GROUP, runtime_of, trainer_jobs
from .vocabulary.values import MISSING, UnknownValueError, Violation, as_list, as_map, get, is_list, is_map

SAVE_SECONDS_ANNOTATION = "kueue-cohorts/checkpoint-save-seconds"
PREEMPTED_EXIT_CODE_ANNOTATION = "kueue-cohorts/preempted-exit-code"
DEFAULT_GRACE_SECONDS = 30  # core/v1 PodSpec.terminationGracePeriodSeconds default
CHECKPOINT_ROOT_ENV = "KUEUE_COHORTS_CHECKPOINT_ROOT"
RESERVED_ENV = frozenset({"PYTHONPATH", "KUEUE_COHORTS_RUN_NAME", CHECKPOINT_ROOT_ENV, "KUEUE_COHORTS_RECIPE",
                          "KUEUE_COHORTS_SAVE_STEPS"})
"""The variables a runtime of ours sets for its trainer's save and resume (components/model/runtime.py): a
TrainJob's env must not replace them (the checkpoint root, the run's directory, the save interval, the code)."""


def _trainer_containers(pod: Any) -> list[tuple[int, Any]]:
    """The trainer container(s) of a pod spec: the one named `node` (Trainer constants.Node), else all."""
    containers = as_list(get(pod, "containers"))
    return [(i, c) for i, c in enumerate(containers) if get(c, "name") == "node"] or list(enumerate(containers))


def _show_seconds(raw: Any) -> str:
    """Seconds as written, but a JSON/protobuf float that is a whole number without its ".0" (35.0 -> "35")."""
    if isinstance(raw, float) and raw.is_integer():
        return str(int(raw))
    return str(raw)


def prestop_seconds(container: Any) -> tuple[Optional[float], str]:
    """What a container's preStop hook spends of the grace period, in seconds, and how it is described.

    Returns (0, "") without a hook; (N, "a preStop sleep of N s") for `lifecycle.preStop.sleep.seconds` or an exec
    of `sleep N` (also `sh -c "sleep N"`); (None, "<what>") for any other hook (exec, httpGet, tcpSocket): the
    kubelet waits for it up to the whole grace period (killContainer, executePreStopHook), so its cost is unknown.
    """
    hook = get(container, "lifecycle", "preStop")
    if hook is MISSING or hook is None:
        return 0.0, ""
    sleep = get(hook, "sleep", "seconds")
    if sleep is not MISSING:
        value = seconds_field(sleep)
        return value, f"a preStop sleep of {_show_seconds(sleep)} s"
    command = [str(w) for w in as_list(get(hook, "exec", "command"))]
    if command:
        words = command
        if posixpath.basename(words[0]) in ("sh", "bash", "dash", "ash") and len(words) >= 3 and "c" in words[1]:
            words = words[2].split()
        if len(words) == 2 and posixpath.basename(words[0]) == "sleep":
            match = re.fullmatch(r"(\d+(?:\.\d+)?)s?", words[1])
            if match:
                return float(match.group(1)), f"a preStop exec of '{' '.join(command)}'"
        return None, f"a preStop exec of '{' '.join(command)}'"
    for kind in ("httpGet", "tcpSocket"):
        if get(hook, kind) is not MISSING:
            return None, f"a preStop {kind} hook"
    return None, "a preStop hook"


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


def _env_value(container: Any, name: str) -> Any:
    for entry in as_list(get(container, "env")):
        if get(entry, "name") == name:
            return get(entry, "value")
    return MISSING


def _linux_path(path: str, cwd: str = "") -> str:
    """``path`` as the kernel resolves it in the container: joined to ``cwd`` (the container's workingDir) when
    relative, ``.``/``..``/repeated slashes folded, and a leading ``//`` read as ``/`` (POSIX leaves it to the system
    and ``posixpath.normpath`` keeps it; Linux gives it no meaning, and runc cleans a mount's destination with Go's
    ``filepath.Clean``, which folds it too: opencontainers/runc v1.3 ``libcontainer/rootfs_linux.go``). A relative
    path with no ``cwd`` stays relative (the image's WORKDIR is unknown here), and so is under no mount."""
    clean = posixpath.normpath(posixpath.join(cwd, path) if cwd.startswith("/") else path)
    return "/" + clean.lstrip("/") if clean.startswith("//") else clean


def _under(path: str, mount: str) -> bool:
    """Whether ``path`` (resolved, ``_linux_path``) lies in the volume mounted at ``mount``: equal to it or below it."""
    mount = _linux_path(mount)
    return path == mount or path.startswith(mount.rstrip("/") + "/")


def _check_grace(runtime: KubeObject, job: Any, pod: Any, pod_path: str, min_grace: int) -> list[Violation]:
    found: list[Violation] = []
    what = f"The {runtime.describe()}"
    template_meta = as_map(get(job, "template", "spec", "template", "metadata"))
    declared = get(runtime.annotations, SAVE_SECONDS_ANNOTATION)
    if declared is MISSING:
        declared = get(as_map(get(template_meta, "annotations")), SAVE_SECONDS_ANNOTATION)
    save = None
    if declared is not MISSING:
        save = seconds_field(declared)
        if save is None:
            found.append(violation(
                runtime, CHECKPOINT_SAFE_RUNTIME.name, f'metadata.annotations["{SAVE_SECONDS_ANNOTATION}"]', declared,
                "the checkpoint save time is a number of seconds", "write it in seconds, e.g. \"20\"",
                message=f"{what} declares {SAVE_SECONDS_ANNOTATION}: {declared!r}, which is not a number of "
                f"seconds; write the checkpoint save time in seconds, e.g. \"20\"."))
    raw_grace = get(pod, "terminationGracePeriodSeconds")
    grace = DEFAULT_GRACE_SECONDS if raw_grace is MISSING else seconds_field(raw_grace)
    shown = (f"not set (Kubernetes default {DEFAULT_GRACE_SECONDS})" if raw_grace is MISSING
             else _show_seconds(raw_grace))
    need = f"at least {min_grace}"
    if save is not None:
        need += f" and above the declared checkpoint save time of {_show_seconds(declared)} seconds"
    if grace is None or grace < min_grace or (save is not None and grace <= save):
        found.append(violation(
            runtime, CHECKPOINT_SAFE_RUNTIME.name, f"{pod_path}.terminationGracePeriodSeconds", raw_grace,
            f"the grace period must be {need}, so that a preempted trainer can finish writing its checkpoint "
            "before it is killed",
            f"set terminationGracePeriodSeconds to {need}",
            message=f"{what} has {pod_path}.terminationGracePeriodSeconds {shown}; it must be {need}, so that a "
            f"preempted trainer can finish writing its checkpoint before it is killed."))
        return found
    for i, container in _trainer_containers(pod):
        spent, hook = prestop_seconds(container)
        if not hook:
            continue
        field = f"{pod_path}.containers[{i}].lifecycle.preStop"
        value = get(container, "lifecycle", "preStop")
        if spent is None:
            rule = (f"the kubelet runs {hook} before SIGTERM and counts it against the grace period of "
                    f"{_show_seconds(grace)} s, and how long it takes cannot be known here, so the trainer may be "
                    "left no time to save")
            fix = "remove the preStop hook from the trainer container (the trainer saves on SIGTERM by itself)"
        elif grace - spent < min_grace or (save is not None and grace - spent <= save):
            rule = (f"the kubelet runs {hook} before SIGTERM and counts it against the grace period, which leaves "
                    f"the trainer {_show_seconds(grace - spent)} of {_show_seconds(grace)} s; it needs {need}")
            fix = (f"remove the preStop hook, or raise terminationGracePeriodSeconds by its {_show_seconds(spent)} s")
        else:
            continue
        found.append(violation(runtime, CHECKPOINT_SAFE_RUNTIME.name, field, value, rule, fix,
                               message=f"{what} trainer container '{get(container, 'name')}' has {field}: {rule}; "
                               f"{fix}."))
    return found


def _check_mounts(runtime: KubeObject, pod: Any, pod_path: str,
                  claims: Mapping[str, list[tuple[Optional[str], bool]]]) -> list[Violation]:
    found: list[Violation] = []
    what = f"The {runtime.describe()}"
    volumes = {get(v, "name"): (j, v) for j, v in enumerate(as_list(get(pod, "volumes")))}
    judged: list[tuple[str, Any, str, Any, int]] = []  # (claim, mount, mount field, volume, volume index)
    for i, container in _trainer_containers(pod):
        root = _env_value(container, CHECKPOINT_ROOT_ENV)
        mounts = list(enumerate(as_list(get(container, "volumeMounts"))))
        if isinstance(root, str):
            cwd = get(container, "workingDir")
            resolved = _linux_path(root, cwd if isinstance(cwd, str) else "")
            holding = [(k, m) for k, m in mounts if _under(resolved, str(get(m, "mountPath")))]
            holding.sort(key=lambda km: len(_linux_path(str(get(km[1], "mountPath")))))
            mounts = holding[-1:]
            if not mounts or get(volumes.get(get(mounts[0][1], "name"), (0, {}))[1], "persistentVolumeClaim") \
                    is MISSING:
                found.append(violation(
                    runtime, CHECKPOINT_SAFE_RUNTIME.name,
                    f"{pod_path}.containers[{i}].env[{CHECKPOINT_ROOT_ENV}]", root,
                    "the checkpoint root must be on a mounted PersistentVolumeClaim",
                    "mount the checkpoint claim at the checkpoint root",
                    message=f"{what} trainer container '{get(container, 'name')}' writes its checkpoints to "
                    f"{CHECKPOINT_ROOT_ENV}={root!r}, which is on no mounted PersistentVolumeClaim, so a re-admitted "
                    "pod cannot find them; mount the checkpoint claim at the checkpoint root."))
                continue
        for k, mount in mounts:
            j, volume = volumes.get(get(mount, "name"), (-1, MISSING))
            claim = get(volume, "persistentVolumeClaim", "claimName") if volume is not MISSING else MISSING
            if claim is not MISSING:
                judged.append((str(claim), mount, f"{pod_path}.containers[{i}].volumeMounts[{k}]", volume, j))
    if not judged:
        if found:
            return found
        return [violation(
            runtime, CHECKPOINT_SAFE_RUNTIME.name, f"{pod_path}.volumes", MISSING,
            "the trainer container must mount a ReadWriteMany PersistentVolumeClaim for its checkpoints",
            "mount the checkpoint claim (inferenceTraining.training.checkpoint)",
            message=f"{what} mounts no PersistentVolumeClaim into its trainer container ({pod_path}); mount a "
            f"ReadWriteMany claim for checkpoints, so that a re-admitted pod on another node resumes from them.")]
    writable = []
    for claim, mount, mount_field, volume, j in judged:
        if get(mount, "readOnly") is True:
            found.append(violation(
                runtime, CHECKPOINT_SAFE_RUNTIME.name, f"{mount_field}.readOnly", True,
                "the checkpoint claim is mounted read-only, so the trainer cannot save on SIGTERM",
                "drop readOnly from the checkpoint mount",
                message=f"{what} mounts PersistentVolumeClaim '{claim}' read-only ({mount_field}.readOnly: true), "
                "so the trainer cannot write its checkpoint when it is preempted; drop readOnly from the checkpoint "
                "mount."))
        elif get(volume, "persistentVolumeClaim", "readOnly") is True:
            found.append(violation(
                runtime, CHECKPOINT_SAFE_RUNTIME.name, f"{pod_path}.volumes[{j}].persistentVolumeClaim.readOnly", True,
                "the checkpoint volume is read-only, so the trainer cannot save on SIGTERM",
                "drop readOnly from the checkpoint volume",
                message=f"{what} mounts PersistentVolumeClaim '{claim}' through a read-only volume "
                f"({pod_path}.volumes[{j}].persistentVolumeClaim.readOnly: true), so the trainer cannot write its "
                "checkpoint when it is preempted; drop readOnly from the checkpoint volume."))
        else:
            writable.append(claim)
    namespace = runtime.namespace if runtime.kind == "TrainingRuntime" else None
    for claim in dict.fromkeys(writable):
        matches = [rwx for ns, rwx in claims.get(claim, []) if namespace is None or ns in (namespace, None)]
        if not matches:
            found.append(violation(
                runtime, CHECKPOINT_SAFE_RUNTIME.name, f"{pod_path}.volumes", claim,
                "the checkpoint claim must be in this stack, so that its access mode can be checked",
                "define the claim in this stack with accessModes [ReadWriteMany]",
                message=f"{what} mounts PersistentVolumeClaim '{claim}', which is not in this stack, so its access "
                f"mode cannot be checked and the policy fails closed; define the claim in this stack with "
                f"accessModes [ReadWriteMany]."))
        elif not any(matches):
            found.append(violation(
                runtime, CHECKPOINT_SAFE_RUNTIME.name, f"{pod_path}.volumes", claim,
                "checkpoints must be on a ReadWriteMany claim", "use a ReadWriteMany claim",
                message=f"{what} mounts PersistentVolumeClaim '{claim}', which is not ReadWriteMany; checkpoints "
                f"must be on a ReadWriteMany claim so that a re-admitted pod on another node can read them."))
    return found


def _exit_code(raw: Any) -> Optional[int]:
    """An exit code as an int: JSON/protobuf numbers reach the pack as floats (75.0), annotations as strings."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, float):
        return int(raw) if raw.is_integer() else None
    try:
        return int(str(raw).strip())
    except ValueError:
        return None


def _ignore_rule_for(policy: Any, code: int, container: str) -> Optional[str]:
    """The action of the first podFailurePolicy rule that a pod of the trainer failing with `code` matches
    (batch/v1 PodFailurePolicy: rules are evaluated in order, the first match wins; job_controller
    matchPodFailurePolicy), or None when no rule matches."""
    for rule in as_list(get(policy, "rules")):
        codes = get(rule, "onExitCodes")
        if codes is MISSING:
            continue
        if get(codes, "containerName") not in (MISSING, None, container):
            continue
        values = [_exit_code(v) for v in as_list(get(codes, "values"))]
        operator = get(codes, "operator")
        if (operator == "In" and code in values) or (operator == "NotIn" and code not in values):
            return str(get(rule, "action"))
    return None


def _check_reclaim(runtime: KubeObject, job_path: str, job: Any, pod: Any) -> list[Violation]:
    what = f"The {runtime.describe()}"
    raw = get(runtime.annotations, PREEMPTED_EXIT_CODE_ANNOTATION)
    if raw is MISSING:
        raw = get(as_map(get(job, "template", "spec", "template", "metadata", "annotations")),
                  PREEMPTED_EXIT_CODE_ANNOTATION)
    code = _exit_code(raw) if raw is not MISSING else None
    key = f'metadata.annotations["{PREEMPTED_EXIT_CODE_ANNOTATION}"]'
    if code is None or code == 0 or not 0 < code < 128:
        if raw is MISSING:
            problem = "does not declare the exit code its trainer uses after a preemption save"
        elif code == 0:
            problem = ("declares that its trainer exits 0 after a preemption save: the kubelet makes a deleted pod "
                       "whose containers all exited 0 Succeeded and the Job counts it as a completion, so a drained or "
                       "evicted TrainJob ends Complete half-trained")
        else:
            problem = f"declares {raw!r} as its trainer's exit code after a preemption save, not a code from 1 to 127"
        return [violation(
            runtime, CHECKPOINT_SAFE_RUNTIME.name, key, raw,
            f"the runtime {problem}; without it a stopped trainer cannot be told from a failed one",
            f"set {PREEMPTED_EXIT_CODE_ANNOTATION} to the trainer's exit code after a preemption save (1-127, not "
            "0; the kueue-cohorts trainer exits 75) and Ignore it in the trainer Job's podFailurePolicy",
            message=f"{what} {problem}; without it each eviction or drain of a trainer pod counts as a failed pod "
            "toward the trainer Job's backoffLimit and then toward the JobSet's maxRestarts (jobset#1117). Set "
            f"{PREEMPTED_EXIT_CODE_ANNOTATION} to the trainer's exit code after a preemption save (1-127, not 0; the "
            "kueue-cohorts trainer exits 75) and Ignore it in the trainer Job's podFailurePolicy.")]
    job_spec = get(job, "template", "spec")
    found: list[Violation] = []
    policy = get(job_spec, "podFailurePolicy")
    containers = [str(get(c, "name")) for _, c in _trainer_containers(pod)]
    action = _ignore_rule_for(policy, code, containers[0] if containers else "node")
    if action != "Ignore":
        shown = "no podFailurePolicy" if policy is MISSING else (
            "no podFailurePolicy rule for it" if action is None else f"a first matching rule with action {action}")
        fix = ("add to spec.template.spec.podFailurePolicy.rules, before any other rule matching it, {action: Ignore, "
               f"onExitCodes: {{containerName: node, operator: In, values: [{code}]}}}} (with restartPolicy Never)")
        found.append(violation(
            runtime, CHECKPOINT_SAFE_RUNTIME.name, f"{job_path}.template.spec.podFailurePolicy", policy,
            f"a stopped trainer exits {code} after its save, and with {shown} an evicted or drained pod counts as a "
            "failure toward backoffLimit and the JobSet's maxRestarts, so a TrainJob stopped often enough fails "
            "instead of resuming",
            fix,
            message=f"{what} trainer job ({job_path}) has {shown} for the preempted exit code {code}: each "
            "eviction or drain of a trainer pod counts as a failed pod toward backoffLimit and then the JobSet's "
            "maxRestarts (the Job controller counts a pod it still tracks as failed unless a podFailurePolicy "
            f"ignores it), so a TrainJob stopped often enough fails instead of resuming; {fix}."))
    restart = get(pod, "restartPolicy")
    if restart != "Never":
        found.append(violation(
            runtime, CHECKPOINT_SAFE_RUNTIME.name, f"{job_path}.template.spec.template.spec.restartPolicy", restart,
            "a podFailurePolicy needs restartPolicy Never (batch/v1 validation; JobSet defaults an unset one to "
            "OnFailure), and only then does a pod's exit code decide whether it counts as a failure",
            "set restartPolicy: Never on the trainer pod template",
            message=f"{what} trainer pod template has restartPolicy {restart if restart is not MISSING else 'unset'}"
            " (JobSet defaults it to OnFailure); a podFailurePolicy needs restartPolicy Never, and only then does "
            "the preempted exit code keep an evicted pod from counting as a failure; set restartPolicy: Never on the "
            "trainer pod template."))
    return found


def _check_runtime(
    runtime: KubeObject, claims: Mapping[str, list[tuple[Optional[str], bool]]], min_grace: int
) -> list[Violation]:
    found = []
    what = f"The {runtime.describe()}"
    jobs = trainer_jobs(runtime)
    if not jobs:
        return [violation(runtime, CHECKPOINT_SAFE_RUNTIME.name, "spec.template.spec.replicatedJobs", MISSING,
                          "a training runtime needs its trainer replicated job to be judged",
                          "add the trainer replicated job 'node'",
                          message=f"{what} has no spec.template.spec.replicatedJobs, so its trainer cannot be checked; "
                          f"add the trainer replicated job 'node'.")]
    for job_path, job in jobs:
        pod_path = f"{job_path}.template.spec.template.spec"
        pod = as_map(get(job, "template", "spec", "template", "spec"))
        found += _check_grace(runtime, job, pod, pod_path, min_grace)
        found += _check_mounts(runtime, pod, pod_path, claims)
        for i, container in _trainer_containers(pod):
            problem = signal_problem(as_list(get(container, "command")), as_list(get(container, "args")))
            if problem:
                found.append(violation(
                    runtime, CHECKPOINT_SAFE_RUNTIME.name,
                    f"{pod_path}.containers[{i}].command", get(container, "command"), problem,
                    "start the trainer in exec form (command: [python, train.py]) or end the script with "
                    "'exec <trainer>'",
                    message=f"{what} trainer container '{get(container, 'name')}' ({pod_path}.containers[{i}]) "
                    f"{problem}; start the trainer in exec form (command: [python, train.py]) or end the script with "
                    f"'exec <trainer>'."))
        found += _check_reclaim(runtime, job_path, job, pod)
    return found


MERGE_KEYS = {"volumes": "name", "containers": "name", "initContainers": "name", "env": "name",
              "volumeMounts": "mountPath"}
"""The patch merge keys of the lists a runtime patch reaches (k8s.io/api core/v1 and batch/v1 `patchMergeKey`)."""


def _merge(base: Any, patch: Any) -> Any:
    """Strategic merge of `patch` into `base` as the Trainer applies a TrainJob's runtimePatches (Trainer v2.2.1
    `pkg/runtime/core/trainingruntime.go` mergeRuntimePatches: strategicpatch.StrategicMergePatch over
    batchv1.JobTemplateSpec): maps merge, lists in MERGE_KEYS merge item by item on their key, anything else is
    replaced. Returns plain dicts and lists; raises UnknownValueError for an unknown value it reads."""
    if is_map(patch) and is_map(base):
        out = dict(as_map(base).items())
        for key, value in as_map(patch).items():
            if key in MERGE_KEYS and is_list(value):
                merged = list(as_list(out.get(key)))
                for item in as_list(value):
                    name = get(item, MERGE_KEYS[key])
                    at = next((i for i, old in enumerate(merged) if get(old, MERGE_KEYS[key]) == name), None)
                    if at is None:
                        merged.append(_merge({}, item))
                    else:
                        merged[at] = _merge(merged[at], item)
                out[key] = merged
            else:
                out[key] = _merge(out.get(key), value)
        return out
    if is_map(patch):
        return _merge({}, patch)
    if is_list(patch):
        return [_merge(None, item) for item in as_list(patch)]
    return patch


def patched_runtime(runtime: KubeObject, trainjob: KubeObject) -> Optional[KubeObject]:
    """The runtime as a TrainJob's `spec.runtimePatches` make it for that TrainJob, or None without patches."""
    patches = as_list(get(trainjob.spec, "runtimePatches"))
    if not patches:
        return None
    jobs = [dict(as_map(job).items()) for job in as_list(get(runtime.spec, "template", "spec", "replicatedJobs"))]
    for patch in patches:
        for job_patch in as_list(get(patch, "trainingRuntimeSpec", "template", "spec", "replicatedJobs")):
            template = get(job_patch, "template")
            for job in jobs:
                if template is not MISSING and job.get("name") == get(job_patch, "name"):
                    job["template"] = _merge(job.get("template"), template)
    spec = dict(as_map(runtime.spec).items())
    spec["template"] = {**as_map(spec.get("template")), "spec": {**as_map(get(spec, "template", "spec")),
                                                                 "replicatedJobs": jobs}}
    props = {**as_map(runtime.props), "spec": spec}
    return KubeObject(runtime.urn, runtime.resource_name, runtime.group, runtime.version, runtime.kind, props)


def _check_patches(obj: KubeObject, runtime: KubeObject, claims: Mapping[str, list[tuple[Optional[str], bool]]],
                   min_grace: int) -> list[Violation]:
    """What a TrainJob's runtimePatches break: the findings on the patched runtime that the runtime itself has not,
    reported on the TrainJob."""
    patched = patched_runtime(runtime, obj)
    if patched is None:
        return []
    before = {(v.field, v.rule) for v in _check_runtime(runtime, claims, min_grace)}
    out = []
    for found in _check_runtime(patched, claims, min_grace):
        if (found.field, found.rule) in before:
            continue
        message = found.message.replace(f"The {runtime.describe()}", f"The {obj.describe()} patches its runtime "
                                        f"({runtime.describe()}) so that it", 1)
        out.append(violation(obj, CHECKPOINT_SAFE_RUNTIME.name, "spec.runtimePatches", get(obj.spec, "runtimePatches"),
                             f"with the patches applied (a strategic merge), {found.rule}", found.fix,
                             message=message))
    return out


def _check_trainjob(obj: KubeObject, objects: Sequence[KubeObject], exempt: set[str],
                    claims: Mapping[str, list[tuple[Optional[str], bool]]], min_grace: int) -> list[Violation]:
    what = f"The {obj.describe()}"
    trainer = as_map(get(obj.spec, "trainer"))
    runtime, shown = runtime_of(obj, objects)
    found: list[Violation] = []
    if runtime is None:
        found.append(violation(
            obj, CHECKPOINT_SAFE_RUNTIME.name, "spec.runtimeRef", get(obj.spec, "runtimeRef"),
            f"it names {shown}, which is not a runtime of this stack, so how its trainer is stopped and saves "
            "cannot be judged",
            "reference a TrainingRuntime of this stack (kind: TrainingRuntime, in the TrainJob's namespace)",
            message=f"{what} names {shown} in spec.runtimeRef, which is not a runtime of this stack, so whether a "
            "preempted trainer can save cannot be judged and the policy fails closed; reference a TrainingRuntime of "
            "this stack (kind: TrainingRuntime, in the TrainJob's namespace)."))
        runtime_container: Any = {}
    else:
        if runtime.name in exempt:
            return []
        pods = [as_map(get(job, "template", "spec", "template", "spec")) for _, job in trainer_jobs(runtime)]
        containers = [c for pod in pods for _, c in _trainer_containers(pod)]
        runtime_container = containers[0] if containers else {}
        found += _check_patches(obj, runtime, claims, min_grace)
    command = get(trainer, "command")
    args = get(trainer, "args")
    if command is not MISSING or args is not MISSING:
        effective_command = as_list(command) if command is not MISSING else as_list(
            get(runtime_container, "command"))
        effective_args = as_list(args) if args is not MISSING else as_list(get(runtime_container, "args"))
        problem = signal_problem(effective_command, effective_args)
        if problem:
            field = "spec.trainer.command" if command is not MISSING else "spec.trainer.args"
            found.append(violation(
                obj, CHECKPOINT_SAFE_RUNTIME.name, field, get(trainer, field.rsplit(".", 1)[1]), problem,
                "start the trainer in exec form or end the script with 'exec <trainer>'",
                message=f"The {obj.describe()} spec.trainer {problem}; start the trainer in exec form or end the "
                f"script with 'exec <trainer>'."))
    env = [(f"spec.trainer.env[{k}]", entry) for k, entry in enumerate(as_list(get(trainer, "env")))]
    for i, patch in enumerate(as_list(get(obj.spec, "runtimePatches"))):
        jobs = as_list(get(patch, "trainingRuntimeSpec", "template", "spec", "replicatedJobs"))
        for j, job in enumerate(jobs):
            for c, container in enumerate(as_list(get(job, "template", "spec", "template", "spec", "containers"))):
                if get(container, "name") == "node":
                    env += [(f"spec.runtimePatches[{i}].trainingRuntimeSpec.template.spec.replicatedJobs[{j}].template"
                             f".spec.template.spec.containers[{c}].env[{k}]", entry)
                            for k, entry in enumerate(as_list(get(container, "env")))]
    for where, entry in env:
        name = get(entry, "name")
        if isinstance(name, str) and (name in RESERVED_ENV or name.startswith("PET_")) and (
                runtime is None or _env_value(runtime_container, name) is not MISSING or name.startswith("PET_")):
            found.append(violation(
                obj, CHECKPOINT_SAFE_RUNTIME.name, where, name,
                f"{name} is set by the runtime for the trainer's save and resume (checkpoint root, run directory, "
                "save interval, code) or by the Trainer itself (PET_*), and a TrainJob's env replaces it",
                f"remove {name} from {where.rsplit('[', 1)[0]}",
                message=f"{what} sets {name} in {where}, which replaces the runtime's own value that its trainer's "
                "save and resume depend on (checkpoint root, run directory, save interval, code; PET_* are the "
                f"Trainer's); remove {name} from {where.rsplit('[', 1)[0]}."))
    return found


def check_checkpoint_safe_runtime(objects: Iterable[KubeObject], min_grace_seconds: int = 60,
                                  exempt_runtimes: Iterable[str] = ()) -> list[Violation]:
    """CHECKPOINT_SAFE_RUNTIME over the whole stack.

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
                return _check_trainjob(obj, objects, exempt, claims, min_grace_seconds)
            found.extend(guarded(obj, check_trainjob))
    return found


MIN_TERMINATION_GRACE_PERIOD_SECONDS = integer(
    "minTerminationGracePeriodSeconds", 60,
    "Lowest terminationGracePeriodSeconds accepted for the trainer pod, in seconds.")
EXEMPT_RUNTIMES = names(
    "exemptRuntimes", "TrainingRuntime/ClusterTrainingRuntime names not meant for borrowing training.")

CHECKPOINT_SAFE_RUNTIME: Declaration = Declaration(
    name="checkpoint-safe-runtime",
    description="Training runtimes checkpoint to a ReadWriteMany claim, get enough grace time and start the trainer "
                "in exec form.",
    promise=Promise.TRAINING_SURVIVES, level=Level.MANDATORY, scope=Scope.STACK,
    check=lambda objects, options: check_checkpoint_safe_runtime(
        objects, MIN_TERMINATION_GRACE_PERIOD_SECONDS.read(options), EXEMPT_RUNTIMES.read(options)),
    options=(MIN_TERMINATION_GRACE_PERIOD_SECONDS, EXEMPT_RUNTIMES))
