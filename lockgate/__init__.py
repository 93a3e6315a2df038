"""lockgate's public names in one import.

``from lockgate import Gateway`` always works. The LangChain names need the extra
(``pip install 'lockgate[langchain]'``) and are imported on first use:
``human_in_the_loop``, ``human_in_the_loop_async`` (`gateway.adapters.human_in_the_loop`),
``GatewayToolkit`` (`gateway.adapters.langchain`) and ``LockgateMiddleware``
(`gateway.adapters.middleware`).
"""

from __future__ import annotations

import importlib
from typing import Any

from gateway import Gateway

__all__ = [
    "Gateway",
    "GatewayToolkit",
    "LockgateMiddleware",
    "human_in_the_loop",
    "human_in_the_loop_async",
]

_LAZY = {
    "GatewayToolkit": "gateway.adapters.langchain",
    "LockgateMiddleware": "gateway.adapters.middleware",
    "human_in_the_loop": "gateway.adapters.human_in_the_loop",
    "human_in_the_loop_async": "gateway.adapters.human_in_the_loop",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'lockgate' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
