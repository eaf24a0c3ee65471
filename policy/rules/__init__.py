"""The rules of the kueue-cohorts policy pack, as pure functions over Kubernetes resource properties.

Each rule module takes `KubeObject`s (see `objects.py`) plus the policy's config and returns `Violation`s; only
`catalog.py` knows about the pulumi-policy SDK. Nothing here imports the program's `components/` package: the
pack must judge resources written by hand or loaded from YAML exactly like the ones our components make.
Modules import each other relatively, so the package works both as `policy.rules` (tests, repo root on the path)
and as `rules` (the analyzer runs `policy/__main__.py` with `policy/` as its first path entry).
"""
