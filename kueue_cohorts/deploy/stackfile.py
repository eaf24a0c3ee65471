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

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from kueue_cohorts.components.settings import PROJECT
from kueue_cohorts.components.settings import stackfile as reader
from kueue_cohorts.components.settings.secrets import is_secret  # Pulumi's `{secure: ...}` form, one definition
from kueue_cohorts.components.settings.stackfile import StackFileError

CLUSTER_KEY = f"{PROJECT}:cluster"
#: The stack-file key that marks a stack protected (a bool; ``"true"``/``"false"`` strings as ``pulumi config set``
#: writes them are accepted); the setting `protected` of components/settings/, read here before any engine call.
PROTECTED_KEY = f"{PROJECT}:protected"
KUBECONFIG_MODE = "kubeconfig"
PRODUCTION_NAMES = ("prod", "production")
"""Stack names that always stay protected: the name itself, or a part of it between '-', '_' or '.' (prod,
eu-prod, prod.gpu, production_2). Their stack files cannot opt out with ``kueue-cohorts:protected: false``."""


def production_name(name: str) -> bool:
    """True if stack ``name`` reads as a production stack (see PRODUCTION_NAMES), case-insensitively."""
    return any(part in PRODUCTION_NAMES for part in re.split(r"[-_.]", name.lower()))


@dataclass(frozen=True)
class StackTarget:
    """Where a stack points and how it must be guarded, as its stack file says.

    name: the stack name. path: its stack file. mode: ``kueue-cohorts:cluster.mode`` (``sandbox`` when absent;
    None when secret). kubeconfig / context: ``cluster.kubeconfig`` / ``cluster.context`` (None when absent or
    secret). protected_by: why the stack is protected (empty: it is not). secret_keys: config keys whose value is
    a ``secure:`` secret that this reader needed and could not read. secrets_provider: the stack file's
    ``secretsprovider`` (None when absent). has_salt: the file holds a passphrase ``encryptionsalt``. opted_out: the
    stack targets a real cluster and its file says ``kueue-cohorts:protected: false`` explicitly, so it runs
    unprotected, with ``warning`` printed on every run (never for a production name, see ``production_name``).
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
    opted_out: bool = False

    @property
    def protected(self) -> bool:
        """True if the stack targets a real cluster or is marked protected (see ``protected_by``)."""
        return bool(self.protected_by)

    @property
    def warning(self) -> Optional[str]:
        """The line every run of an opted-out stack prints (None when the stack did not opt out)."""
        if not self.opted_out:
            return None
        where = f"context {self.context!r}" if self.context else "the kubeconfig's current context"
        return (f"stack {self.name!r} targets a real cluster ({where}) with protection off ({PROTECTED_KEY}: false "
                "in its stack file): a local file backend, the dev passphrase and --no-policy are allowed. Use it for "
                f"a lab or kind cluster only; remove the key to protect the stack again")


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
    doc = reader.read(Path(path))  # the one stack-file reader: `file:line:col: message`, duplicates refused
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
        raise StackFileError(str(path), None, None, f"{CLUSTER_KEY} must be a mapping (mode, kubeconfig, context), "
                             f"got {type(cluster).__name__}")
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
    raw_flag = config.get(PROTECTED_KEY)
    flag, problem = _protected_flag(raw_flag)
    # An explicit `protected: false` (bool or the string `pulumi config set` writes) lifts the kubeconfig rule, except
    # for a production name; an absent key, a secret or a typo keeps it.
    explicit_false = raw_flag is not None and flag is False and problem is None and not is_secret(raw_flag)
    opted_out = False
    if mode is None:
        protected_by.append(f"its cluster mode ({CLUSTER_KEY}) is a secret value, read as a real cluster")
    elif mode == KUBECONFIG_MODE:
        if explicit_false and not production_name(name):
            opted_out = True
        elif explicit_false:
            protected_by.append(f"it targets a real cluster ({CLUSTER_KEY}.mode is kubeconfig) and its name {name!r} "
                                f"reads as production, where {PROTECTED_KEY}: false is refused")
            problems.append(f"{PROTECTED_KEY} = false is ignored: stack {name!r} reads as production "
                            f"({'/'.join(PRODUCTION_NAMES)} in its name) and stays protected. Fix: remove the key, or "
                            "give a lab stack a name of its own (kueue-cohorts init --stack lab)")
        else:
            protected_by.append(f"it targets a real cluster: {CLUSTER_KEY}.mode is kubeconfig (a lab cluster may opt "
                                f"out with {PROTECTED_KEY}: false in its stack file)")
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
        problems=tuple(problems), opted_out=opted_out,
    )
