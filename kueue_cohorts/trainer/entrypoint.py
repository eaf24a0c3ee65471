"""The checkpoint-safe training entrypoint: run any Trainer-based recipe so that a preempted run loses nothing.

Configuration (environment, set by the PreemptibleTrainingRuntime; each has a command-line twin):

| env | flag | meaning |
|---|---|---|
| KUEUE_COHORTS_RECIPE | --recipe | `module:function`; `function(output_dir: str) -> transformers.Trainer`, built but \
not trained, with `TrainingArguments(output_dir=output_dir, ...)`. Default `trainer.demo:build_trainer`. Or a recipe \
family: `llamafactory:<config.yaml>`, `training-hub:<algorithm>`, `mini-trainer:<params.json>` (trainer.recipes). |
| KUEUE_COHORTS_CHECKPOINT_ROOT | --checkpoint-root | the RWX checkpoint PVC's mount path (required) |
| KUEUE_COHORTS_RUN_NAME | --run-name | the TrainJob name (the pod's `jobset.sigs.k8s.io/jobset-name` label via the \
downward API; required) |
| KUEUE_COHORTS_SAVE_STEPS | --save-steps | if set, overrides the recipe: save_strategy "steps" every N optimizer \
steps (components.settings.checkpoint_timing.save_steps) |
| KUEUE_COHORTS_METRICS_PORT | --metrics-port | if set, serve the trainer's metrics (trainer.metrics: checkpoint \
age, steps lost at the last preemption, flush seconds) on this port (0: any free port); needs prometheus-client |
| PET_NNODES, PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT | | set by the Trainer's torch plugin; with more than \
one node they become torch.distributed's WORLD_SIZE, RANK, MASTER_ADDR, MASTER_PORT (`distributed_env`) |

Flow: the run directory `<root>/<run name>` is created; the recipe builds its Trainer there; the newest complete
checkpoint of this run (trainer.checkpoints) is resumed from, with a log line naming it and every newer incomplete
one skipped; training runs with trainer.callback.PreemptionCallback. Exit code 0 when training finished;
PREEMPTED_EXIT_CODE (75, sysexits EX_TEMPFAIL: try again later) when it stopped on SIGTERM after writing its checkpoint
(or before training started); 2 for a configuration error; anything the recipe raises propagates (exit 1). Never 0
after a stop: the kubelet makes a deleted pod whose containers all exited 0 Succeeded (Kubernetes v1.36.3
pkg/kubelet/kubelet_pods.go getPhase), and the Job would count an evicted or drained run as complete; the runtime's
podFailurePolicy ignores 75, so such a stop is not a failure either (components/model/runtime.py).
"""
from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, Optional, Sequence

from . import checkpoints, preemption, recipes

if TYPE_CHECKING:  # annotations only: transformers is imported late, after the SIGTERM latch (trainer.preemption)
    from transformers import Trainer

    from .metrics import TrainerMetrics

log = logging.getLogger("kueue_cohorts.trainer")

DEFAULT_RECIPE = f"{__package__ or 'trainer'}.demo:build_trainer"
"""The demo recipe of this package: `trainer.demo:build_trainer` in the container (the ConfigMap mounted as the
package `trainer`, components/model/runtime.py), `kueue_cohorts.trainer.demo:build_trainer` on the host."""
PREEMPTED_EXIT_CODE = preemption.PREEMPTED_EXIT_CODE
"""Exit code after a stop signal (trainer.preemption.PREEMPTED_EXIT_CODE); the runtime's podFailurePolicy ignores it."""


class ConfigError(ValueError):
    """The entrypoint's configuration (env or flags) is unusable; the message names the variable and the fix."""


