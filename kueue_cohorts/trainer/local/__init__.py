"""Running the entrypoint on this machine, outside a container: for the trainer tests and the trainer benchmark.

`process` starts `python -m trainer` as the container does (one process, or the nodes of one TrainJob configured by
the PET_* variables of the Kubeflow Trainer's torch plugin) and watches its stderr; `recipes` is the demo recipe
with hold points where the caller delivers SIGTERM. Not shipped: the TrainingRuntime's ConfigMap holds the flat
`trainer/*.py` files only (components/model/runtime.py `trainer_sources`).
"""
