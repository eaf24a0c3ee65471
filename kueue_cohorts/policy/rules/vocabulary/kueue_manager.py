"""The Kueue manager Deployment: which Deployment runs Kueue's manager, and the `--feature-gates` its command line
sets, read as the manager reads it (Kueue v0.19.2 `cmd/kueue/main.go`: Go's standard `flag` package, `flag.StringVar
(&featureGates, "feature-gates", ...)`, then `config.LoadAndValidateFeatureGates`, which hands the string to
component-base `featuregate.Set`).

One reader for every rule that asks (KUEUE_MANAGER_CONFIG judges the value, INFERENCE_RECLAIM_UNBLOCKED reads
FairSharingPreemptWithinNominal from it).
"""
from __future__ import annotations

import posixpath
import shlex
from typing import Any, Iterator, Optional

from .kueue_counts import parse_feature_gates_flag
from .objects import KubeObject
from .signals import SHELLS
from .values import MISSING, UnknownValueError, as_list, get

FLAG_NAMES = ("-feature-gates", "--feature-gates")
"""Go's flag package takes a flag with one dash or two (`flag.go` parseOne)."""


def is_kueue_manager(obj: KubeObject) -> bool:
    """True for an apps/v1 Deployment that runs Kueue's manager: its name (or Pulumi resource name) or a container
    image mentions kueue (the chart's `<release>-controller-manager`, image registry.k8s.io/kueue/kueue). A name or
    image unknown at preview is no evidence either way (it is skipped, so an unrelated Deployment never fails
    closed here)."""
    if not obj.is_kind("apps", "Deployment"):
        return False
    try:
        name = obj.name
    except UnknownValueError:
        name = obj.resource_name
    if "kueue" in name:
        return True
    try:
        containers = list(as_list(get(obj.spec, "template", "spec", "containers")))
    except UnknownValueError:
        return False
    for container in containers:
        try:
            if "kueue" in str(get(container, "image") or ""):
                return True
        except UnknownValueError:
            continue
    return False


def feature_gate_flags(obj: KubeObject) -> Iterator[tuple[str, Optional[str]]]:
    """Yield (field path, flag value) of the `--feature-gates` (or `-feature-gates`) that each container of a Kueue
    manager Deployment runs with, read as Go's flag package reads the manager's argv: the container's `command` after
    its first word (the program; with no `command`, the image's entrypoint is the program) followed by its `args`
    (Kubernetes runs them as one argv), `-feature-gates=X` or `-feature-gates X` (the next word, wherever it is, even
    one that starts with `-`); a `sh -c` script is split as the shell splits it (``_argv``). When the flag is
    given more than once the manager keeps the last (flag.StringVar's Set replaces the string; featuregate.Set reads
    only the result), so only the last is yielded. The value is None for a flag that ends the argv (flag.go: "flag
    needs an argument"; the manager does not start). Raises UnknownValueError when an argument is unknown at
    preview."""
    if not is_kueue_manager(obj):
        return
    for index, container in enumerate(as_list(get(obj.spec, "template", "spec", "containers"))):
        words = _argv(container, f"spec.template.spec.containers[{index}]")
        kept: Optional[tuple[str, Optional[str]]] = None
        for at, (path, word) in enumerate(words):
            name, eq, value = word.partition("=")
            if name in FLAG_NAMES:
                kept = (path, value if eq else words[at + 1][1] if at + 1 < len(words) else None)
        if kept is not None:
            yield kept


def _argv(container: Any, path: str) -> list[tuple[str, str]]:
    """(field path, word) of the program's argv after its name, as the kubelet starts the container: `command`
    then `args`, each element one word, no shell in between (core/v1 Container.command: "not executed within a
    shell"). When `command` runs a shell's script (`sh -c SCRIPT`, `bash -c`, ...), the script's words as the shell
    splits them (`shlex`), after a leading `exec` and the program; a script the shell cannot split is one word."""
    command = [str(word) for word in as_list(get(container, "command"))]
    args = [str(word) for word in as_list(get(container, "args"))]
    if len(command) >= 2 and posixpath.basename(command[0]) in SHELLS and command[1].startswith("-") \
            and "c" in command[1]:
        script, where = (command[2], f"{path}.command[2]") if len(command) > 2 else \
            (args[0] if args else "", f"{path}.args[0]")
        try:
            words = shlex.split(script)
        except ValueError:
            words = [script]
        words = words[1:] if words[:1] == ["exec"] else words
        return [(where, word) for word in words[1:]]
    return [(f"{path}.command[{i}]", word) for i, word in enumerate(command) if i > 0] + \
        [(f"{path}.args[{i}]", word) for i, word in enumerate(args)]


def manager_gate(obj: KubeObject, gate: str) -> Optional[bool]:
    """The value the manager's command line gives feature gate ``gate`` (``feature_gate_flags``; the last container
    that sets it wins). None when no flag sets it, and when the flag has no value or a malformed pair
    (featuregate.Set fails and the manager does not start, so it sets nothing). Raises UnknownValueError when an
    argument is unknown at preview."""
    found: Optional[bool] = None
    for _, value in feature_gate_flags(obj):
        gates, malformed = parse_feature_gates_flag(value or "")
        if value is not None and not malformed and gate in gates:
            found = gates[gate]
    return found


def chart_feature_gates(obj: KubeObject) -> Optional[Any]:
    """The kueue chart's `controllerManager.featureGates` values (a list of {name, enabled}), or None when the object
    is no Helm Chart/Release or sets none. Raises UnknownValueError for a chart whose reference mentions kueue."""
    if not (obj.group == "helm.sh" and obj.kind in ("Chart", "Release")):
        return None
    try:
        gates = get(obj.props, "values", "controllerManager", "featureGates")
    except UnknownValueError:
        if "kueue" in str(get(obj.props, "chart") or "") or "kueue" in obj.name:
            raise
        return None
    return None if gates is MISSING else gates


def chart_gate(obj: KubeObject, gate: str) -> Optional[bool]:
    """The value a Helm Chart/Release of Kueue's chart gives feature gate ``gate`` through
    `values.controllerManager.featureGates` ([{name, enabled}], which the chart renders as one `--feature-gates` with
    printf "%s=%t" .name .enabled, charts/kueue/templates/_helpers.tpl): the last entry of that name (a later pair
    wins in featuregate.Set). None when no entry names it, and when any entry's `enabled` is no boolean (it renders
    as "%!t(...)", Set fails and the manager does not start). Raises UnknownValueError as ``chart_feature_gates``."""
    entries = chart_feature_gates(obj)
    if entries is None:
        return None
    found: Optional[bool] = None
    for entry in as_list(entries):
        enabled = get(entry, "enabled")
        if not isinstance(enabled, bool):
            return None
        if get(entry, "name") == gate:
            found = enabled
    return found
