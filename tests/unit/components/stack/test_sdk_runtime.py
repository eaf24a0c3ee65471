"""components.stack.sdk_runtime (issue 15 item 3): the end of a program waits for its Output tasks in time linear in
their
number, with the SDK's own outcome; and the SDK function it replaces is still the one it was reviewed against."""

from __future__ import annotations

import ast
import asyncio
import hashlib
import inspect
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pulumi.runtime import stack as sdk_stack
from pulumi.runtime.settings import SETTINGS, _get_rpc_manager

from kueue_cohorts.components.stack import sdk_runtime

ROOT = Path(__file__).resolve().parents[4]
#: SHA-256 of ``inspect.getsource(pulumi.runtime.stack.wait_for_rpcs)`` in pulumi 3.259.0.
REVIEWED = "c92289a2f839f5221a4068c262a706a05ce2af506b5484545ac5d371b6211e48"


def test_the_replaced_sdk_function_is_the_reviewed_one():
    """A new SDK version changes this hash: review components/stack/sdk_runtime.py against its wait_for_rpcs (and that
    run_pulumi_func still looks the name up when the program returns), then pin the new hash."""
    source = inspect.getsource(sdk_runtime.SDK_WAIT_FOR_RPCS)
    assert hashlib.sha256(source.encode()).hexdigest() == REVIEWED
    assert "await wait_for_rpcs()" in inspect.getsource(sdk_stack.run_pulumi_func)


def test_the_program_installs_it_before_it_registers_anything():
    """__main__.py calls sdk_runtime.install() at module level before its first pulumi call."""
    tree = ast.parse((ROOT / "__main__.py").read_text())
    calls = [ast.unparse(node.value.func) for node in tree.body if isinstance(node, ast.Expr)
             and isinstance(node.value, ast.Call)]
    first_pulumi = next(i for i, node in enumerate(tree.body) if "pulumi." in ast.unparse(node)
                        and not isinstance(node, (ast.Import, ast.ImportFrom)))
    install = next(i for i, node in enumerate(tree.body) if ast.unparse(node) == "sdk_runtime.install()")
    assert "sdk_runtime.install" in calls and install < first_pulumi


@dataclass(frozen=True)
class Spec:
    """One Output task: ``ticks`` event-loop turns before it ends with ``outcome`` (ok, failed = the SDK's
    ResourceRegistrationFailed, error = ValueError); ``child`` ticks later it starts a new tracked task."""

    ticks: int
    outcome: str
    child: int | None


_SPECS = st.lists(st.builds(Spec, st.integers(0, 30), st.sampled_from(["ok", "ok", "ok", "failed", "error"]),
                            st.none() | st.integers(0, 10)), max_size=25)


def _run(wait, specs: list[Spec], rpcs: int) -> tuple[str, set[int]]:
    """Track one task per spec (and their children) and ``rpcs`` pending RPCs the SDK way, call ``wait`` and return
    (outcome: "ok" or the raised exception's type and message, indices of the spec tasks finished by then)."""
    finished: set[int] = set()
    created: list[asyncio.Future] = []
    coroutines: list = []

    async def task(i: int, spec: Spec) -> None:
        for tick in range(spec.ticks):
            if spec.child is not None and tick == spec.child:
                _track(asyncio.ensure_future(task(1000 + i, Spec(3, "ok", None))))
            await asyncio.sleep(0)
        finished.add(i)
        if spec.outcome == "failed":
            raise sdk_stack.ResourceRegistrationFailed(f"task {i}")
        if spec.outcome == "error":
            raise ValueError(f"task {i}")

    async def rpc(n: int) -> None:
        for _ in range(n % 4):
            await asyncio.sleep(0)

    def _track(fut: asyncio.Future) -> None:
        created.append(fut)
        with SETTINGS.lock:
            SETTINGS.outputs.add(fut)

    async def main() -> str:
        manager = _get_rpc_manager()
        manager.clear()
        with SETTINGS.lock:
            SETTINGS.outputs.clear()
        for i, spec in enumerate(specs):
            _track(asyncio.ensure_future(task(i, spec)))
        coroutines.extend(rpc(n) for n in range(rpcs))
        manager.rpcs.extend(coroutines)
        try:
            await wait()
        except ValueError as exc:
            return f"ValueError {exc}"
        finally:
            with SETTINGS.lock:
                SETTINGS.outputs.clear()
        return "ok"

    loop = asyncio.new_event_loop()
    try:
        outcome = loop.run_until_complete(main())
        pending = asyncio.all_tasks(loop)
        for left in pending:
            left.cancel()

        async def drain() -> None:
            await asyncio.gather(*pending, return_exceptions=True)

        loop.run_until_complete(drain())
    finally:
        # Leave nothing for the garbage collector to report later ("Task exception was never retrieved", "coroutine
        # was never awaited"): such reports run Python code at whatever point the collector runs, e.g. inside
        # pytest's compile() of a failure report, where CPython 3.11 then raises SystemError.
        for fut in created:
            if fut.done() and not fut.cancelled():
                fut.exception()
        for coroutine in coroutines:
            coroutine.close()
        loop.close()
    return outcome, finished