def configure_logging() -> None:
    """Send the `kueue_cohorts.trainer` logger to stderr at INFO with the `[kueue-cohorts-trainer]` prefix."""
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("[kueue-cohorts-trainer] %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False


def parse_args(argv: Optional[Sequence[str]], env: Mapping[str, str]) -> argparse.Namespace:
    """Flags over environment. Returns recipe (str), checkpoint_root (Path), run_name (str), save_steps (int|None),
    metrics_port (int|None).

    Raises ConfigError naming the missing or invalid variable.
    """
    parser = argparse.ArgumentParser(allow_abbrev=False, prog="python -m trainer", description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default=env.get("KUEUE_COHORTS_RECIPE") or DEFAULT_RECIPE)
    parser.add_argument("--checkpoint-root", default=env.get("KUEUE_COHORTS_CHECKPOINT_ROOT"))
    parser.add_argument("--run-name", default=env.get("KUEUE_COHORTS_RUN_NAME"))
    parser.add_argument("--save-steps", default=env.get("KUEUE_COHORTS_SAVE_STEPS"))
    parser.add_argument("--metrics-port", default=env.get("KUEUE_COHORTS_METRICS_PORT"))
    ns = parser.parse_args(argv)
    if not ns.checkpoint_root:
        raise ConfigError("KUEUE_COHORTS_CHECKPOINT_ROOT is not set: set it to the checkpoint PVC's mount path")
    if not ns.run_name:
        raise ConfigError("KUEUE_COHORTS_RUN_NAME is not set: set it to the TrainJob name")
    if ns.save_steps in (None, ""):
        ns.save_steps = None
    else:
        text = str(ns.save_steps)
        try:
            ns.save_steps = int(text)
        except ValueError:
            ns.save_steps = 0
        if ns.save_steps < 1:  # the message quotes the value as given (not the 0 a non-number became)
            raise ConfigError(f"KUEUE_COHORTS_SAVE_STEPS={text!r} must be a positive integer")
    if ns.metrics_port in (None, ""):
        ns.metrics_port = None
    elif not str(ns.metrics_port).isdigit() or int(ns.metrics_port) > 65535:
        raise ConfigError(f"KUEUE_COHORTS_METRICS_PORT={ns.metrics_port!r} must be a port number from 0 to 65535 "
                          "(0: any free port), or unset for no metrics endpoint")
    else:
        ns.metrics_port = int(ns.metrics_port)
    ns.checkpoint_root = Path(ns.checkpoint_root)
    return ns


def start_metrics(run_dir: Path, port: Optional[int]) -> Optional[TrainerMetrics]:
    """The trainer's metrics (trainer.metrics.TrainerMetrics) served on ``port``, or None when ``port`` is None.

    Imported only when asked for, so an image without prometheus-client runs without metrics. Raises ConfigError
    (naming the fix) when prometheus-client is missing or the port cannot be bound.
    """
    if port is None:
        return None
    try:
        from .metrics import TrainerMetrics
    except ImportError as err:
        raise ConfigError(f"KUEUE_COHORTS_METRICS_PORT={port} needs prometheus-client in the image ({err}): "
                          "install it (requirements-trainer.txt pins the version) or unset KUEUE_COHORTS_METRICS_PORT"
                          ) from None
    metrics = TrainerMetrics(run_dir)
    try:
        served = metrics.serve(port)
    except OSError as err:
        raise ConfigError(f"KUEUE_COHORTS_METRICS_PORT={port}: cannot serve metrics there ({err}): choose a free "
                          "port") from None
    log.info("metrics on http://0.0.0.0:%d/metrics", served)
    return metrics


def distributed_env(env: Mapping[str, str]) -> dict[str, str]:
    """torch.distributed variables for one process per node, from the Kubeflow Trainer's torchrun variables.

    The Trainer's torch plugin (v2.2.1 plugins/torch/torch.go) gives the `node` container PET_NNODES,
    PET_NPROC_PER_NODE, PET_NODE_RANK (the Job completion index), PET_MASTER_ADDR and PET_MASTER_PORT, meant for
    torchrun. This entrypoint is PID 1 itself (no torchrun, which would stand between the kubelet's SIGTERM and
    the training process), so it runs one process per node and sets what torchrun would: WORLD_SIZE=PET_NNODES,
    RANK=PET_NODE_RANK, LOCAL_RANK=0, LOCAL_WORLD_SIZE=1, MASTER_ADDR, MASTER_PORT.

    Args:
        env: the process environment.
    Returns:
        The variables to add; {} for a single node, or when RANK/WORLD_SIZE are already set.
    Raises:
        ConfigError: PET_NNODES > 1 without PET_NODE_RANK / PET_MASTER_ADDR / PET_MASTER_PORT.
    """
    try:
        nodes = int(env.get("PET_NNODES") or "1")
    except ValueError:
        raise ConfigError(f"PET_NNODES={env.get('PET_NNODES')!r} is not an integer") from None
    if nodes <= 1 or "RANK" in env or "WORLD_SIZE" in env:
        return {}
    missing = [name for name in ("PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT") if not env.get(name)]
    if missing:
        raise ConfigError(
            f"PET_NNODES={nodes} but {', '.join(missing)} unset: the TrainingRuntime must use mlPolicy.torch"
        )
    return {
        "WORLD_SIZE": str(nodes),
        "RANK": env["PET_NODE_RANK"],
        "LOCAL_RANK": "0",
        "LOCAL_WORLD_SIZE": "1",
        "MASTER_ADDR": env["PET_MASTER_ADDR"],
        "MASTER_PORT": env["PET_MASTER_PORT"],
    }


def load_recipe(spec: str) -> Callable[[str], Trainer]:
    """Import `module:function` and return the function. Raises ConfigError if the spec is malformed."""
    module_name, sep, function_name = spec.partition(":")
    if not sep or not module_name or not function_name:
        raise ConfigError(f"KUEUE_COHORTS_RECIPE={spec!r} must be 'module:function', e.g. {DEFAULT_RECIPE!r}")
    module = importlib.import_module(module_name)
    try:
        recipe: Callable[[str], Trainer] = getattr(module, function_name)
        return recipe
    except AttributeError:
        raise ConfigError(f"KUEUE_COHORTS_RECIPE={spec!r}: module {module_name!r} has no {function_name!r}") from None


def _prepare(trainer: Trainer, run_dir: Path, save_steps: Optional[int]) -> Optional[int]:
    """Check the recipe's Trainer writes into run_dir, apply save_steps, switch off the Trainer's own rotation and
    per-node saving.

    - KUEUE_COHORTS_SAVE_STEPS sets save_strategy "steps" and save_steps; with `load_best_model_at_end` and step
      evaluation it sets eval_steps to the same value, so every checkpoint is evaluated (the Trainer requires
      save_steps to be a multiple of eval_steps for the best model).
    - `save_on_each_node=True` is forced off, with a warning: the checkpoint root is one ReadWriteMany volume
      shared by every node, so local rank 0 of each node would write the same files at the same time
      (TrainingArguments.should_save is `local_process_index == 0` with it, `process_index == 0` without it). On a
      single node both are the same process, so forcing it off changes nothing there.

    Returns the recipe's save_total_limit (our rotation applies it instead).
    """
    from transformers.trainer_utils import IntervalStrategy, SaveStrategy

    args = trainer.args
    if Path(args.output_dir).resolve() != run_dir.resolve():
        raise ConfigError(
            f"the recipe's TrainingArguments.output_dir is {args.output_dir!r}, not the run directory "
            f"{str(run_dir)!r}: "
            "pass the output_dir the entrypoint gives the recipe to TrainingArguments"
        )
    if save_steps is not None:
        if args.save_strategy != SaveStrategy.STEPS or args.save_steps != save_steps:
            log.info("save_strategy=steps, save_steps=%d (KUEUE_COHORTS_SAVE_STEPS overrides the recipe)", save_steps)
        args.save_strategy = SaveStrategy.STEPS
        args.save_steps = save_steps
        if (
            args.load_best_model_at_end
            and args.eval_strategy == IntervalStrategy.STEPS
            and args.eval_steps != save_steps
        ):
            log.info("eval_steps=%d: load_best_model_at_end evaluates every checkpoint", save_steps)
            args.eval_steps = save_steps
    if args.save_on_each_node:
        log.warning(
            "save_on_each_node=True ignored: %s is one volume shared by every node, so only world rank 0 writes the "
            "shared checkpoint files and rotates", run_dir.parent,
        )
        args.save_on_each_node = False
    limit: Optional[int] = args.save_total_limit
    args.save_total_limit = None
    return limit


def agreed_resume(run_dir: Path, with_optimizer: bool, world_size: int) -> Optional[checkpoints.Checkpoint]:
    """The checkpoint every process resumes from: world rank 0 picks the newest complete one and broadcasts it.

    Without torch.distributed (one process) this is `checkpoints.newest_complete`. With several processes only
    rank 0 reads the directory, so all ranks load the same checkpoint even if the volume changes in between.
    Returns None when there is no complete checkpoint (start at step 0).
    """
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1):
        return checkpoints.newest_complete(run_dir, with_optimizer, world_size)
    box: list[Optional[int]] = [None]
    if dist.get_rank() == 0:
        found = checkpoints.newest_complete(run_dir, with_optimizer, world_size)
        box = [found.step if found else None]
    dist.broadcast_object_list(box, src=0)
    step = box[0]
    return None if step is None else checkpoints.Checkpoint(step, run_dir / f"checkpoint-{step}")


