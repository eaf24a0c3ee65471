"""checkpoint-safe-runtime: where the checkpoint root lies, read as the kernel resolves paths in the container.

The trainer writes below KUEUE_COHORTS_CHECKPOINT_ROOT (kueue_cohorts/trainer/entrypoint.py) through the kernel, which
reads a leading "//" as "/", folds "." and "..", and resolves a relative path against the process's working directory,
the container's workingDir (core/v1 Container.workingDir). runc mounts a volume at its mountPath cleaned by Go's
filepath.Clean (runc v1.3 libcontainer/rootfs_linux.go), which folds "//" too. Before, the rule used Python's
posixpath.normpath, which keeps a leading "//" (POSIX leaves it implementation-defined): a root written "//mnt/ckpt"
was refused as on no claim though Linux writes it to the claim; and a relative root counted as on a mount at "/". These
tests also kill the two rules-runtime survivors of `_under` (its `mount == "/"` and `rstrip("/")`)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.policy.rules.checkpoint_safe_runtime import check_checkpoint_safe_runtime
from tests.policy.fixtures import compliant, stack
from tests.policy.rules.test_checkpoint_safe_runtime import POD, RUNTIME, _container

ROOT_FIELD = f"{POD}.containers[0].env[KUEUE_COHORTS_CHECKPOINT_ROOT]"


def _root(manifests: dict, root: str, working_dir: str | None = None, mount: str | None = None) -> dict:
    _container(manifests)["env"] = [{"name": "KUEUE_COHORTS_CHECKPOINT_ROOT", "value": root}]
    if working_dir is not None:
        _container(manifests)["workingDir"] = working_dir
    if mount is not None:
        _container(manifests)["volumeMounts"][0]["mountPath"] = mount
    return manifests


def _off_the_claim(root: str) -> str:
    return (f"{RUNTIME} trainer container 'node' writes its checkpoints to KUEUE_COHORTS_CHECKPOINT_ROOT={root!r}, "
            "which is on no mounted PersistentVolumeClaim, so a re-admitted pod cannot find them; mount the "
            "checkpoint claim at the checkpoint root.")


@pytest.mark.parametrize("root,working_dir,mount", [
    ("//mnt/ckpt", None, None),  # the claim is at /mnt/ckpt
    ("//mnt/ckpt/runs", None, None),
    ("/mnt/ckpt", None, "//mnt/ckpt"),
    ("/mnt/ckpt/runs", None, "//mnt//ckpt/"),
    ("/mnt/./ckpt/../ckpt/runs", None, None),
    ("runs", "/mnt/ckpt", None),  # relative: below the workingDir
    ("./ckpt/runs", "/mnt", None),
    ("../ckpt", "/mnt/work", None),
    ("/mnt/ckpt/runs", None, "/"),  # a claim mounted at the root holds every absolute path
])
def test_a_root_linux_puts_on_the_claim_passes(root: str, working_dir: str | None, mount: str | None) -> None:
    assert check_checkpoint_safe_runtime(stack(_root(compliant(), root, working_dir, mount))) == []


@pytest.mark.parametrize("root,working_dir,mount", [
    ("//mnt/ckptx", None, None),
    ("/mnt/ckpt2/runs", None, "//mnt/ckpt"),
    ("/mnt/ckpt/../other", None, None),
    ("runs", None, None),  # relative with no workingDir: the image's WORKDIR is unknown here, fail closed
    ("runs", None, "/"),
    ("runs", "/tmp", None),
    ("ckpt", "work", None),  # a relative workingDir says nothing either
])
def test_a_root_linux_puts_off_the_claim_is_refused(root: str, working_dir: str | None, mount: str | None) -> None:
    [found] = check_checkpoint_safe_runtime(stack(_root(compliant(), root, working_dir, mount)))
    assert (found.policy, found.field, found.value, found.message) == (
        "checkpoint-safe-runtime", ROOT_FIELD, root, _off_the_claim(root))


SEGMENTS = st.lists(st.text(alphabet="abc-_", min_size=1, max_size=4), max_size=3)


def _spelled(parts: list[str], noise: list[int]) -> str:
    """``/`` + parts, each separator written one of the ways the kernel reads as one slash: "/", "//", "/./",
    "/x/../"."""
    ways = ["/", "//", "/./", "/zz/../"]
    out = ways[noise[0] % 2] if noise else "/"  # a leading "/" or "//"
    for i, part in enumerate(parts):
        out += part + (ways[noise[i + 1] % 4] if i + 1 < len(noise) else "/")
    return out


@given(SEGMENTS, st.lists(st.integers(0, 3), min_size=1, max_size=6), st.booleans())
@settings(max_examples=80, deadline=None)
def test_any_spelling_of_a_path_has_the_verdict_of_its_plain_form(
        tail: list[str], noise: list[int], inside: bool) -> None:
    """The same directory written with "//", "/./", "/x/../" and a trailing "/": below the claim (/mnt/ckpt) it
    passes; below its neighbour /mnt/ckpt-other it is refused, whatever the spelling."""
    parts = ["mnt", "ckpt" if inside else "ckpt-other", *tail]
    root = _spelled(parts, noise)
    found = check_checkpoint_safe_runtime(stack(_root(compliant(), root)))
    assert [(f.field, f.message) for f in found] == ([] if inside else [(ROOT_FIELD, _off_the_claim(root))])
