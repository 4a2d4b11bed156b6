"""Benchmark harness: the exporter against the simulator at several scales (``python -m bench``).

Method and figures: docs/performance.md.
"""