@settings(max_examples=150, deadline=None)
@given(specs=_SPECS, rpcs=st.integers(0, 5))
def test_same_outcome_as_the_sdk(specs, rpcs):
    """Both return once every task is done, or both raise a ValueError of a failing task; ResourceRegistrationFailed
    is ignored by both."""
    sdk, ours = _run(sdk_runtime.SDK_WAIT_FOR_RPCS, specs, rpcs), _run(sdk_runtime.wait_for_rpcs, specs, rpcs)
    errors = {f"ValueError task {i}" for i, s in enumerate(specs) if s.outcome == "error"}
    if not errors:
        assert sdk == ours == ("ok", set(range(len(specs))) | {1000 + i for i, s in enumerate(specs)
                                                                if s.child is not None and s.child < s.ticks})
    else:
        assert sdk[0] in errors and ours[0] in errors
        # Both raise as soon as a failing task has finished, without waiting for slower tasks. The tasks are only
        # looked at after the RPCs (at most `rpc_turns` loop turns); every failing task finished by then may be the
        # one raised (both take them from a set, in no fixed order), and so may one that finishes within two turns
        # of the first failure after that (the SDK's FIRST_COMPLETED wait wakes a turn after a completion).
        first = min(s.ticks for s in specs if s.outcome == "error")
        rpc_turns = sum(n % 4 + 1 for n in range(rpcs)) + 1
        bound = max(first, rpc_turns) + 2
        prompt = {f"ValueError task {i}" for i, s in enumerate(specs) if s.outcome == "error" and s.ticks <= bound}
        assert sdk[0] in prompt and ours[0] in prompt, (sdk[0], ours[0], bound)


def test_waiting_is_linear_in_the_number_of_tasks(monkeypatch):
    """Counts the tasks handed to asyncio.wait / asyncio.as_completed while 400 tasks finish one per loop turn:
    the SDK's loop hands over every pending task each time one finishes (about n^2/2), ours each task once."""
    handed = {"n": 0}
    real_wait, real_as_completed = asyncio.wait, asyncio.as_completed

    def counting_wait(fs, *args, **kwargs):
        handed["n"] += len(fs)
        return real_wait(fs, *args, **kwargs)

    def counting_as_completed(fs, *args, **kwargs):
        handed["n"] += len(fs)
        return real_as_completed(fs, *args, **kwargs)

    monkeypatch.setattr(asyncio, "wait", counting_wait)
    monkeypatch.setattr(asyncio, "as_completed", counting_as_completed)
    n = 400
    specs = [Spec(i, "ok", None) for i in range(n)]
    counts = {}
    for name, wait in (("sdk", sdk_runtime.SDK_WAIT_FOR_RPCS), ("ours", sdk_runtime.wait_for_rpcs)):
        handed["n"] = 0
        assert _run(wait, specs, 0) == ("ok", set(range(n)))
        counts[name] = handed["n"]
    assert counts["ours"] <= 2 * n, counts
    assert counts["sdk"] >= n * n // 4, counts


def test_install_replaces_the_function_run_pulumi_func_calls(monkeypatch):
    monkeypatch.setattr(sdk_stack, "wait_for_rpcs", sdk_runtime.SDK_WAIT_FOR_RPCS)
    sdk_runtime.install()
    assert sdk_stack.wait_for_rpcs is sdk_runtime.wait_for_rpcs
    sdk_runtime.install()
    assert sdk_stack.wait_for_rpcs is sdk_runtime.wait_for_rpcs


@pytest.fixture(autouse=True)
def _clean_sdk_state():
    yield
    with SETTINGS.lock:
        SETTINGS.outputs.clear()
