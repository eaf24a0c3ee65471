"""Layer 3, checks: judgement before any resource is registered, and the documents generated from the schema.

- ``validation``: the settings check: shape (``components.settings``), then every rule, on the very objects the
  program registers (``components.model.assembly``); one ``SettingsError`` lists every problem with its key path,
  value, rule and fix;
- ``settings_rules`` and ``security_rules``: the rules that judge the stack config itself, where no rendered object
  carries the fault (targets, capacity declarations, key combinations; subjects that mean everyone);
- ``chart_values``: ``kueue.values`` checked against the pinned Kueue chart's own values.yaml;
- ``docs``: the configuration reference and the stack-file JSON Schema, generated from the settings schema.

The rule book itself is ``policy.rules`` (standalone: the policy pack ships it); this layer runs it on the stack.
"""
from __future__ import annotations

from kueue_cohorts.components.checks.validation import Validation, load_settings, load_stack_file, validate

__all__ = ["Validation", "load_settings", "load_stack_file", "validate"]
