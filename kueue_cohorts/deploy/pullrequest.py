"""The live preview of a pull request's stack file: ``python -m kueue_cohorts.deploy preview --stack S --pull-request
FILE``.

A pull request's stack file is data, but some of its keys select what the machine that runs the preview reads or
runs: a kubeconfig names a server, a credential and possibly a program (a user's ``exec`` plugin or
``auth-provider``, which client-go and the official Python client run while LOADING the file), a context picks the
credential, the cluster mode picks the sandbox's kubeconfig or a directory, ``secret.fromFile`` is read as a
credential. Those keys are marked in the settings schema (``components.settings.base.Selecting``; enumerated by
``components.settings.selecting.selecting_keys``), and here, before any kubeconfig is loaded:

1. ``read_inside``: the pull request's file is read below the project root, component by component with
   ``O_NOFOLLOW`` (a link at any component is refused), as a regular file of at most MAX_STACK_FILE_BYTES;
2. ``pin``: of that file only the ``kueue-cohorts:*`` config is taken; every selecting key is set to the base
   branch's value (the stack file of the checkout, ``stacks/Pulumi.<stack>.yaml``) or removed when the base has
   none (the job's own default then applies: ``$KUBECONFIG``); every other top-level key and every config key of
   another namespace (``secretsprovider``, ``encryptionsalt``, ``kubernetes:*``, ``pulumi:*``) is the base's;
3. the result replaces ``stacks/Pulumi.<stack>.yaml`` (the base's), which the run then previews;
4. ``vet``: every file a selecting key of the result names must be a path inside the repository, opened without
   following links, and every kubeconfig the run will load (those files, ``$KUBECONFIG`` or ``~/.kube/config``
   where one is left to the default) must have no user with ``exec`` or ``auth-provider``. Kubernetes:
   k8s.io/client-go tools/clientcmd/api/v1 types.go ``AuthInfo.Exec`` / ``AuthProvider`` (v0.36), run by
   plugin/pkg/client/auth/exec; the Python client runs them in ``KubeConfigLoader._load_authentication``.

Raises PullRequestError with one line per problem; the entry point exits 2 and nothing was loaded or run.
"""

from __future__ import annotations

import copy
import errno
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Iterator

import yaml

from kueue_cohorts.components.settings import (
    LIST,
    MAPPING,
    PROJECT,
    KeyPath,
    Selects,
    inside_repository,
    selecting_keys,
)
from kueue_cohorts.components.settings import stackfile as reader
from kueue_cohorts.components.settings.secrets import is_secret

MAX_STACK_FILE_BYTES = 1 << 20
"""Largest pull-request stack file read (1 MiB; the repository's largest is under 20 KiB)."""
MAX_KUBECONFIG_BYTES = 4 << 20
"""Largest kubeconfig read to look for programs (4 MiB)."""
RUNS_CODE = ("exec", "auth-provider")
"""The kubeconfig user fields that make the client run a program or a provider plugin while loading the file."""
DEFAULT_KUBECONFIG = "~/.kube/config"


class PullRequestError(Exception):
    """The pull request's stack file cannot be previewed live; ``lines``: one per problem, each with its fix."""

    def __init__(self, *lines: str):
        super().__init__("\n".join(lines))
        self.lines = lines


def read_inside(root: Path, relative: str, limit: int) -> bytes:
    """Read the regular file ``relative`` below the directory ``root`` without following a link at any component.

    ``relative`` must pass ``inside_repository`` (relative, no ``..``); each directory is opened with
    ``O_DIRECTORY | O_NOFOLLOW`` relative to its parent's descriptor, the file with ``O_NOFOLLOW | O_NONBLOCK`` (a
    FIFO never blocks), then checked with ``fstat`` to be a regular file of at most ``limit`` bytes.

    Raises:
        PullRequestError: the path leaves the root, a component is a link or missing, not a regular file, too big.
    """
    try:
        inside_repository(relative)
    except ValueError as err:
        raise PullRequestError(f"{relative!r} {str(err).split(' Fix:')[0]}") from None
    parts = relative.split("/")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = child
        leaf = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    except OSError as err:
        raise PullRequestError(f"{relative!r}: {_why(err)}") from None
    finally:
        os.close(fd)
    return _regular(leaf, relative, limit)


