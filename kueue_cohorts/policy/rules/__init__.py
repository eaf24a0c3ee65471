"""The rules of the kueue-cohorts policy pack, as pure functions over Kubernetes resource properties.

The room is the path: one module per policy, named after it (`cohort_nominal_within_capacity.py`,
`inference_rollout_fits_nominal.py`, ...; `namespace_selector.py` holds the inference and the ClusterQueue pair),
each exporting its `Declaration` (`vocabulary/declaration.py`: name, description, promise, level, scope, options,
check) under the policy's name in upper case. Beside them:
- `book.py`: every declaration in order (`RULES`) and the one way to judge a stack by them (`run`, `judge`);
- `catalog.py`: the declarations as pulumi-policy policies (the only module that knows the SDK's callbacks);
- `config.py`: the pack config schema and policy/README.md's options table, derived from the declarations;
- `admission.py`: the ValidatingAdmissionPolicies that mirror some rules in the cluster;
- `vocabulary/`: the words every rule is written in (objects, values, paths, memo, quantities, selectors, durations,
  queues, roles, patches, Kueue's counting model, ...), shared by the rules and by the program's settings layer.

Each check takes `KubeObject`s (see `vocabulary/objects.py`) plus the policy's options and returns `Violation`s.
Nothing here imports the program's `components/` package: the pack must judge resources written by hand or loaded
from YAML exactly like the ones our components make. Modules import each other relatively, so the package works
both as `policy.rules` (tests, repo root on the path) and as `rules` (the analyzer runs `policy/__main__.py` with
`policy/` as its first path entry). This file re-exports nothing: importing one vocabulary module (the settings layer
does) must not load the pulumi-policy SDK.
"""
