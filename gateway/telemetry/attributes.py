"""The span attribute keys lockgate sets: the OpenTelemetry MCP and GenAI semantic conventions,
and lockgate's own (``lockgate.*``). docs/telemetry.md lists them; values never include a call's
arguments or results."""

from __future__ import annotations

from typing import Final

__all__ = [
    "APPROVAL_ID",
    "APPROVAL_STATE",
    "APPROVER",
    "DECISION",
    "DECISION_EFFECT",
    "ERROR_TYPE",
    "GRANT",
    "JSONRPC_REQUEST_ID",
    "MCP_METHOD",
    "MCP_PROTOCOL_VERSION",
    "MCP_SESSION_ID",
    "NETWORK_TRANSPORT",
    "OPERATION",
    "PARENT_CALL",
    "PRINCIPAL",
    "PROMPT_NAME",
    "RESOURCE_URI",
    "RULE",
    "SERVER",
    "STEP",
    "TOOL_NAME",
]

MCP_METHOD: Final = "mcp.method.name"
MCP_SESSION_ID: Final = "mcp.session.id"
MCP_PROTOCOL_VERSION: Final = "mcp.protocol.version"
JSONRPC_REQUEST_ID: Final = "jsonrpc.request.id"
NETWORK_TRANSPORT: Final = "network.transport"
TOOL_NAME: Final = "gen_ai.tool.name"
PROMPT_NAME: Final = "gen_ai.prompt.name"
RESOURCE_URI: Final = "mcp.resource.uri"
OPERATION: Final = "gen_ai.operation.name"
ERROR_TYPE: Final = "error.type"

DECISION_EFFECT: Final = "lockgate.decision.effect"
RULE: Final = "lockgate.rule"
GRANT: Final = "lockgate.grant"
APPROVAL_ID: Final = "lockgate.approval.id"
APPROVAL_STATE: Final = "lockgate.approval.state"
APPROVER: Final = "lockgate.approver"
DECISION: Final = "lockgate.decision"
PRINCIPAL: Final = "lockgate.principal"
SERVER: Final = "lockgate.server"
PARENT_CALL: Final = "lockgate.parent_call_id"
STEP: Final = "lockgate.step"
