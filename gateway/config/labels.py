"""``servers[].labels``: a server's data-flow labels, and whether its annotations derive any."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated

from pydantic import AfterValidator, Field

from gateway.config._strict import Strict
from policies.session_labels import label_problem
from policies.tool_labels import ServerLabels

__all__ = ["ServerLabelsConfig", "server_labels"]


def _label(value: str) -> str:
    problem = label_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


Label = Annotated[str, AfterValidator(_label), Field(description="A data-flow label name.")]


class ServerLabelsConfig(Strict):
    """The labels of every tool of one server (policy rules with ``labels`` add more)."""

    annotations: bool = Field(
        True,
        description=(
            "Derive labels from the server's MCP tool annotations (openWorldHint: true -> "
            "source 'untrusted'; and, unless readOnlyHint: true, sink 'egress'). false: the "
            "server's hints are not trusted and derive none."
        ),
    )
    sources: list[Label] = Field(
        default_factory=list,
        description="Source labels of every tool: added to the session when a call succeeds.",
    )
    sinks: list[Label] = Field(
        default_factory=list, description="Sink labels of every tool (e.g. egress)."
    )

    def value(self) -> ServerLabels:
        return ServerLabels(
            annotations=self.annotations,
            sources=frozenset(self.sources),
            sinks=frozenset(self.sinks),
        )


def server_labels(
    servers: Iterable[tuple[str, ServerLabelsConfig | None]],
) -> Mapping[str, ServerLabels]:
    """``(server name, its labels config)`` pairs as the policy decider reads them."""
    return {name: config.value() for name, config in servers if config is not None}
