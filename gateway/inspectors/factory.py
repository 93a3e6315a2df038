"""`build_inspection`: the ``inspectors:`` section of the config as an `Inspection`."""

from __future__ import annotations

from collections.abc import Mapping

from gateway.config.inspectors import InspectorConfig
from gateway.inspectors.base import ContentInspector
from gateway.inspectors.builtin import BuiltinInspector
from gateway.inspectors.cache import ScanCache
from gateway.inspectors.external import HttpInspector
from gateway.inspectors.inspection import ConfiguredInspector, Inspection
from toolsets.findings import Direction

__all__ = ["build_inspection"]

_DIRECTIONS: dict[str, frozenset[Direction]] = {
    "arguments": frozenset({"arguments"}),
    "results": frozenset({"results"}),
    "both": frozenset({"arguments", "results"}),
}


def _scanner(config: InspectorConfig) -> ContentInspector:
    if config.type == "http":
        assert config.url is not None  # the config model requires it
        return HttpInspector(config.url, timeout=config.timeout)
    if config.type == "presidio":
        from gateway.inspectors.presidio import PresidioInspector  # the optional extra

        return PresidioInspector(config.detectors, threshold=config.score_threshold)
    return BuiltinInspector(config.detectors)


def build_inspection(inspectors: Mapping[str, InspectorConfig]) -> Inspection | None:
    """The configured inspectors, in file order; None when there are none."""
    if not inspectors:
        return None
    return Inspection(
        [
            ConfiguredInspector(
                name=name,
                scanner=_scanner(config),
                directions=_DIRECTIONS[config.direction],
                tools=tuple(config.tools),
                actions=dict(config.actions),
                labels=dict(config.labels),
                timeout=config.timeout,
                fail_closed=config.on_error == "fail_closed",
                cache=ScanCache(config.cache_size),
                shadow=config.mode == "shadow",
            )
            for name, config in inspectors.items()
        ]
    )
