"""kueue-cohorts' program, package by layer. The tree is the layer map; imports go one way, top to bottom:

- ``components.settings``: the stack config (``kueue-cohorts:*``) -> one frozen, typed ``Settings`` (shape only);
- ``components.model``: pure: ``Settings`` -> typed Kueue / Trainer / KServe objects -> manifests with provenance
  (field path -> config key); ``components.model.assembly`` is the one assembler of the stack;
- ``components.checks``: judgement before anything registers: the config-only rules, the rule book
  (``policy.rules``, standalone, shipped as the policy pack) on the assembled objects, and the generated documents;
- ``components.resources``: Pulumi ComponentResources that register exactly the assembled manifests and add only
  lifecycle (parent, aliases, depends_on, replace/retain); also a library for other Pulumi programs, whose Args take
  ``pulumi.Input`` values (docs/library.md);
- ``components.stack``: the provider, the target, the preflight of the live cluster and ``build_stack``; only
  ``__main__.py`` imports it.

The tools (``deploy``, ``sandbox``, ``cohorts``, ``prsummary``, ``benchmarks``, ``kueue_cohorts``) import the pure
layers (settings, model, checks) only. tests/unit/test_layers.py holds the map and fails on any import against it.
"""
