"""What the LangChain adapter needs of LangGraph beyond its public API, in one place.

`in_graph` reads LangGraph's run configuration: ``interrupt()`` works only inside a node of a
graph run (it needs the run's scratchpad, under a private config key), and outside one the
adapter answers a held call as "pending" instead of pausing.
"""

from __future__ import annotations

from typing import Any

from langgraph._internal._constants import CONFIG_KEY_SCRATCHPAD
from langgraph.config import get_config
from langgraph.types import interrupt

__all__ = ["in_graph", "interrupt"]


def in_graph() -> bool:
    """True inside a node of a LangGraph run, where ``interrupt()`` can pause the graph."""
    try:
        config: Any = get_config()
    except RuntimeError:  # not inside a runnable at all
        return False
    return CONFIG_KEY_SCRATCHPAD in (config.get("configurable") or {})
