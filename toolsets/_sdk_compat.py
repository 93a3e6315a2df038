"""The MCP SDK's private names that lockgate relies on, in one place, checked at start-up.

The ``mcp`` package keeps a few things lockgate needs behind private names. Each is imported
here, once, and re-exported under a public name; the private attributes of SDK objects are read
only by the helpers here (`session_owner`, `open_session`, `session_connection`). ruff's
banned-API rule (TID251) keeps the private modules and names out of every other file. lockgate
uses no private name of ``mcp_types`` or uvicorn.

`check_sdk` (run at start-up) verifies that the installed SDK has every one of them, of the
kind lockgate expects, and names the first one missing together with the supported mcp
versions. So that it gets to say so, this module imports even on an SDK that lacks a name:
the re-export then raises the same `LockgateError` when used.
"""

from __future__ import annotations

import contextlib
import dis
import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import import_module, metadata
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, NoReturn, get_origin

from mcp.client.session import ClientSession
from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
from mcp.server.connection import Connection
from mcp.server.session import ServerSession
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types import CLIENT_CAPABILITIES_META_KEY

from toolsets.errors import LockgateError

with contextlib.suppress(ImportError):  # an SDK outside the supported range: see `check_sdk`
    # The (read, write) stream pair a client transport yields; no public module exports it.
    from mcp.client._transport import TransportStreams

    # The stdio pipe starts, resolves and stops a server process exactly as `stdio_client` does
    # (own process group or job object; close stdin, wait, then terminate the whole tree).
    from mcp.client.stdio import (
        _create_platform_compatible_process as create_platform_compatible_process,
    )
    from mcp.client.stdio import _get_executable_command as get_executable_command
    from mcp.client.stdio import _stop_server_process as stop_server_process
    from mcp.client.stdio import _terminate_process_tree as terminate_process_tree

    # An httpx2 client with the SDK's MCP timeouts, for upstream and adapter connections.
    from mcp.shared._httpx_utils import create_mcp_http_client

__all__ = [
    "PRIVATE_NAMES",
    "SUPPORTED_MCP",
    "PrivateName",
    "TransportStreams",
    "check_sdk",
    "create_mcp_http_client",
    "create_platform_compatible_process",
    "get_executable_command",
    "open_session",
    "session_connection",
    "session_owner",
    "stop_server_process",
    "terminate_process_tree",
    "unchecked_request",
]

SUPPORTED_MCP = ">=2.3,<2.4"
"""The mcp (and mcp-types) versions whose private names match this module; pyproject pins it."""

Kind = Literal["type", "function", "async function", "attribute"]
KINDS: tuple[Kind, ...] = ("type", "async function", "function")
"""The kinds a re-exported name can have, in the order `_problem` tells them apart."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PrivateName:
    """One private name of the SDK that lockgate relies on.

    Attributes:
        module: The module that defines it (or defines ``owner``).
        name: The name, as the SDK spells it.
        kind: ``type``, ``function``, ``async function``, or ``attribute`` (of ``owner``'s
            instances, set by its ``__init__``).
        public: The name this module re-exports it under (names of kind ``attribute`` are
            read by the helper functions instead).
        owner: The class whose instances carry an ``attribute``.
        keywords: The keyword arguments lockgate passes to a function.
    """

    module: str
    name: str
    kind: Kind
    public: str = ""
    owner: str = ""
    keywords: tuple[str, ...] = ()

    @property
    def path(self) -> str:
        """The dotted path, e.g. ``mcp.client.stdio._stop_server_process``."""
        return ".".join(part for part in (self.module, self.owner, self.name) if part)


PRIVATE_NAMES = (
    PrivateName(
        module="mcp.client._transport",
        name="TransportStreams",
        kind="type",
        public="TransportStreams",
    ),
    PrivateName(
        module="mcp.client.stdio",
        name="_create_platform_compatible_process",
        kind="async function",
        public="create_platform_compatible_process",
        keywords=("command", "args", "env", "cwd"),
    ),
    PrivateName(
        module="mcp.client.stdio",
        name="_get_executable_command",
        kind="async function",
        public="get_executable_command",
    ),
    PrivateName(
        module="mcp.client.stdio",
        name="_stop_server_process",
        kind="async function",
        public="stop_server_process",
    ),
    PrivateName(
        module="mcp.client.stdio",
        name="_terminate_process_tree",
        kind="async function",
        public="terminate_process_tree",
    ),
    PrivateName(
        module="mcp.shared._httpx_utils",
        name="create_mcp_http_client",
        kind="function",
        public="create_mcp_http_client",
        keywords=("headers", "timeout"),
    ),
    PrivateName(
        module="mcp.server.streamable_http_manager",
        owner="StreamableHTTPSessionManager",
        name="_session_owners",
        kind="attribute",
    ),
    PrivateName(
        module="mcp.server.streamable_http_manager",
        owner="StreamableHTTPSessionManager",
        name="_server_instances",
        kind="attribute",
    ),
    PrivateName(
        module="mcp.server.session",
        owner="ServerSession",
        name="_connection",
        kind="attribute",
    ),
    PrivateName(
        module="mcp.client.session",
        owner="ClientSession",
        name="_dispatcher",
        kind="attribute",
    ),
    PrivateName(
        module="mcp.client.session",
        owner="ClientSession",
        name="_stamp",
        kind="attribute",
    ),
)
"""Every private name this module relies on, in the order `check_sdk` checks them."""


def session_owner(
    manager: StreamableHTTPSessionManager, session_id: str
) -> AuthorizationContext | None:
    """Who opened the streamable-HTTP session ``session_id``: the credential the SDK binds it to.

    None for an unknown session, or one opened without authentication.
    """
    # The SDK checks the owner on every request but offers no way to read it.
    return manager._session_owners.get(session_id)


def open_session(
    manager: StreamableHTTPSessionManager, session_id: str
) -> StreamableHTTPServerTransport | None:
    """The transport of the manager's open session ``session_id``, or None."""
    # The SDK keeps its open sessions in a private dict; there is no lookup by id.
    return manager._server_instances.get(session_id)


