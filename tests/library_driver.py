"""Drive a Pulumi program of a user's own through the real pulumi CLI, with the installed kueue-cohorts' offline
engine settings (run by tests/library_env.py with a fresh venv's python; imports only installed packages).

    python library_driver.py PROJECT_DIR preview|up|destroy BACKEND_URL CONFIG_JSON

Prints one JSON line last: {"steps": [{"op", "type", "name"}], "outputs": {...}, "summary": {...},
"components_file": <where `components` was imported from>}.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from pulumi import automation as auto

from kueue_cohorts import components
from kueue_cohorts.deploy import engine


def main() -> int:
    project, operation, backend, config = Path(sys.argv[1]), sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
    stack = engine.open_stack("lab", work_dir=project, program=project / "__main__.py", backend=backend)
    for key, value in config.items():
        stack.set_config(key, auto.ConfigValue(value))
    steps: list[dict[str, str]] = []

    def on_event(event: auto.EngineEvent) -> None:
        pre = event.resource_pre_event
        if pre is not None:
            steps.append({"op": str(pre.metadata.op.value), "type": pre.metadata.type,
                          "name": pre.metadata.urn.rsplit("::", 1)[-1]})

    if operation == "preview":
        result = stack.preview(on_event=on_event, color="never", on_output=lambda line: sys.stderr.write(line))
        summary, outputs = dict(result.change_summary), {}
    elif operation == "up":
        up = stack.up(on_event=on_event, color="never", on_output=lambda line: sys.stderr.write(line))
        summary = dict(up.summary.resource_changes or {})
        outputs = {key: value.value for key, value in up.outputs.items()}
    else:
        down = stack.destroy(on_event=on_event, color="never", on_output=lambda line: sys.stderr.write(line))
        summary, outputs = dict(down.summary.resource_changes or {}), {}
    # the engine's own output went to stderr; the report is the last stdout line
    print(json.dumps({"steps": steps, "outputs": outputs, "summary": summary, "components_file": components.__file__},
                     default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