def run(argv: Optional[Sequence[str]] = None, env: Optional[Mapping[str, str]] = None) -> int:
    """Run one training attempt. Returns the process exit code (0 finished, PREEMPTED_EXIT_CODE stopped by a signal
    after its save, 2 config error)."""
    configure_logging()
    try:
        ns = parse_args(argv, os.environ if env is None else env)
        os.environ.update(distributed_env(os.environ if env is None else env))
        procs = (os.environ if env is None else env).get("PET_NPROC_PER_NODE", "1")
        if procs.isdigit() and int(procs) > 1:
            log.warning("PET_NPROC_PER_NODE=%s: this entrypoint runs one training process per node", procs)
        run_dir = checkpoints.ensure_run_dir(ns.checkpoint_root, ns.run_name)
        family = recipes.parse(ns.recipe)
        if family is not None:
            return recipes.run(family, run_dir, ns.save_steps)
        recipe = load_recipe(ns.recipe)
        metrics = start_metrics(run_dir, ns.metrics_port)
    except (ConfigError, ValueError) as err:
        log.error("%s", err)
        return 2
    trainer = recipe(str(run_dir))
    try:
        limit = _prepare(trainer, run_dir, ns.save_steps)
    except ConfigError as err:
        log.error("%s", err)
        return 2
    with_optimizer = not trainer.args.save_only_model
    world_size = max(int(trainer.args.world_size), 1)
    resume = agreed_resume(run_dir, with_optimizer, world_size)
    if resume is None:
        log.info("no complete checkpoint in %s: starting at global step 0", run_dir)
    else:
        log.info("resuming from %s at global step %d", resume.path, resume.step)
    if metrics is not None:
        lost = metrics.resumed(resume.step if resume else None)
        if lost:
            log.info("the previous attempt reached %d steps beyond this checkpoint: lost at its preemption", lost)

    from .callback import PreemptionCallback

    callback = PreemptionCallback(run_dir, limit, resume.path if resume else None, with_optimizer, world_size,
                                  metrics=metrics)
    trainer.add_callback(callback)
    if preemption.requested():
        log.info("%s arrived before training started: nothing to save, exiting %d", preemption.signal_name(),
                 PREEMPTED_EXIT_CODE)
        return PREEMPTED_EXIT_CODE
    trainer.train(resume_from_checkpoint=str(resume.path) if resume else None)
    step = trainer.state.global_step
    if callback.stopped_at_step is not None:
        log.info(
            "preempted: stopped at global step %d with checkpoint-%d complete, %.3f s after %s; exiting %d",
            step,
            callback.stopped_at_step,
            preemption.seconds_since_request() or 0.0,
            preemption.signal_name(),
            PREEMPTED_EXIT_CODE,
        )
        _leave_process_group()
        return PREEMPTED_EXIT_CODE
    else:
        log.info("training finished at global step %d", step)
    _leave_process_group()
    return 0


def _leave_process_group() -> None:
    """Destroy torch.distributed's default process group if this process joined one (several nodes), once
    training returned: every rank gets here after the Trainer's last collective, and leaving is local. Without it
    the group's gloo threads were torn down during interpreter exit and a rank could abort after a finished run
    ("terminate called without an active exception", exit -6, seen in CI). A failure to leave is logged, never
    turned into a failed run: the checkpoint is already complete."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return
    try:
        dist.destroy_process_group()
    except Exception as err:  # noqa: BLE001 - the run itself succeeded; report and exit 0
        log.warning("could not leave the torch.distributed process group: %s", err)
        return
    log.info("left the torch.distributed process group")
