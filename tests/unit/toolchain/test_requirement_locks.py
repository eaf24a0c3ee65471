"""Issue 28 finding 9: every requirements file is locked with hashes and installed with --require-hashes; the locks
agree with the pins (toolchain/pins.py)."""
from __future__ import annotations

import re

import pytest

from kueue_cohorts.toolchain.pins import canonical, disagreements, lock_entries, requirement_pins
from tests.helpers import ROOT

RUNTIME_PINS = {**requirement_pins((ROOT / "requirements.txt").read_text()),
                **requirement_pins((ROOT / "requirements-dev.txt").read_text())}
TRAINER_PINS = requirement_pins((ROOT / "requirements-trainer.txt").read_text())
LOCK = lock_entries((ROOT / "requirements.lock").read_text())
TRAINER_LOCK = lock_entries((ROOT / "requirements-trainer.lock").read_text())
MAKEFILE = (ROOT / "Makefile").read_text()


def test_the_venv_lock_locks_every_pin_with_hashes():
    assert len(RUNTIME_PINS) >= 15 and len(LOCK) > len(RUNTIME_PINS)  # the pins plus what they pull in
    assert disagreements(RUNTIME_PINS, LOCK) == []
    assert all(len(hashes) >= 1 and all(h.startswith("sha256:") for h in hashes) for _, hashes in LOCK.values())
    assert "pip-compile --allow-unsafe --generate-hashes" in (ROOT / "requirements.lock").read_text()[:600]


def test_the_trainer_lock_is_exactly_its_no_deps_pins_with_hashes():
    assert len(TRAINER_PINS) == 52
    assert disagreements(TRAINER_PINS, TRAINER_LOCK, exact=True) == []


def test_what_both_environments_install_is_the_same_version():
    """requirements-trainer.lock is installed on top of requirements.lock (--no-deps): a package both hold must
    be at one version, or the trainer install would silently replace a locked one."""
    both = set(TRAINER_LOCK) & set(LOCK)
    assert both, "the two sets share pydantic, PyYAML, ... (checked, not assumed)"
    assert {n: (LOCK[n][0], TRAINER_LOCK[n][0]) for n in both if LOCK[n][0] != TRAINER_LOCK[n][0]} == {}


def _hashed_file(name: str) -> bool:
    """Whether requirements file ``name`` pins every entry with a --hash (pip then checks hashes for all of it)."""
    text = (ROOT / name).read_text()
    entries = lock_entries(text)
    return bool(entries) and disagreements(requirement_pins(text), entries, exact=True) == []


def test_every_pip_install_of_the_makefile_requires_hashes():
    """Every pip install or download of the Makefile, but `make lock`'s own (pip-tools itself; the wheelhouse
    download it hashes) and the checkout's own editable install (no dependencies, no build isolation: nothing from
    the index), reads a lock: requirements*.lock with --require-hashes, or a requirements file whose every pin
    carries its --hash (pip's hash-checking mode then covers all of it)."""
    commands = [c.strip() for line in MAKEFILE.replace("\\\n", " ").splitlines() if not line.lstrip().startswith("#")
                for c in re.split(r"&&|\|\||;", line)]
    installs = [c for c in commands if re.search(r"pip (install|download)", c)
                and "$(PIP_TOOLS)" not in c and "requirements-trainer.txt" not in c
                and not re.search(r"--no-deps --no-build-isolation -e \.(\s|$)", c)]
    assert len(installs) >= 4, installs
    for line in installs:
        (name,) = re.findall(r"-r (\S+)", line)
        if name.endswith(".lock"):
            assert "--require-hashes" in line, line
        else:
            assert _hashed_file(name), f"{name} is installed without hashes: {line}"
    assert "-r requirements.txt" not in MAKEFILE.split("lock:")[0]  # never the unhashed pins


@pytest.mark.parametrize("change,expected", [
    (lambda pins, lock: pins.update(pydantic="9.9.9"), "pydantic==9.9.9 is pinned, the lock has pydantic=="),
    (lambda pins, lock: pins.update({"new-package": "1.0"}), "new-package==1.0 is pinned but not in the lock"),
    (lambda pins, lock: lock.update(pyyaml=(lock["pyyaml"][0], ())), "has no --hash in the lock"),
])
def test_a_pin_changed_without_its_lock_is_caught(change, expected):
    pins, lock = dict(RUNTIME_PINS), dict(LOCK)
    change(pins, lock)
    assert any(expected in line for line in disagreements(pins, lock)), disagreements(pins, lock)


def test_an_extra_wheel_in_a_no_deps_lock_is_caught():
    lock = dict(TRAINER_LOCK)
    lock["triton"] = ("3.9.0", ("sha256:" + "0" * 64,))
    assert disagreements(TRAINER_PINS, lock, exact=True) == ["triton==3.9.0 is in the lock but not pinned"]


@pytest.mark.parametrize("text,parsed", [
    ("PyYAML==6.0.4  # comment\n", {"pyyaml": "6.0.4"}),
    ("# only a comment\n\n--index-url https://x\nnvidia_cudnn.cu13==9.26\n", {"nvidia-cudnn-cu13": "9.26"}),
    ("uvicorn[standard]==0.30 \\\n    --hash=sha256:" + "a" * 64 + "\n", {"uvicorn": "0.30"}),
])
def test_pins_are_read_by_canonical_name(text, parsed):
    assert requirement_pins(text) == parsed
    assert canonical("Typing_Extensions") == "typing-extensions"


@pytest.mark.parametrize("text", ["requests>=2\n", "torch\n", "numpy~=2.0\n"])
def test_a_requirement_that_is_not_a_pin_is_refused(text):
    with pytest.raises(ValueError, match="not an exact name==version pin"):
        requirement_pins(text)
