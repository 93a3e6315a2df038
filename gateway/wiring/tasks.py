"""The gateway's tasks as configured: the store, the pin check and result steps a finished
task passes (`gateway.tasks.review`, `gateway.tasks.results`), the settling of held calls'
tasks whose replica stopped (`gateway.tasks.held`), and the catalogue changes that release
quarantined results."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from gateway.approvals.refusals import Refusals
from gateway.approvals.service import ApprovalService
from gateway.config.model import GatewayConfig
from gateway.events.calls import BusObserver
from gateway.inspectors import build_inspection
from gateway.pins.guard import ToolPins
from gateway.runtime.catalogue import CatalogueWatch
from gateway.runtime.parts import EventParts
from gateway.sessions.book import SessionBook
from gateway.tasks.held import Calls, HeldTasks
from gateway.tasks.results import TaskResults
from gateway.tasks.review import ServedPins, TaskReview
from gateway.tasks.service import TaskService
from gateway.wiring.chain import result_steps
from gateway.wiring.stores import task_store
from toolsets.abstract import Toolset
from toolsets.events import CallObserver
from toolsets.upstream.server import MCPServerToolset

if TYPE_CHECKING:  # asyncpg is the postgres extra: never imported without it
    from gateway.postgres.backend import PostgresBackend

__all__ = ["task_service"]


def task_service(
    config: GatewayConfig,
    shared: PostgresBackend | None,
    *,
    upstreams: Mapping[str, MCPServerToolset],
    events: EventParts,
    approvals: ApprovalService,
    sessions: SessionBook,
    catalogue: tuple[Toolset, Toolset, CatalogueWatch],
    pins: ToolPins,
    calls: Calls,
) -> TaskService:
    """The gateway's `TaskService` (``catalogue``: the upstream tools unpinned, the served
    catalogue, and its watch)."""
    combined, served, watch = catalogue
    refuse = Refusals(approvals.record)
    inspection = build_inspection(config.inspectors)

    def steps(inner: Toolset, observer: CallObserver) -> Toolset:
        return result_steps(inner, observer, refuse, sessions=sessions, inspection=inspection)

    prefixes = {server.name: server.exposed_prefix for server in config.enabled_servers()}
    results = TaskResults(combined, steps, BusObserver(events.bus), prefixes)
    review = TaskReview(ServedPins(served, pins, upstreams), results)
    service = TaskService(task_store(config, shared), upstreams, events.recorder, review=review)
    HeldTasks(service, approvals, calls)  # settles held calls' tasks whose replica stopped
    watch.on_tools_changed(service.pins_changed)
    return service
