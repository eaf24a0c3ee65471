"""The rule book's vocabulary: what every rule reads a stack with, and what a policy is.

- `declaration.py`: `Declaration` (a policy, declared once), `Option`, `Level`, `Scope`, `Promise`;
- objects and values: `objects.py` (`KubeObject`, `Violation` helpers), `values.py` (unknown values, `Violation`),
  `paths.py`, `plain.py`, `memo.py` (facts computed once per judgement);
- Kubernetes and Kueue values: `quantity.py`, `resource_values.py`, `resources.py` (requests, quantity fields),
  `selectors.py`, `durations.py`, `quota.py` (quota entries, flavor fit), `priority.py`, `surge.py`;
- what a stack says: `queues.py` (LocalQueue index, queued workloads), `roles.py` (inference, training, tenant
  ClusterQueues), `namespaces.py`, `system_namespaces.py`, `patches.py` (patches made effective), `node_pools.py`,
  `kueue_configuration.py` (where Kueue's Configuration is), `kueue_counts.py` (what Kueue v0.19.2 counts),
  `serving.py` (KServe), `trainer.py` (Kubeflow Trainer), `signals.py`, `env_names.py`.

No module here names a policy: the rules do, in their declarations. This file re-exports nothing (the settings layer
imports single modules without loading the pulumi-policy SDK).
"""
