"""Reproducible benchmarks of lockgate against direct MCP connections (not tests).

``python -m bench`` runs every scenario (see ``bench/__main__.py``); ``bench/RESULTS.md`` holds
the latest results. ``bench/events.py`` and ``bench/policy_eval.py`` are standalone scripts.
"""

__all__: list[str] = []
