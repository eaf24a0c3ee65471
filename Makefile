# The two commands of the README: `make up` (the main job) and `make test` (every suite; .ci/run calls it).
# Everything else here is a step of those two, usable on its own.
STACK ?= dev
BASE ?= origin/main
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Every install is hash-checked (pip --require-hashes): requirements.lock locks requirements.txt +
# requirements-dev.txt with every dependency (pip-compile --generate-hashes, `make lock`); requirements-trainer.lock
# the trainer's --no-deps wheels (kueue_cohorts/toolchain/pins.py). tests/unit/toolchain/test_requirement_locks.py checks locks and pins agree.
# The one command (kueue_cohorts/cli.py); `pip install -e .` also puts it on the PATH as `kueue-cohorts`.
KC := $(PY) -m kueue_cohorts
VENV_STAMP := $(VENV)/.installed-$(shell cat requirements.lock pyproject.toml | sha1sum | cut -c1-12)
CACHE ?= $(or $(KUEUE_COHORTS_CACHE),$(HOME)/.cache/kueue-cohorts)
# CPU torch + transformers for the trainer suite, installed without dependency resolution from a wheelhouse in the
# cache (pip's HTTP cache keeps nothing behind our registry proxy). First run downloads 2.52 GB (see the file).
WHEELHOUSE := $(CACHE)/wheels
TRAINER_STAMP := $(VENV)/.trainer-$(shell sha1sum requirements-trainer.lock | cut -c1-12)
# Recipe families whose pins conflict with requirements-trainer.txt get their own venv, layered over the project venv
# (a .pth appends its site-packages), installed hash-checked without dependency resolution (kueue_cohorts/trainer/RECIPES.md).
LF_VENV := .venv-recipe-llamafactory
LF_STAMP := $(LF_VENV)/.installed-$(shell sha1sum requirements-recipe-llamafactory.txt | cut -c1-12)

# Strict mypy (pyproject.toml) on the one package and the program; the trainer's ML stack is skipped there (not
# installed for lint), and so is the pack's entry file (pyproject.toml [tool.mypy] exclude).
LINTED := __main__.py kueue_cohorts

.PHONY: lint lock venv trainer-deps recipe-deps toolchain sandbox-up sandbox-down sandbox-status sandbox-logs up preview destroy test test-unit bench pr-summary clean-state

$(VENV_STAMP): requirements.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check --require-hashes -r requirements.lock
	$(VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .  # the command
	ln -sfn ../../$(VENV) kueue_cohorts/policy/venv  # the pack's own virtualenv (PulumiPolicy.yaml): the project venv has its pins
	rm -f $(VENV)/.installed-*; touch $@

venv: $(VENV_STAMP)

$(TRAINER_STAMP): requirements-trainer.lock $(VENV_STAMP)
	$(PY) -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps --no-index \
	    --find-links $(WHEELHOUSE) -r requirements-trainer.lock 2>/dev/null || \
	  { $(PY) -m pip download --quiet --disable-pip-version-check --require-hashes --no-deps -d $(WHEELHOUSE) \
	    -r requirements-trainer.lock && \
	    $(PY) -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps --no-index \
	    --find-links $(WHEELHOUSE) -r requirements-trainer.lock; }
	rm -f $(VENV)/.trainer-*; touch $@

trainer-deps: $(TRAINER_STAMP)

# Regenerates the locks after a pin changed: requirements.lock with pip-tools (pip-compile --generate-hashes, in a
# venv of its own, .venv-lock), requirements-trainer.lock from the wheelhouse (pip download --no-deps, pip hash).
PIP_TOOLS ?= pip-tools==7.6.2
lock:
	$(PYTHON) -m venv .venv-lock
	.venv-lock/bin/pip install --quiet --disable-pip-version-check $(PIP_TOOLS)
	.venv-lock/bin/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url \
	    --no-emit-find-links --output-file requirements.lock requirements.txt requirements-dev.txt
	$(PY) -m pip download --quiet --disable-pip-version-check --no-deps -d $(WHEELHOUSE) -r requirements-trainer.txt
	$(PY) -m kueue_cohorts.toolchain.pins trainer-lock --wheelhouse $(WHEELHOUSE)

$(LF_STAMP): requirements-recipe-llamafactory.txt $(VENV_STAMP)
	$(PYTHON) -m venv $(LF_VENV)
	$(PY) -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" > \
	  "$$($(LF_VENV)/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/zz-project-venv.pth"
	$(LF_VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps --no-index --find-links $(WHEELHOUSE) \
	    -r requirements-recipe-llamafactory.txt 2>/dev/null || \
	  { $(LF_VENV)/bin/pip download --quiet --disable-pip-version-check --no-deps -d $(WHEELHOUSE) \
	      -r requirements-recipe-llamafactory.txt && \
	    $(LF_VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps --no-index --find-links $(WHEELHOUSE) \
	    -r requirements-recipe-llamafactory.txt; }
	rm -f $(LF_VENV)/.installed-*; touch $@

# The recipe families' own venvs (tests/trainer/test_recipe_*.py, kueue_cohorts/benchmarks/trainer.py).
recipe-deps: $(LF_STAMP)

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

# The main job: `pulumi up` of a stack (dev by default; dev targets the local sandbox, brought up first). It builds
# only what that stack's `up` needs (`toolchain ensure --for-stack`): pulumi and its kubernetes provider, and the
# sandbox's binaries when the stack targets the sandbox; not Prometheus, not actionlint (`make toolchain`: all).
up: venv
	$(KC) toolchain ensure --for-stack $(STACK)
	$(KC) sandbox up --stack $(STACK) --only-if-sandbox
	$(KC) up --yes --stack $(STACK)

preview: venv
	$(KC) toolchain ensure --for-stack $(STACK)
	$(KC) sandbox up --stack $(STACK) --only-if-sandbox
	$(KC) preview --stack $(STACK)

destroy: venv
	$(KC) toolchain ensure pulumi pulumi-resource-kubernetes
	$(KC) destroy --yes --stack $(STACK)

# The pull-request summary of one stack (what .github/workflows/preview.yml posts); OUT=<file> writes it there.
pr-summary: venv
	$(PY) -m kueue_cohorts.toolchain ensure pulumi pulumi-resource-kubernetes >&2
	$(KC) pr-summary --stack $(STACK) --base $(BASE) $(if $(OUT),--out $(OUT))

# ruff over the repository, strict mypy on every package ($(LINTED)).
lint: venv
	$(PY) -m ruff check .
	$(PY) -m mypy $(LINTED)

# Every suite: unit, policy, trainer, integration (real pulumi CLI), e2e (real kube-apiserver + Kueue), on two
# pytest-xdist workers: the e2e files together on one, in order (tests/conftest.py), the rest on the other.
test: toolchain trainer-deps recipe-deps lint
	$(PY) -m pytest -n 2 --dist loadfile --no-loadscope-reorder

test-unit: venv
	$(PY) -m pytest tests/unit tests/policy -m "not integration"

# Every benchmark (prints figures); `make bench WRITE=1` also rewrites kueue_cohorts/benchmarks/results/*.json.
bench: toolchain trainer-deps recipe-deps
	$(PY) -m kueue_cohorts.benchmarks $(if $(WRITE),--write)
