"""The one reader of stack files (stacks/Pulumi.<stack>.yaml), as strict as the engine that reads them too.

Every tool reads a stack file through `read` or `parse` (the program's settings check, `deploy`, `prsummary`,
`sandbox`, `cohorts`, the secrets locator), so a file is accepted or refused the same way everywhere, with one line
per error in the compiler convention `file:line:col: message` (1-based, as editors jump to it).

Strictness follows the Pulumi CLI (v3.259.0 `sdk/go/common/encoding/marshal.go` reads YAML with gopkg.in/yaml.v3
v3.0.1, whose `decode.go` (`d.mapping`) refuses a mapping key defined twice: "mapping key "x" already defined at
line N"), where PyYAML would silently keep the last value; so a duplicate key here is an error at the second
occurrence, naming the first. A document that is not a mapping, or whose `config` is not a mapping, is refused too.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node

from kueue_cohorts import PROJECT_ROOT

#: Where a project keeps its stack files, relative to its root (Pulumi.yaml ``stackConfigDir: stacks``).
STACKS_DIR = "stacks"


def relative_path(stack: str) -> str:
    """``stacks/Pulumi.<stack>.yaml``: the stack file of stack ``stack`` relative to the project root (the Pulumi
    CLI's ``Pulumi.<stack>.yaml`` in ``stackConfigDir``); also its name at a git ref (``REF:stacks/...``)."""
    return f"{STACKS_DIR}/Pulumi.{stack}.yaml"



def stack_path(stack: str, root: Optional[Path] = None) -> Path:
    """The stack file of stack ``stack`` in the project at ``root`` (default this checkout, PROJECT_ROOT):
    ``<root>/stacks/Pulumi.<stack>.yaml``; pure, the file may not exist."""
    return (PROJECT_ROOT if root is None else root) / relative_path(stack)


def stack_names(root: Optional[Path] = None) -> list[str]:
    """The stacks of the project at ``root`` (default PROJECT_ROOT): the ``<stack>`` of every
    ``stacks/Pulumi.<stack>.yaml``, sorted."""
    directory = (PROJECT_ROOT if root is None else root) / STACKS_DIR
    return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in directory.glob("Pulumi.*.yaml"))


class StackFileError(ValueError):
    """A stack file that cannot be read as one: `path`, 1-based `line` and `column` (None when the error has no
    place: an unreadable file), and `message`. `str()` is the one line `path:line:col: message`."""

    def __init__(self, path: str, line: Optional[int], column: Optional[int], message: str):
        self.path, self.line, self.column, self.message = path, line, column, message
        where = path if line is None else f"{path}:{line}:{column}"
        super().__init__(f"{where}: {message}")


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's SafeLoader (YAML 1.1 scalars, no Python tags) that refuses a mapping key defined twice."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        """PyYAML's `construct_mapping`, after refusing a key that stands twice in `node` (ConstructorError at the
        second occurrence, naming the line of the first)."""
        if isinstance(node, MappingNode):
            seen: dict[Any, Node] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key: the base class reports it
                    continue
                if first is not None:
                    raise ConstructorError(
                        None, None, f"mapping key {key!r} already defined at line {first.start_mark.line + 1}",
                        key_node.start_mark)
                seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


def parse(text: str, path: str = "<stack file>") -> dict[str, Any]:
    """Parse a stack file's `text` (named `path` in errors) into its document: a mapping, `{}` for an empty file.

    Raises:
        StackFileError: YAML syntax (at the offending mark), a duplicate key (at its second occurrence), a document
            that is not a mapping, or a `config` that is not a mapping; one line `path:line:col: message`.
    """
    try:
        doc = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        message = " ".join(str(part) for part in (err.context, err.problem) if part)
        if mark is None:
            raise StackFileError(path, None, None, message or "not valid YAML") from None
        raise StackFileError(path, mark.line + 1, mark.column + 1, message) from None
    except yaml.YAMLError as err:
        raise StackFileError(path, None, None, f"not valid YAML: {err}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise StackFileError(path, 1, 1, f"a stack file is a YAML mapping (config:, encryptionsalt:, ...), not a "
                                         f"{type(doc).__name__}")
    config = doc.get("config")
    if config is not None and not isinstance(config, dict):
        raise StackFileError(path, _line_of(text, "config"), 1,
                             f"`config:` is a mapping of config keys, not a {type(config).__name__}")
    return doc


def _line_of(text: str, key: str) -> Optional[int]:
    """The 1-based line of the top-level `key:` in `text`, or None."""
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith(f"{key}:"):
            return number
    return None


def read(path: Path) -> dict[str, Any]:
    """Read and `parse` the stack file at `path`.

    Raises:
        StackFileError: the file cannot be read (no line), or as `parse`.
    """
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise StackFileError(str(path), None, None, f"cannot read the stack file: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise StackFileError(str(path), None, None, f"not UTF-8 text: {err.reason}") from None
    return parse(text, str(path))


def project_config(doc: dict[str, Any], project: str) -> dict[str, Any]:
    """The `<project>:*` keys of a parsed stack file's `config`, prefix stripped (other namespaces ignored)."""
    config = doc.get("config") or {}
    prefix = f"{project}:"
    return {key[len(prefix):]: value for key, value in config.items()
            if isinstance(key, str) and key.startswith(prefix)}
