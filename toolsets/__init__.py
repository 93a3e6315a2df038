"""Toolsets: the tool abstraction, its wrappers and the MCP upstream toolset."""

from toolsets.abstract import ToolsChangedHandler, Toolset
from toolsets.canonical import canonical_json, sha256_hex
from toolsets.combined import CombinedToolset
from toolsets.context import ANONYMOUS, CallContext, ClientInfo, Principal, ProgressCallback
from toolsets.errors import (
    ApprovalConflict,
    ConfigError,
    ConfigIssue,
    LockgateError,
    PolicyError,
    ToolCollisionError,
    ToolNotFoundError,
    UpstreamError,
)
from toolsets.external import ExternalToolset, ToolExecutor
from toolsets.filtered import FilteredToolset, ToolFilter
from toolsets.prefixed import SEPARATOR, PrefixedToolset
from toolsets.result import ToolResult
from toolsets.tooldef import TOOL_NAME_RE, ToolDef
from toolsets.wrapper import WrapperToolset

__all__ = [
    "ANONYMOUS",
    "SEPARATOR",
    "TOOL_NAME_RE",
    "ApprovalConflict",
    "CallContext",
    "ClientInfo",
    "CombinedToolset",
    "ConfigError",
    "ConfigIssue",
    "ExternalToolset",
    "FilteredToolset",
    "LockgateError",
    "PolicyError",
    "PrefixedToolset",
    "Principal",
    "ProgressCallback",
    "ToolCollisionError",
    "ToolDef",
    "ToolExecutor",
    "ToolFilter",
    "ToolNotFoundError",
    "ToolResult",
    "ToolsChangedHandler",
    "Toolset",
    "UpstreamError",
    "WrapperToolset",
    "canonical_json",
    "sha256_hex",
]
