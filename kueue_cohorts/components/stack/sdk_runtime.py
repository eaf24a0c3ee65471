"""One fix to the pinned Pulumi Python SDK's runtime (pulumi 3.259.0): a program's end is linear in its outputs.

When a program returns, the SDK waits for every outstanding RPC and every Output task
(``pulumi.runtime.stack.wait_for_rpcs``). It waits for the tasks with
``asyncio.wait(all pending, return_when=FIRST_COMPLETED)`` in a loop: each round hands every pending task to
``asyncio.wait`` (a callback added to and removed from each) to learn that one or a few finished, then puts the rest
back. A stack of R resources leaves several tasks per resource pending while the engine answers them one by one, so
the rounds cost O(tasks) each and O(tasks x completions) in all: in a py-spy profile (``--gil``) of a no-change
preview of 500 tenants (1,509 resources) that loop was 60% of the program's Python time, and the program's CPU
seconds grew 2.4x from 500 to 1,000 tenants (``benchmarks/results/engine.json``).

:func:`wait_for_rpcs` does the same waiting with ``asyncio.as_completed``, which hooks each task once and yields
them as they finish: the same order of events (RPCs first, then each task as it completes, an exception raised when
its task finishes, ``ResourceRegistrationFailed`` ignored as the SDK does, tasks created meanwhile picked up in the
next round), linear in the number of tasks. :func:`install` puts it in place of the SDK's function before the
program registers anything; ``run_pulumi_func`` looks the name up when the program returns.

The trade-off: it replaces an internal function of the pinned SDK. ``tests/unit/components/stack/test_sdk_runtime.py``
pins the
SHA-256 of the SDK function's source (a new SDK fails there until this module is reviewed against it) and runs both
functions on the same programs of outputs, failures and late tasks.
"""

from __future__ import annotations

import asyncio

import pulumi
from pulumi.runtime import stack as _stack
from pulumi.runtime.settings import SETTINGS, _get_rpc_manager

#: The SDK's own function, kept for the tests' comparison.
SDK_WAIT_FOR_RPCS = _stack.wait_for_rpcs


async def wait_for_rpcs(await_all_outstanding_tasks: bool = True) -> None:
    """Wait until the program's RPCs and (unless ``await_all_outstanding_tasks`` is False) its Output tasks are done.

    Same contract as ``pulumi.runtime.stack.wait_for_rpcs`` of pulumi 3.259.0: returns None once nothing is
    outstanding; re-raises the first failed RPC (chained to the SDK's recorded unhandled exception) and the exception
    of an Output task as soon as that task finishes, except ``ResourceRegistrationFailed`` (a resource the engine
    reported failed; its outputs stay faulted for ``Output.recover``). Linear in the number of tasks.
    """
    pulumi.log.debug("Waiting for outstanding RPCs to complete")
    rpc_manager = _get_rpc_manager()
    while True:
        while rpc_manager.rpcs:
            await asyncio.sleep(0)
            try:
                await rpc_manager.rpcs.pop()
            except Exception as exn:
                if rpc_manager.unhandled_exception is not None:
                    raise exn from rpc_manager.unhandled_exception.with_traceback(rpc_manager.exception_traceback)
                raise
        if rpc_manager.unhandled_exception is not None:
            raise rpc_manager.unhandled_exception.with_traceback(rpc_manager.exception_traceback)
        pulumi.log.debug("RPCs successfully completed")
        if await_all_outstanding_tasks:
            while True:
                with SETTINGS.lock:
                    if not SETTINGS.outputs:
                        break
                    pending = list(SETTINGS.outputs)
                    SETTINGS.outputs.clear()
                for finished in asyncio.as_completed(pending):
                    try:
                        await finished
                    except _stack.ResourceRegistrationFailed:
                        pass
            pulumi.log.debug("All outstanding outputs completed.")
        if not rpc_manager.rpcs:
            break


def install() -> None:
    """Put :func:`wait_for_rpcs` in place of ``pulumi.runtime.stack.wait_for_rpcs`` (idempotent; returns None)."""
    _stack.wait_for_rpcs = wait_for_rpcs
