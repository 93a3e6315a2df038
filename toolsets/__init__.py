"""Toolsets: the tool abstraction, its wrappers and the MCP upstream toolset."""

from toolsets.abstract import ToolsChangedHandler, Toolset
from toolsets.approval_required import ApprovalGate, ApprovalRequiredToolset, Approved, Granted
from toolsets.canonical import canonical_json, sha256_hex
from toolsets.combined import CombinedToolset
from toolsets.context import ANONYMOUS, CallContext, ClientInfo, Principal, ProgressCallback
from toolsets.decision import ApprovalOptions, Decision, Effect
from toolsets.errors import (
    ApprovalConflict,
    ArgumentsInvalid,
    ConfigError,
    ConfigIssue,
    LockgateError,
    PolicyError,
    ToolCollisionError,
    ToolNotFoundError,
    UpstreamError,
    UpstreamRequestError,
)
from toolsets.events import CallObserver, EventsToolset
from toolsets.external import ExternalToolset, ToolExecutor
from toolsets.filtered import FilteredToolset, ToolFilter
from toolsets.policy import Decider, PolicyToolset, Refuser
from toolsets.prefixed import SEPARATOR, PrefixedToolset
from toolsets.rate_limited import LimitObserver, RateLimitedToolset
from toolsets.rates import Rate, RateCounter, RateLimit, RateVerdict
from toolsets.result import ToolResult
from toolsets.tooldef import TOOL_NAME_RE, ToolDef
from toolsets.validated import SchemaValidators, ValidatingToolset
from toolsets.wrapper import WrapperToolset

__all__ = [
    "ANONYMOUS",
    "SEPARATOR",
    "TOOL_NAME_RE",
    "ApprovalConflict",
    "ApprovalGate",
    "ApprovalOptions",
    "ApprovalRequiredToolset",
    "Approved",
    "ArgumentsInvalid",
    "CallContext",
    "CallObserver",
    "ClientInfo",
    "CombinedToolset",
    "ConfigError",
    "ConfigIssue",
    "Decider",
    "Decision",
    "Effect",
    "EventsToolset",
    "ExternalToolset",
    "FilteredToolset",
    "Granted",
    "LimitObserver",
    "LockgateError",
    "PolicyError",
    "PolicyToolset",
    "PrefixedToolset",
    "Principal",
    "ProgressCallback",
    "Rate",
    "RateCounter",
    "RateLimit",
    "RateLimitedToolset",
    "RateVerdict",
    "Refuser",
    "SchemaValidators",
    "ToolCollisionError",
    "ToolDef",
    "ToolExecutor",
    "ToolFilter",
    "ToolNotFoundError",
    "ToolResult",
    "ToolsChangedHandler",
    "Toolset",
    "UpstreamError",
    "UpstreamRequestError",
    "ValidatingToolset",
    "WrapperToolset",
    "canonical_json",
    "sha256_hex",
]
