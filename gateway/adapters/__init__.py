"""Agent adapters: the gateway's tools in agent frameworks, in this process or over HTTP.

The framework adapters are submodules, imported by name because their frameworks are optional
extras (``import gateway`` works without them):

- `gateway.adapters.pydantic_ai` (``pip install 'lockgate[pydantic-ai]'``): `GatewayToolset`,
  held calls as pydantic-ai deferred tool calls.
- `gateway.adapters.openai` (``pip install 'lockgate[openai]'``): tool schemas for Chat
  Completions and the Responses API, and running the model's tool calls.
- `gateway.adapters.langchain` (``pip install 'lockgate[langchain]'``): `GatewayToolkit`,
  LangChain tools whose held calls pause a LangGraph graph with ``interrupt()``; and
  `gateway.adapters.human_in_the_loop`, the ``human_in_the_loop`` decorators; and
  `gateway.adapters.middleware`, `LockgateMiddleware` for LangChain 1.x ``create_agent``: one
  review of a model turn's held calls, in ``HumanInTheLoopMiddleware``'s shape.

This package exports what they all speak, which needs no extra: the `GatewayClient` protocol, its
backends `InProcessGateway` (a running gateway in this process) and `RemoteGateway` (MCP and
REST over HTTP), and the host's side of a held call.
"""

from gateway.adapters._client import (
    CannotDecide,
    DecisionRejected,
    GatewayClient,
    HeldCall,
    HostDecision,
    InProcessGateway,
)
from gateway.adapters._remote import RemoteGateway

__all__ = [
    "CannotDecide",
    "DecisionRejected",
    "GatewayClient",
    "HeldCall",
    "HostDecision",
    "InProcessGateway",
    "RemoteGateway",
]
