"""Secret config values (`pulumi config set --secret`): found, refused, and kept out of every message.

No `kueue-cohorts:*` setting takes a secret. Every setting ends up in plain text in the objects the stack makes
(the TrainingRuntime's env, names, labels, paths), hence in the Pulumi state and the rendered manifests, and on the
cluster in objects that are not Secrets (a TrainingRuntime, and the pod specs derived from it, are readable by
whoever may read those kinds). Keeping a value secret end to end is therefore impossible past Pulumi, so a secret
value is refused wherever it is, with a fix that says where a credential belongs instead: a Kubernetes Secret
referenced by `trainingRuntime.env.<NAME>: {secretKeyRef: {name, key}}` (or `imagePullSecrets`), or the kubeconfig
file.

How a secret shows up (checked with the pinned pulumi 3.259.0):
- in the stack file, as a mapping `{secure: "v1:..."}` at exactly the path that was set (`--path
  'trainingRuntime.env.HF_TOKEN'` nests it under `kueue-cohorts:trainingRuntime: {env: {HF_TOKEN: {secure: ...}}}`);
  offline readers (components.checks.validation.load_stack_file, the sandbox, the PR summary) see only that mapping;
- in the program, decrypted: `pulumi.Config.get_object("trainingRuntime")` returns the whole object with the
  plaintext inside, and `pulumi.runtime.is_config_secret("kueue-cohorts:trainingRuntime")` is True: the engine
  marks the whole top-level key secret (RunRequest.configSecretKeys), never the nested path. The program locates
  the nested path from its stack file (`locate`), and refuses the whole key when the file does not show it.

Every message shows a secret value as `[secret]` (Pulumi's own rendering), never its text: the settings check runs
on a copy with the secret values masked (`masked`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

from kueue_cohorts.components.settings import PROJECT, config_key, stackfile
from kueue_cohorts.components.settings.errors import Problem
from kueue_cohorts.components.settings.quoting import shell_word

KeyPath = tuple[Any, ...]
SECURE = "secure"
SHOWN = "[secret]"
"""What a message shows for a secret value (as `pulumi config` shows it)."""

RULE = ("a secret config value (`pulumi config set --secret`) cannot be used here: the program writes every "
        "kueue-cohorts setting in plain text into the stack's objects, hence into the Pulumi state, the rendered "
        "manifests and the cluster")


_SCALARS = frozenset({str, int, float, bool, type(None)})


def is_secret(value: Any) -> bool:
    """True if `value` is Pulumi's encrypted form of a config value in a stack file: a mapping `{secure: <str>}`."""
    if type(value) is dict:  # plain YAML, the common case (typing.Mapping's isinstance is slow)
        return len(value) == 1 and SECURE in value
    return isinstance(value, Mapping) and set(value) == {SECURE}


def secure_paths(raw: Mapping[str, Any], budget: int = 200_000, max_depth: int = 64) -> list[KeyPath]:
    """The key paths (top-level key first, then mapping keys and list indices) of every `{secure: ...}` value in a
    stack file's `kueue-cohorts:*` config `raw` (prefix stripped), in document order.

    Bounded whatever the input: the walk visits at most `budget` values and `max_depth` levels (a YAML alias bomb or
    pathological nesting is components.checks.validation.size_problems' to report) and returns what it found by then."""
    found: list[KeyPath] = []
    todo: list[tuple[Any, KeyPath]] = [(value, (top,)) for top, value in reversed(list(raw.items()))]
    while todo and budget > 0:
        node, path = todo.pop()
        budget -= 1
        if type(node) in _SCALARS:
            continue  # neither a secret nor holding one
        if is_secret(node):
            found.append(path)
        elif len(path) < max_depth and isinstance(node, Mapping):
            todo += [(child, path + (key,)) for key, child in reversed(list(node.items()))]
        elif len(path) < max_depth and isinstance(node, list):
            todo += [(child, path + (index,)) for index, child in reversed(list(enumerate(node)))]
    return found


