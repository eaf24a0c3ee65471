"""What the deploy driver needs to know about a stack before any engine call, read from its stack file with PyYAML.

Only a few keys matter here: ``kueue-cohorts:cluster`` (mode, kubeconfig, context), ``kueue-cohorts:protected``
and the engine's own top-level keys (``secretsprovider``, ``encryptionsalt``). The rest of the config is validated
by the program (components.settings); this reader never rejects a stack for it.

Pulumi writes a secret config value as a mapping ``{secure: "v1:..."}`` (``pulumi config set --secret``, also
nested with ``--path``). Such a value cannot be read without the engine, so it is reported as a secret (kept in
``secret_keys``) and never crashes the reader: a secret ``cluster.mode`` or ``protected`` makes the stack protected
(the safe reading), a secret ``cluster.kubeconfig`` / ``cluster.context`` is left to the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from components import stackfile as reader
from components.secrets import is_secret  # Pulumi's `{secure: ...}` form, one definition
from components.settings import PROJECT

CLUSTER_KEY = f"{PROJECT}:cluster"
#: The stack-file key that marks a stack protected (a bool; ``"true"``/``"false"`` strings as ``pulumi config set``
#: writes them are accepted); the setting `protected` of components/settings.py, read here before any engine call.
PROTECTED_KEY = f"{PROJECT}:protected"
KUBECONFIG_MODE = "kubeconfig"


class StackFileError(ValueError):
    """The stack file cannot be read (missing, not YAML, or a key the driver needs has the wrong type)."""


@dataclass(frozen=True)
class StackTarget:
    """Where a stack points and how it must be guarded, as its stack file says.

    name: the stack name. path: its stack file. mode: ``kueue-cohorts:cluster.mode`` (``sandbox`` when absent;
    None when secret). kubeconfig / context: ``cluster.kubeconfig`` / ``cluster.context`` (None when absent or
    secret). protected_by: why the stack is protected (empty: it is not). secret_keys: config keys whose value is
    a ``secure:`` secret that this reader needed and could not read. secrets_provider: the stack file's
    ``secretsprovider`` (None when absent). has_salt: the file holds a passphrase ``encryptionsalt``.
    """

    name: str
    path: Path
    mode: Optional[str]
    kubeconfig: Optional[str] = None
    context: Optional[str] = None
    protected_by: tuple[str, ...] = ()
    secret_keys: tuple[str, ...] = ()
    secrets_provider: Optional[str] = None
    has_salt: bool = False
    problems: tuple[str, ...] = field(default=())

    @property
    def protected(self) -> bool:
        """True if the stack targets a real cluster or is marked protected (see ``protected_by``)."""
        return bool(self.protected_by)


def _protected_flag(value: Any) -> tuple[Optional[bool], Optional[str]]:
    """Read ``kueue-cohorts:protected``: (flag, problem). A secret counts as True (we cannot read it)."""
    if value is None:
        return False, None
    if isinstance(value, bool):
        return value, None
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true", None
    if is_secret(value):
        return True, None
    return True, (f"{PROTECTED_KEY} = {value!r}: must be true or false. Fix: write `{PROTECTED_KEY}: true` "
                  "(or remove the key); the stack is treated as protected meanwhile")


def read(name: str, path: Path) -> StackTarget:
    """Read the target of stack ``name`` from its stack file ``path`` (stacks/Pulumi.<name>.yaml).

    Returns a StackTarget. Raises StackFileError if the file is missing or not a YAML mapping, or if
    ``kueue-cohorts:cluster`` is neither a mapping nor a secret. Secret values never raise (see the module doc).
    """
    try:
        doc = reader.read(Path(path))  # the one stack-file reader: `file:line:col: message`, duplicates refused
    except reader.StackFileError as err:
        raise StackFileError(str(err)) from None
    config = doc.get("config") or {}

    secret_keys: list[str] = []
    protected_by: list[str] = []
    problems: list[str] = []
    cluster = config.get(CLUSTER_KEY) or {}
    mode: Optional[str]
    kubeconfig = context = None
    if is_secret(cluster):
        secret_keys.append(CLUSTER_KEY)
        mode = None
    elif not isinstance(cluster, dict):
        raise StackFileError(f"{CLUSTER_KEY} in {path} must be a mapping (mode, kubeconfig, context), got "
                             f"{type(cluster).__name__}")
    else:
        raw_mode = cluster.get("mode", "sandbox")
        if is_secret(raw_mode):
            secret_keys.append(f"{CLUSTER_KEY}.mode")
            mode = None
        else:
            mode = str(raw_mode)
        for key in ("kubeconfig", "context"):
            value = cluster.get(key)
            if is_secret(value):
                secret_keys.append(f"{CLUSTER_KEY}.{key}")
            elif value is not None:
                if key == "kubeconfig":
                    kubeconfig = str(value)
                else:
                    context = str(value)
    if mode is None:
        protected_by.append(f"its cluster mode ({CLUSTER_KEY}) is a secret value, read as a real cluster")
    elif mode == KUBECONFIG_MODE:
        protected_by.append(f"it targets a real cluster: {CLUSTER_KEY}.mode is kubeconfig")

    raw_flag = config.get(PROTECTED_KEY)
    flag, problem = _protected_flag(raw_flag)
    if is_secret(raw_flag):
        secret_keys.append(PROTECTED_KEY)
        protected_by.append(f"{PROTECTED_KEY} is a secret value, read as true")
    elif problem:
        protected_by.append(f"{PROTECTED_KEY} is {raw_flag!r}, not a boolean, read as true")
    elif flag:
        protected_by.append(f"it is marked protected: {PROTECTED_KEY} is {raw_flag}")
    if problem:
        problems.append(problem)

    provider = doc.get("secretsprovider")
    return StackTarget(
        name=name, path=Path(path), mode=mode, kubeconfig=kubeconfig, context=context,
        protected_by=tuple(protected_by), secret_keys=tuple(secret_keys),
        secrets_provider=str(provider) if provider else None, has_salt=bool(doc.get("encryptionsalt")),
        problems=tuple(problems),
    )