def _regular(fd: int, shown: str, limit: int) -> bytes:
    """The content of the open file ``fd`` (closed here) when it is a regular file of at most ``limit`` bytes.
    Raises PullRequestError naming ``shown``."""
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise PullRequestError(f"{shown!r}: not a regular file")
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise PullRequestError(f"{shown!r}: larger than {limit} bytes")
    return data


def _why(err: OSError) -> str:
    if err.errno in (errno.ELOOP, errno.ENOTDIR):
        return "a component is a symbolic link or not a directory (links are never followed: one could point at " \
               "any file of the runner)"
    return err.strerror or str(err)


def _read_outside(path: Path, limit: int) -> bytes:
    """Read ``path`` (the job's own kubeconfig, outside the repository) without following a link at its last
    component, as a regular file of at most ``limit`` bytes. Raises PullRequestError."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        raise PullRequestError(f"{str(path)!r}: {_why(err)}") from None
    return _regular(fd, str(path), limit)


def programs(text: bytes) -> list[str]:
    """The users of the kubeconfig ``text`` that make a client run a program (``exec``) or an auth provider
    plugin (``auth-provider``), one clause each ("user NAME has exec"); ``["it cannot be read as a kubeconfig"]``
    when it is not a YAML/JSON mapping. Pure; never raises (any input)."""
    try:
        config = yaml.safe_load(text)
    except (yaml.YAMLError, ValueError, RecursionError):
        return ["it cannot be read as a kubeconfig (not YAML or JSON)"]
    if not isinstance(config, dict):
        return ["it cannot be read as a kubeconfig (not a mapping)"]
    users = config.get("users")
    found: list[str] = []
    for entry in users if isinstance(users, list) else []:
        user = entry.get("user") if isinstance(entry, dict) else None
        name = entry.get("name") if isinstance(entry, dict) else None
        if isinstance(user, dict):
            found += [f"user {name!s} has {key}" for key in RUNS_CODE if user.get(key) is not None]
    return found


# --- pinning ---------------------------------------------------------------------------------------------------------


_ABSENT = object()


def _twin(item: Any, index: int, base: Any) -> Any:
    """The item of the base's list that ``item`` (at ``index`` of the pull request's list) stands for: the one with
    the same ``name`` when items have names, else none (a new item gets no selecting value of its own)."""
    if not isinstance(base, list):
        return _ABSENT
    name = item.get("name") if isinstance(item, dict) else None
    if name is None:
        return _ABSENT
    return next((b for b in base if isinstance(b, dict) and b.get("name") == name), _ABSENT)


def _pin(pr: dict[str, Any], base: Any, key: Any, rest: KeyPath, where: str, changed: list[str]) -> None:
    """Pin ``pr[key]`` along ``rest`` to ``base[key]`` (``base`` is the base's node at the same place, or _ABSENT).
    A pull request's node that is not the container the path needs is replaced by the base's whole."""
    twin = base.get(key, _ABSENT) if isinstance(base, dict) else _ABSENT
    here = pr.get(key, _ABSENT)
    if not rest:
        if here != twin:
            changed.append(where)
            if twin is _ABSENT:
                pr.pop(key, None)
            else:
                pr[key] = copy.deepcopy(twin)
        return
    if here is _ABSENT:
        return  # nothing the pull request sets on this path
    step, after = rest[0], rest[1:]
    if step == LIST and isinstance(here, list):
        for index, item in enumerate(here):
            if isinstance(item, dict):
                _pin_model(item, _twin(item, index, twin), after, f"{where}[{index}]", changed)
            else:
                here[index] = None if _twin(item, index, twin) is _ABSENT else copy.deepcopy(_twin(item, index, twin))
        return
    if step == MAPPING and isinstance(here, dict):
        for name in list(here):
            sub = twin.get(name, _ABSENT) if isinstance(twin, dict) else _ABSENT
            if isinstance(here[name], dict):
                _pin_model(here[name], sub, after, f"{where}.{name}", changed)
        return
    if step not in (LIST, MAPPING) and isinstance(here, dict) and not is_secret(here):
        _pin(here, twin, step, after, f"{where}.{step}", changed)
        return
    changed.append(where)  # a secret, a scalar or a list where the path needs a mapping: take the base's whole
    if twin is _ABSENT:
        pr.pop(key, None)
    else:
        pr[key] = copy.deepcopy(twin)


def _pin_model(pr: dict[str, Any], base: Any, rest: KeyPath, where: str, changed: list[str]) -> None:
    if rest:
        _pin(pr, base, rest[0], rest[1:], f"{where}.{rest[0]}", changed)


def pin(pr_doc: Mapping[str, Any], base_doc: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The stack file the live preview runs: the base's ``base_doc`` with the pull request's ``kueue-cohorts:*``
    config of ``pr_doc``, except every selecting key (``selecting_keys``), which is the base's value, or absent when
    the base has none. List items (MultiKueue workers) are matched by ``name``; an item only the pull request has
    gets no selecting value. Returns (the stack file, the keys that differed, e.g.
    ``kueue-cohorts:cluster.kubeconfig`` or ``kueue-cohorts:multiKueue.workers[0].context``)."""
    prefix = f"{PROJECT}:"
    pr_config = pr_doc.get("config") if isinstance(pr_doc.get("config"), dict) else {}
    base_config = base_doc.get("config") if isinstance(base_doc.get("config"), dict) else {}
    config = {k: copy.deepcopy(v) for k, v in (base_config or {}).items() if not str(k).startswith(prefix)}
    config.update({k: copy.deepcopy(v) for k, v in (pr_config or {}).items() if str(k).startswith(prefix)})
    changed: list[str] = []
    for path in selecting_keys():
        _pin(config, base_config, f"{prefix}{path[0]}", path[1:], f"{prefix}{path[0]}", changed)
    doc = {k: copy.deepcopy(v) for k, v in base_doc.items() if k != "config"}
    doc["config"] = config
    return doc, list(dict.fromkeys(changed))


def values(config: Mapping[str, Any], path: KeyPath) -> Iterator[tuple[str, Any]]:
    """Every value at the key path ``path`` (``selecting_keys`` form) in a stack file's ``config``: (its key, as
    ``kueue-cohorts:multiKueue.workers[0].kubeconfig``, value)."""
    todo: list[tuple[Any, KeyPath, str]] = [(config, (f"{PROJECT}:{path[0]}", *path[1:]), "")]
    while todo:
        node, rest, where = todo.pop()
        step, after = rest[0], rest[1:]
        if step == LIST:
            items = list(enumerate(node)) if isinstance(node, list) else []
            todo += [(child, after, f"{where}[{i}]") for i, child in reversed(items)] if after else []
            if not after:
                yield from ((f"{where}[{i}]", child) for i, child in items)
            continue
        children: list[tuple[Any, Any]]
        if step == MAPPING:
            children = list(node.items()) if isinstance(node, dict) else []
        else:
            children = [(step, node[step])] if isinstance(node, dict) and step in node else []
        for name, child in children:
            key = f"{where}.{name}" if where else str(name)
            if after:
                todo.append((child, after, key))
            else:
                yield key, child


def vet(root: Path, doc: Mapping[str, Any], environ: Mapping[str, str]) -> list[str]:
    """Every problem of the pinned stack file ``doc`` (``pin``) before anything is loaded: each file a selecting key
    names is a path inside ``root`` read without following links (``read_inside``), and no kubeconfig the run loads
    (those files; ``$KUBECONFIG``'s or ``~/.kube/config`` where a cluster or worker kubeconfig is left to the
    default) has a user that runs a program (``programs``). Returns one line per problem, with its fix."""
    config = doc.get("config") if isinstance(doc.get("config"), dict) else {}
    problems: list[str] = []
    defaulted = False
    for path, what in selecting_keys().items():
        if what not in (Selects.KUBECONFIG, Selects.PATH):
            continue
        found = list(values(config or {}, path))
        if what == Selects.KUBECONFIG and path[-1] == "kubeconfig":  # a cluster or worker left to the default file
            owners = [owner for _, owner in values(config or {}, path[:-1])] if len(path) > 1 else []
            defaulted = defaulted or (path[0] == "cluster" and not owners) or any(
                not isinstance(owner, dict) or not owner.get("kubeconfig") for owner in owners)
        for key, value in found:
            if value is None:
                continue
            if not isinstance(value, str):
                problems.append(f"{key} = {value!r}: must be a path. Fix: write a path inside the repository")
                continue
            try:
                data = read_inside(root, value, MAX_KUBECONFIG_BYTES) if what == Selects.KUBECONFIG else None
                if what == Selects.PATH and Path(root, value).exists():
                    read_or_list_inside(root, value)
            except PullRequestError as err:
                problems.append(f"{key} = {value!r}: {err}. Fix: name a file inside the repository, with no link on "
                                "the way (the live preview never follows one)")
                continue
            if data is not None:
                problems += [f"{key} = {value!r}: {clause}, which the client would run while loading it. Fix: use a "
                             "kubeconfig with a token or client certificate (docs/previews.md)" for clause in
                             programs(data)]
    if defaulted:
        entries = [e for e in (environ.get("KUBECONFIG") or "").split(os.pathsep) if e] or [DEFAULT_KUBECONFIG]
        for entry in entries:
            path_ = Path(entry).expanduser()
            if not os.path.lexists(path_):
                continue  # the preflight reports a missing kubeconfig
            try:
                data = _read_outside(path_, MAX_KUBECONFIG_BYTES)
            except PullRequestError as err:
                problems.append(f"KUBECONFIG {entry}: {err}. Fix: write the preview identity's kubeconfig as a "
                                "regular file")
                continue
            problems += [f"KUBECONFIG {entry}: {clause}, which the client would run while loading it. Fix: give the "
                         "live preview a kubeconfig with a token (docs/previews.md, \"The preview identity\")"
                         for clause in programs(data)]
    return problems


def read_or_list_inside(root: Path, relative: str) -> None:
    """Check that ``relative`` (a file or a directory) is below ``root`` with no link at any component.
    Raises PullRequestError."""
    try:
        inside_repository(relative)
    except ValueError as err:
        raise PullRequestError(f"{relative!r} {str(err).split(' Fix:')[0]}") from None
    here = root
    for part in relative.split("/"):
        here = here / part
        try:
            mode = os.lstat(here).st_mode
        except FileNotFoundError:
            return  # the rest does not exist: nothing to follow
        if stat.S_ISLNK(mode):
            raise PullRequestError(f"{relative!r}: {str(here.relative_to(root))!r} is a symbolic link")


def prepare(stack: str, pull_request: Path, root: Path, environ: Mapping[str, str]) -> list[str]:
    """Make ``<root>/stacks/Pulumi.<stack>.yaml`` the pull request's stack file ``pull_request`` pinned to that
    base file (``pin``), after reading it safely (``read_inside``; ``pull_request`` relative to ``root`` or absolute
    inside it), and check what the run will load (``vet``). Returns one line per selecting key the pull request had
    changed (each now the base's).

    Raises:
        PullRequestError: the file cannot be read safely or as a stack file, the base has no stack file, or ``vet``
            found a problem (every one listed); nothing was written then.
    """
    absolute = pull_request if pull_request.is_absolute() else Path.cwd() / pull_request
    try:
        relative = absolute.relative_to(root)
    except ValueError:
        raise PullRequestError(f"--pull-request {pull_request}: must be a file inside the repository {root}") from None
    data = read_inside(root, relative.as_posix(), MAX_STACK_FILE_BYTES)
    base_path = reader.stack_path(stack, root)
    try:
        pr_doc = reader.parse(data.decode("utf-8"), f"--pull-request {pull_request}")
        base_doc = reader.read(base_path)
    except (reader.StackFileError, UnicodeDecodeError) as err:
        raise PullRequestError(f"{err}") from None
    doc, changed = pin(pr_doc, base_doc)
    problems = vet(root, doc, environ)
    if problems:
        raise PullRequestError(*problems)
    base_path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return [f"{key}: the pull request's value is not used; the live preview takes it from the base branch" for key
            in changed]
