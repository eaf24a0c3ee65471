"""Settings every test shares: hypothesis never fails a test on wall-clock time.

Hypothesis's default 200 ms deadline per example turns a loaded 2-core machine (CI next to other jobs) into random
failures; timing is never a test assertion here (hang guards are pytest timeouts), so the deadline is off for every
property test, and a property that is too slow shows as a slow test in `--durations`.
"""
from hypothesis import settings

settings.register_profile("kueue-cohorts", deadline=None)
settings.load_profile("kueue-cohorts")