def locate(secret_keys: Iterable[str], stack_file: Optional[Path]) -> list[KeyPath]:
    """Where the secret values of the top-level keys `secret_keys` (which the engine marks secret) are: the
    `{secure: ...}` paths under those keys in `stack_file` (stacks/Pulumi.<stack>.yaml), else the key itself (the
    file is absent or unreadable, or the secret came from elsewhere, e.g. an ESC environment)."""
    keys = list(secret_keys)
    in_file: list[KeyPath] = []
    if keys and stack_file is not None:
        try:
            config = stackfile.project_config(stackfile.read(Path(stack_file)), PROJECT)
            in_file = secure_paths({k: v for k, v in config.items() if k in keys})
        except (stackfile.StackFileError, RecursionError):
            in_file = []
    out: list[KeyPath] = []
    for key in keys:
        out += [path for path in in_file if path[0] == key] or [(key,)]
    return out


def _path_text(path: KeyPath) -> str:
    return config_key(str(path[0]), *path[1:])


def problem(path: KeyPath) -> Problem:
    """The refusal of a secret value at `path`, with the fix for that place (value shown as `[secret]`)."""
    where = _path_text(path)
    if path[:2] == ("trainingRuntime", "env") and len(path) == 3:
        name = path[2]
        fix = (f"store the value in a Kubernetes Secret in every training namespace (`kubectl -n <namespace> create "
               f"secret generic <secret> --from-literal=<key>=...`), reference it with `trainingRuntime.env.{name}: "
               "{secretKeyRef: {name: <secret>, key: <key>}}` (rendered as valueFrom.secretKeyRef: the value never "
               f"enters the config, the state or the objects) and remove the secret: `pulumi config rm --path "
               f"{shell_word(where)}`")
    elif path[0] == "trainingRuntime" and len(path) <= 2:
        fix = ("keep credentials out of the stack config: store each one in a Kubernetes Secret in every training "
               "namespace and reference it with `trainingRuntime.env.<NAME>: {secretKeyRef: {name: <secret>, key: "
               "<key>}}`; set the other values without --secret")
    else:
        fix = (f"this setting is not a credential: set it in plain text (`pulumi config set --path {shell_word(where)} "
               "<value>`, without --secret); credentials belong in Kubernetes Secrets (trainingRuntime.env with "
               "secretKeyRef, trainingRuntime.imagePullSecrets) or in the kubeconfig file")
    return Problem(config_key(f"{PROJECT}:{path[0]}", *path[1:]), SHOWN, RULE, fix)


def masked(raw: Mapping[str, Any], paths: Sequence[KeyPath]) -> dict[str, Any]:
    """A copy of `raw` with the value at each of `paths` replaced by SHOWN (only the containers on those paths are
    copied). A path that does not lead anywhere in `raw` is skipped."""
    out: dict[str, Any] = dict(raw)
    for path in paths:
        node: Any = out
        for part in path[:-1]:
            child = _child(node, part)
            if isinstance(child, Mapping):
                node[part] = node = dict(child)
            elif isinstance(child, list):
                node[part] = node = list(child)
            else:
                break
        else:
            if _child(node, path[-1]) is not _ABSENT:
                node[path[-1]] = SHOWN
    return out


_ABSENT = object()


def _child(node: Any, part: Any) -> Any:
    if isinstance(node, Mapping):
        return node.get(part, _ABSENT)
    if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
        return node[part]
    return _ABSENT


def covers(paths: Sequence[KeyPath], key: str) -> bool:
    """True if the problem key `key` (a `kueue-cohorts:...` key path) is at or under one of the secret `paths`:
    such a problem is about a value the secret problem already refuses (and could only show the mask)."""
    for path in paths:
        base = config_key(f"{PROJECT}:{path[0]}", *path[1:])
        if key == base or key.startswith(base + ".") or key.startswith(base + "["):
            return True
    return False
