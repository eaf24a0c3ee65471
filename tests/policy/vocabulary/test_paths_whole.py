"""vocabulary/paths.py: each kind of path part as kubectl explains fields (what the vocabulary-paths mutation run found
no test pinning down)."""
from __future__ import annotations

import pytest

from kueue_cohorts.policy.rules.vocabulary.paths import format_path, parse_path


@pytest.mark.parametrize("parts, path", [
    (["spec", "resourceGroups", 0, "flavors", "1", "name"], "spec.resourceGroups[0].flavors[1].name"),
    (["metadata", "labels", "kueue.x-k8s.io/queue-name"], 'metadata.labels["kueue.x-k8s.io/queue-name"]'),
    (["metadata", "annotations", "example.com/save"], 'metadata.annotations["example.com/save"]'),
    (["data", "config.yaml"], 'data["config.yaml"]'),
    (["a/b", "c"], '["a/b"].c'),
    (["spec"], "spec"),
    (["spec", ["unhashable"]], "spec.['unhashable']"),
])
def test_each_kind_of_part_is_written_as_kubectl_explains_fields(parts, path):
    """Kills `_format`'s `and` for digit strings (5), the `/` and `.` tests (9, 10), the dot before a first name
    (18), and `_format(None)` for a path with an unhashable part (format_path 4)."""
    assert format_path(parts) == path


@pytest.mark.parametrize("path", ["spec.resourceGroups[0].flavors[1].name",
                                  'metadata.labels["kueue.x-k8s.io/queue-name"]', 'data["config.yaml"]'])
def test_parse_path_inverts_format_path(path):
    assert format_path(parse_path(path)) == path
