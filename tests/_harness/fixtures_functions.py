"""Sample functions registered by import path (``fixtures_functions:add`` and friends).

String annotations (``from __future__ import annotations``) on purpose: the schema must
resolve them.
"""

from __future__ import annotations

from toolsets.functions.tool_context import ToolContext

NOT_CALLABLE = 42


def add(a: int, b: int = 1) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


async def whoami(ctx: ToolContext, greeting: str = "hello") -> str:
    """Greet the caller by principal id.

    :param greeting: How to greet.
    """
    return f"{greeting} {ctx.principal.id} ({ctx.call_id})"


def variadic(*names: str) -> str:
    """Not usable as a tool: the model cannot send positional arguments."""
    return ",".join(names)
