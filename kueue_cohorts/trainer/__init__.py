"""The checkpoint-safe training entrypoint that runs inside the training container (`python -m trainer`).

Modules: `checkpoints` (discovery, completeness, rotation, flush; standard library), `preemption` (the SIGTERM
latch; standard library), `callback` (the TrainerCallback), `entrypoint` (configuration and the run), `demo` (a
tiny self-contained recipe, the runtime's default). Shipped into the TrainingRuntime as a ConfigMap (flat files,
mounted as the `trainer` package), so nothing here imports the Pulumi program (`components/`). The subpackage
`local` (running the entrypoint on this machine: the trainer tests and the benchmark) is not shipped.
"""