def session_connection(session: ServerSession) -> Connection | None:
    """The `Connection` behind a low-level handler's ``ServerRequestContext.session``, or None."""
    # Handlers are given the session, whose connection (standalone channel, per-client state)
    # the SDK does not expose.
    connection = getattr(session, "_connection", None)
    return connection if isinstance(connection, Connection) else None


async def unchecked_request(
    session: ClientSession,
    method: str,
    params: Mapping[str, Any],
    *,
    extension: str | None = None,
    timeout: float | None = None,
) -> dict[str, Any]:
    """Send ``method`` with the session's protocol envelope (2026-07-28 ``_meta`` and HTTP
    headers) and return its raw ``result``; on a 2026-07-28 session the request's client
    capabilities also declare ``extension``.

    For a task-augmented ``tools/call``: ``session.send_request`` checks every ``tools/call``
    result against ``CallToolResult`` and refuses the ``CreateTaskResult`` that answers it.

    Raises:
        MCPError: the server answered with an error (or the request timed out).
    """
    data: dict[str, Any] = {"method": method, "params": dict(params)}
    opts: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
    session._stamp(data, opts)  # type: ignore[arg-type]
    meta = data["params"].get("_meta") or {}
    declared = meta.get(CLIENT_CAPABILITIES_META_KEY)
    if extension is not None and isinstance(declared, dict):
        extensions = {**(declared.get("extensions") or {}), extension: {}}
        meta[CLIENT_CAPABILITIES_META_KEY] = {**declared, "extensions": extensions}
    send = session._dispatcher.send_raw_request
    return dict(await send(method, data["params"], opts))  # type: ignore[arg-type]


def check_sdk() -> None:
    """Verify that the installed MCP SDK has every private name lockgate relies on.

    Raises:
        LockgateError: one is missing or of another kind; the message names it, the installed
            mcp version and the supported versions.
    """
    modules: dict[str, ModuleType | None] = {}
    for private in PRIVATE_NAMES:
        try:
            modules[private.module] = import_module(private.module)
        except ImportError:
            modules[private.module] = None
    _check(PRIVATE_NAMES, modules)


def _check(privates: Iterable[PrivateName], modules: Mapping[str, ModuleType | None]) -> None:
    """Raise for the first of ``privates`` that its module (None: not importable) lacks."""
    for private in privates:
        problem = _problem(private, modules[private.module])
        if problem is not None:
            raise LockgateError(
                f"lockgate needs mcp's private name {private.path}{problem}; "
                f"supported: mcp {SUPPORTED_MCP} "
                f"(pip install 'mcp{SUPPORTED_MCP}' 'mcp-types{SUPPORTED_MCP}')"
            )


def _problem(private: PrivateName, module: ModuleType | None) -> str | None:
    """What ``module`` (None: it does not exist) lacks of ``private``, as the message says it."""
    found = getattr(module, private.owner or private.name, None)
    if found is None:
        return f", which {_installed_mcp()} does not have"
    if private.kind == "attribute":
        if private.name not in _set_by_init(found):
            return f", which {private.owner}.__init__ of {_installed_mcp()} does not set"
        return None
    if not _is_kind(found, private.kind):
        kind = next((k for k in KINDS if _is_kind(found, k)), None)
        actual = _a(kind) if kind else f"a {type(found).__name__!r} object"
        return f" as {_a(private.kind)}, which in {_installed_mcp()} is {actual}"
    accepted = inspect.signature(found).parameters if private.keywords else {}
    missing = [keyword for keyword in private.keywords if keyword not in accepted]
    if missing:
        return f" with the parameter {missing[0]!r}, which {_installed_mcp()} does not take"
    return None


def _is_kind(value: Any, kind: Kind) -> bool:
    if kind == "type":
        return isinstance(value, type) or get_origin(value) is not None
    if kind == "async function":
        return inspect.iscoroutinefunction(value)
    return (
        kind == "function" and inspect.isroutine(value) and not inspect.iscoroutinefunction(value)
    )


def _set_by_init(cls: Any) -> set[str]:
    """The attributes ``cls.__init__`` assigns on ``self`` (read from its bytecode)."""
    init = getattr(cls, "__init__", None)
    if not inspect.isfunction(init):
        return set()
    return {op.argval for op in dis.get_instructions(init) if op.opname == "STORE_ATTR"}


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _installed_mcp() -> str:
    try:
        return f"mcp {metadata.version('mcp')}"
    except metadata.PackageNotFoundError:
        return "the installed mcp"


def _unsupported(*args: Any, **kwargs: Any) -> NoReturn:
    check_sdk()
    raise LockgateError(f"the installed MCP SDK is not supported; use mcp {SUPPORTED_MCP}")


if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        # A re-export the import above could not bind: it raises `check_sdk`'s error when used.
        if any(private.public == name for private in PRIVATE_NAMES):
            return _unsupported
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
