"""External tools: declared in the config with a JSON schema, run by a worker (always deferred)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gateway.config.servers import EXTERNAL_SERVER, ExternalToolConfig
from toolsets.context import CallContext
from toolsets.external import ExternalToolset
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = ["external_toolset"]


async def _not_here(tool: ToolDef, args: Mapping[str, Any], ctx: CallContext) -> ToolResult:
    # Reached only if a policy were bypassed: the approval wrapper defers every external tool.
    return ToolResult.error(f"Tool {tool.name!r} is executed by an external worker, not here.")


def external_toolset(tools: Sequence[ExternalToolConfig]) -> ExternalToolset:
    """The configured external tools, under their own names, with server ``external``."""
    defs = [
        ToolDef(
            name=t.name,
            description=t.description,
            input_schema=t.input_schema,
            output_schema=t.output_schema,
            server=EXTERNAL_SERVER,
        )
        for t in tools
    ]
    return ExternalToolset(defs, _not_here, label=EXTERNAL_SERVER)
