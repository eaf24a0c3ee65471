# The two commands of the README: `make up` (the main job) and `make test` (every suite; .ci/run calls it).
# Everything else here is a step of those two, usable on its own.
STACK ?= dev
BASE ?= origin/main
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# The one command (kueue_cohorts/cli.py); `pip install -e .` also puts it on the PATH as `kueue-cohorts`.
KC := $(PY) -m kueue_cohorts
VENV_STAMP := $(VENV)/.installed-$(shell cat requirements.txt requirements-dev.txt pyproject.toml | sha1sum | cut -c1-12)
CACHE ?= $(or $(KUEUE_COHORTS_CACHE),$(HOME)/.cache/kueue-cohorts)
# CPU torch + transformers for the trainer suite, installed without dependency resolution from a wheelhouse in the
# cache (pip's HTTP cache keeps nothing behind our registry proxy). First run downloads 2.52 GB (see the file).
WHEELHOUSE := $(CACHE)/wheels
TRAINER_STAMP := $(VENV)/.trainer-$(shell sha1sum requirements-trainer.txt | cut -c1-12)

LINTED := components policy/rules

.PHONY: lint venv trainer-deps toolchain sandbox-up sandbox-down sandbox-status sandbox-logs up preview destroy test test-unit bench pr-summary clean-state

$(VENV_STAMP): requirements.txt requirements-dev.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements.txt -r requirements-dev.txt
	$(VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps -e .  # the kueue-cohorts command
	ln -sfn ../$(VENV) policy/venv  # the pack's own virtualenv (PulumiPolicy.yaml): the project venv has its pins
	rm -f $(VENV)/.installed-*; touch $@

venv: $(VENV_STAMP)

$(TRAINER_STAMP): requirements-trainer.txt $(VENV_STAMP)
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-index --find-links $(WHEELHOUSE) \
	    -r requirements-trainer.txt 2>/dev/null || \
	  { $(PY) -m pip download --quiet --disable-pip-version-check --no-deps -d $(WHEELHOUSE) -r requirements-trainer.txt && \
	    $(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-index --find-links $(WHEELHOUSE) \
	    -r requirements-trainer.txt; }
	rm -f $(VENV)/.trainer-*; touch $@

trainer-deps: $(TRAINER_STAMP)

# Builds every pinned binary that is missing from the cache (~/.cache/kueue-cohorts); a warm cache returns in seconds.
toolchain: venv
	$(KC) toolchain ensure

sandbox-up: toolchain
	$(KC) sandbox up --stack $(STACK)

sandbox-down: venv
	$(KC) sandbox down

sandbox-status: venv
	$(KC) sandbox status

sandbox-logs: venv
	$(KC) sandbox logs

# The main job: `pulumi up` of a stack (dev by default; dev targets the local sandbox, brought up first).
up: toolchain
	$(KC) sandbox up --stack $(STACK) --only-if-sandbox
	$(KC) up --yes --stack $(STACK)

preview: toolchain
	$(KC) sandbox up --stack $(STACK) --only-if-sandbox
	$(KC) preview --stack $(STACK)

destroy: toolchain
	$(KC) destroy --yes --stack $(STACK)

# The pull-request summary of one stack (what .github/workflows/preview.yml posts); OUT=<file> writes it there.
pr-summary: venv
	$(PY) -m toolchain ensure pulumi pulumi-resource-kubernetes >&2
	$(KC) pr-summary --stack $(STACK) --base $(BASE) $(if $(OUT),--out $(OUT))

# ruff over the repository, mypy (strict on components/ and policy/).
lint: venv
	$(PY) -m ruff check .
	$(PY) -m mypy $(LINTED)

# Every suite: unit, policy, trainer, integration (real pulumi CLI), e2e (real kube-apiserver + Kueue).
test: toolchain trainer-deps lint
	$(PY) -m pytest

test-unit: venv
	$(PY) -m pytest tests/unit tests/policy -m "not integration"

# Every benchmark (prints figures); `make bench WRITE=1` also rewrites benchmarks/results/*.json.
bench: toolchain trainer-deps
	$(PY) -m benchmarks $(if $(WRITE),--write)
