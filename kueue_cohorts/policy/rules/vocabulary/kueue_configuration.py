"""Where a stack carries Kueue's manager Configuration: ConfigMap data and Helm chart values.

Any ConfigMap `data` value, or `binaryData` value (base64), that is a YAML `config.kueue.x-k8s.io/*` `Configuration`
(Kueue v0.19.2's chart renders it as ConfigMap `MANAGER_CONFIG_MAP`, key `controller_manager_config.yaml`:
`charts/kueue/templates/manager/manager-config.yaml`), and the `managerConfig.controllerManagerConfigYaml` value of
a Helm `kubernetes:helm.sh/v4:Chart` or `kubernetes:helm.sh/v3:Release` (the chart's `values.yaml`).
"""
from __future__ import annotations

import base64
import binascii
from typing import Any, Iterator

from .objects import KubeObject
from .values import MISSING, UnknownValueError, get, is_map

CONFIG_GROUP = "config.kueue.x-k8s.io"
"""The API group of Kueue's Configuration (`apis/config/v1beta2`)."""
MANAGER_CONFIG_KEY = "controller_manager_config.yaml"
"""The ConfigMap key the chart writes the Configuration under."""


def _decoded(text: str) -> str:
    """A ConfigMap `binaryData` value as text (base64, then UTF-8); "" when it is neither (the apiserver refuses
    invalid base64, and Kueue cannot read a Configuration that is not UTF-8)."""
    try:
        return base64.b64decode(text, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return ""


def configurations(obj: KubeObject) -> Iterator[tuple[str, Any]]:
    """Yield (where, raw YAML text) of every Kueue manager Configuration carried by `obj`.

    An unknown value raises UnknownValueError only where a Kueue Configuration may hide: the ConfigMap key
    `controller_manager_config.yaml` (or any key of a ConfigMap whose name mentions kueue) and the values of a
    chart whose reference mentions kueue. Unknown values of unrelated ConfigMaps and charts are skipped.
    """
    if obj.is_kind("", "ConfigMap"):
        kueue_map = "kueue" in obj.name
        for section in ("data", "binaryData"):
            data = get(obj.props, section)
            if not is_map(data):
                continue
            for key in list(data):
                try:
                    value = data[key]
                except UnknownValueError:
                    if key == MANAGER_CONFIG_KEY or kueue_map:
                        raise
                    continue
                if section == "binaryData" and isinstance(value, str):
                    value = _decoded(value)
                if isinstance(value, str) and CONFIG_GROUP in value:
                    yield f"{section}['{key}']", value
    elif obj.group == "helm.sh" and obj.kind in ("Chart", "Release"):
        try:
            text = get(obj.props, "values", "managerConfig", "controllerManagerConfigYaml")
        except UnknownValueError:
            if "kueue" in str(get(obj.props, "chart") or "") or "kueue" in obj.name:
                raise
            return
        if text is not MISSING:
            yield "values.managerConfig.controllerManagerConfigYaml", text
