"""Run every benchmark (make bench): each prints its figures and writes benchmarks/results/<name>.json."""
import runpy
import sys

BENCHMARKS = ["benchmarks.planning", "benchmarks.engine", "benchmarks.policy", "benchmarks.sandbox", "benchmarks.trainjob",
              "benchmarks.trainer"]

if __name__ == "__main__":
    for name in BENCHMARKS:
        print(f"== {name}", flush=True)
        sys.argv = [name]
        runpy.run_module(name, run_name="__main__")
