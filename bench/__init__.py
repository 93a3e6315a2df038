"""Reproducible benchmarks of lockgate against direct MCP connections (not tests).

``python -m bench`` runs every scenario (see ``bench/__main__.py``); ``bench/RESULTS.md`` holds
the latest results. ``bench/events.py``, ``bench/policy_eval.py`` and ``bench/tracing.py`` (tracing
on vs off, with ``bench/otlp_sink.py`` as the collector) are standalone scripts.
"""

__all__: list[str] = []
