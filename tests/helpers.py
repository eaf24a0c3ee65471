"""Test helpers shared by the suites: Pulumi mocks that record every registered resource, and stack-file access."""
from __future__ import annotations

import copy
import runpy
import sys
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import pulumi
import pulumi.runtime
import pulumi_kubernetes as k8s

from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.components.model.kueue import namespace_owner
from kueue_cohorts.components.resources.kueue_install import ChartReference
from kueue_cohorts.components.settings import raw_from_stack_file
from kueue_cohorts.components.stack.program import build_stack

ROOT = Path(__file__).resolve().parents[1]
STACKS = ROOT / "stacks"
FIXTURES = ROOT / "tests" / "fixtures"


@dataclass
class Registered:
    """One resource as the engine saw it: type token, Pulumi name, inputs (wire names), parent URN, provider."""

    typ: str
    name: str
    inputs: dict
    custom: bool
    urn: str
    provider: str = ""


class RecordingMocks(pulumi.runtime.Mocks):
    """Pulumi mocks that keep every resource registration (custom and component) in `registered`."""

    def __init__(self) -> None:
        self.registered: list[Registered] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        urn = f"urn:pulumi:test::kueue-cohorts::{args.typ}::{args.name}"
        self.registered.append(Registered(args.typ, args.name, dict(args.inputs), args.custom, urn,
                                          args.provider or ""))
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs):
        return {}


def run_with_mocks(build: Callable[[], Any], config: Optional[dict[str, str]] = None,
                   mocks: Optional[RecordingMocks] = None) -> RecordingMocks:
    """Run `build` under `mocks` (fresh ones by default; optionally with stack config `{"kueue-cohorts:key": json}`)
    and wait for every registration. Exceptions raised by `build` propagate; the record stays in `mocks`, so a
    caller that passed them can still read what was registered before the raise. Returns the mocks."""
    mocks = mocks if mocks is not None else RecordingMocks()
    pulumi.runtime.set_mocks(mocks, project="kueue-cohorts", stack="test", preview=False)
    pulumi.runtime.set_all_config(config or {})

    @pulumi.runtime.test
    def _program():
        build()

    _program()
    return mocks


def stack_raw(name: str) -> dict:
    """The `kueue-cohorts:*` keys of stacks/Pulumi.<name>.yaml, deep-copied so a test may change them."""
    return copy.deepcopy(raw_from_stack_file(STACKS / f"Pulumi.{name}.yaml"))


def fixture_raw(name: str) -> dict:
    """The `kueue-cohorts:*` keys of tests/fixtures/<name>.yaml (same shape as a stack file)."""
    return copy.deepcopy(raw_from_stack_file(FIXTURES / f"{name}.yaml"))


def run_main(config: dict[str, str], program: Path = ROOT / "__main__.py",
             mocks: Optional[RecordingMocks] = None) -> RecordingMocks:
    """Run the real __main__.py (or `program`) under mocks with the given stack config (engine-style JSON
    strings)."""
    return run_with_mocks(lambda: runpy.run_path(str(program), run_name="__main__"), config, mocks)


def refused(build: Callable[[], Any], config: Optional[dict[str, str]] = None) -> tuple[Exception, list[Registered]]:
    """Run `build` under fresh mocks expecting it to raise; return the exception and every resource registered
    before it (Pulumi mocks record a registration when the program makes it, raise or not). Raises AssertionError
    when `build` does not raise."""
    mocks = RecordingMocks()
    try:
        run_with_mocks(build, config, mocks)
    except Exception as err:  # noqa: BLE001 - the refusal is what the caller asserts on
        return err, mocks.registered
    raise AssertionError("the program was not refused")


def registered_objects(stack: str) -> list[dict]:
    """Every Kubernetes object the stack's program registers under mocks: {type, name, inputs}, sorted; the trainer
    ConfigMap's data is reduced to its file names (its text is the trainer package's, compared elsewhere)."""
    settings = load_settings(stack_raw(stack))

    def build() -> None:
        provider = k8s.Provider("k8s", render_yaml_to_directory="/tmp/unused")
        build_stack(settings, provider, ChartReference(chart="/chart") if settings.kueue.install else None, None,
                    namespace_owner=namespace_owner(pulumi.get_project(), pulumi.get_stack()))

    out = []
    for item in run_with_mocks(build).registered:
        if not item.custom or item.typ.startswith("pulumi:providers"):
            continue
        inputs = dict(item.inputs)
        if item.typ.endswith(":ConfigMap") and "__main__.py" in (inputs.get("data") or {}):
            inputs["data"] = sorted(inputs["data"])
        out.append({"type": item.typ, "name": item.name, "inputs": inputs})
    return sorted(out, key=lambda x: (x["type"], x["name"]))


@contextmanager
def counting_calls(*functions: Callable[..., Any]) -> Iterator[Counter[str]]:
    """Count the calls of `functions` while the block runs: qualified name -> calls (0 when never called). Counted by
    code object through `sys.setprofile`, so every call is seen whichever name a module imported the function under,
    and nothing is patched: the functions run as they are."""
    codes = {f.__code__: f.__qualname__ for f in functions}
    counts: Counter[str] = Counter({name: 0 for name in codes.values()})

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code in codes:
            counts[codes[frame.f_code]] += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield counts
    finally:
        sys.setprofile(previous)
