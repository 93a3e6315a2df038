"""`ToolPins`: durable tool pins, quarantine of changed definitions, and their acceptance.

The first definition seen of an upstream tool is trusted and pinned (trust on first use). Each
later catalogue (at start-up, after every re-list) is reviewed against the pins: a definition
that changed is quarantined, served with a warning, or accepted, per ``pins.on_change`` (name,
title, description, schemas, annotations) and ``pins.on_metadata_change`` (the rest). A
quarantined tool is neither listed nor callable until an approver accepts the new definition;
the change is announced as ``tool.pin_changed`` with its diff.

The store is shared by every process on the same config (a second ``lockgate`` command, other
replicas): `gateway.pins.follow.PinFollower` brings what they record into a serving process
(`changed_elsewhere`, then `adopt`). A quarantine recorded elsewhere holds the tool here too,
whatever definition this process's upstream shows, until an approver accepts it.

A server reached over one connection per principal may list a tool differently to different
principals: each definition is pinned on its own (`ToolPins._check_variant`), so neither flips
the other's pin.
"""

from __future__ import annotations

import builtins
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

import anyio

from gateway.events import tool_events as event_types
from gateway.events.model import Event
from gateway.pins.record import CONTENT_FIELDS, Action, PinRecord
from gateway.pins.store import PinStore
from toolsets.canonical import canonical_json
from toolsets.context import Principal
from toolsets.errors import ApprovalConflict, LockgateError, ToolNotFoundError
from toolsets.tooldef import ToolDef

__all__ = ["ToolPins"]

log = logging.getLogger("lockgate.pins")

VARIANT_MARK = "#"
"""Between a tool's name and its definition's pin in the pin of a per-principal definition."""
PIN_CHARS = 16
"""Hex characters of a definition's pin in such a name."""

Record = Callable[[Event], Awaitable[None]]
"""Puts an event on record (audit first) and publishes it; raises when it cannot."""


class ToolPins:
    """The pins of every upstream tool; a `toolsets.pinned.PinGuard`.

    Args:
        store: Where pins persist.
        servers: The upstream servers whose tools are pinned (local functions are not).
        pooled: Those of them reached over one connection per principal, whose catalogues
            may differ per principal (see `review`); None: any of them.
        on_change: What a change of what the model reads or policies decide on does.
        on_metadata_change: What a change of icons, execution or ``_meta`` alone does.
        approvers: Who may accept (ids or ``role:NAME``); empty: every approver.
        record: Puts ``tool.pin_*`` events on record.
    """

    def __init__(
        self,
        store: PinStore,
        *,
        servers: Iterable[str],
        pooled: Iterable[str] | None = None,
        on_change: Action = "quarantine",
        on_metadata_change: Action = "warn",
        approvers: Iterable[str] = (),
        record: Record,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self._servers = frozenset(servers)
        self._pooled = None if pooled is None else frozenset(pooled)
        self._on_change, self._on_metadata_change = on_change, on_metadata_change
        self._approvers = tuple(approvers)
        self._record, self._clock = record, clock
        self._pins: dict[tuple[str, str], PinRecord] | None = None
        self._names: dict[str, tuple[str, str]] = {}
        self._held: dict[str, ToolDef] = {}
        self._elsewhere: set[tuple[str, str]] = set()
        """Keys held on another process's word: this process has not seen their change."""
        self._lock = anyio.Lock()
        self._version = 0

    @property
    def version(self) -> int:
        """Changes when a definition is accepted here or pins change elsewhere (the next review
        may answer differently)."""
        return self._version

    async def review(
        self, tools: Mapping[str, ToolDef], *, variant: bool = False
    ) -> frozenset[str]:
        """Check ``tools`` against their pins; the exposed names held in quarantine.
        ``variant``: the catalogue of one principal's own connection (`_check_variant`)."""
        async with self._lock:
            pins = await self._loaded()
            held: dict[str, ToolDef] = {}
            for name, tool in tools.items():
                if tool.server not in self._servers:
                    continue
                if variant and (self._pooled is None or tool.server in self._pooled):
                    hold = await self._check_variant(pins, name, tool)
                else:
                    hold = await self._check(pins, name, tool)
                if hold:
                    held[name] = tool
            if not variant:
                self._held = held
            return frozenset(held)

    async def _check_variant(
        self, pins: dict[tuple[str, str], PinRecord], name: str, tool: ToolDef
    ) -> bool:
        """Whether ``tool``, as one principal's own connection listed it, is held. Pins are
        per definition: the tool's pin passes (never touched, so principals seeing different
        definitions do not flip it); another definition has a pin of its own, ``name#pin``,
        made the first time as a change of the tool's pin (``pins.on_change``: quarantined
        by default, accepted once for everyone who gets that definition)."""
        common = pins.get((tool.server, tool.upstream_name))
        if common is None:  # the first definition seen anywhere: the tool's pin
            return await self._check(pins, name, tool)
        if common.pin == tool.pin:
            return False
        own = f"{tool.upstream_name}{VARIANT_MARK}{tool.pin[:PIN_CHARS]}"
        if (tool.server, own) not in pins:  # new: held against the tool's accepted definition
            seed = replace(common, tool=own, changed_pin=None, changed=None, changed_at=None)
            pins[seed.key] = seed
        exposed = f"{name}{VARIANT_MARK}{tool.pin[:PIN_CHARS]}"
        return await self._check(pins, exposed, replace(tool, upstream_name=own))

    def quarantined(self, name: str) -> tuple[ToolDef, PinRecord] | None:
        """The definition of ``name`` held in quarantine by the last review, and its pin."""
        tool, key = self._held.get(name), self._names.get(name)
        found = self._pins.get(key) if key is not None and self._pins is not None else None
        if tool is None or found is None or not found.quarantined:
            return None
        return tool, found

    def waits_for_review(self, name: str) -> bool:
        """Whether the tool exposed as ``name`` is held: a changed definition waits for review."""
        return self.quarantined(name) is not None

    async def list(self, *, everything: bool = False) -> builtins.list[PinRecord]:
        """The quarantined pins (``everything``: every pin), by exposed name."""
        async with self._lock:
            pins = (await self._loaded()).values()
        return sorted((p for p in pins if everything or p.quarantined), key=lambda p: p.name)

    async def get(self, name: str) -> PinRecord:
        """The pin of the exposed tool ``name``.

        Raises:
            ToolNotFoundError: no upstream tool of that name has been seen.
        """
        async with self._lock:
            pins = await self._loaded()
        found = next((p for p in pins.values() if p.name == name), None)
        if found is None:
            raise ToolNotFoundError(name)
        return found

    def may_accept(self, who: Principal) -> bool:
        """Whether approver ``who`` may accept changed definitions."""
        return not self._approvers or any(
            a == who.id or (a.startswith("role:") and a.removeprefix("role:") in who.roles)
            for a in self._approvers
        )

    async def accept(self, name: str, *, pin: str, by: Principal) -> PinRecord:
        """Accept the quarantined definition of ``name`` whose pin is ``pin`` (the one the
        approver reviewed: a definition changed since is refused). On record before it counts.

        Raises:
            ToolNotFoundError: no such tool.
            ApprovalConflict: nothing is in quarantine for it, or not that definition.
            AuditUnavailable: the acceptance could not be put on record; nothing changed.
        """
        current = await self.get(name)
        async with self._lock:
            current = (await self._loaded())[current.key]
            if current.changed_pin != pin or current.changed is None:
                waiting = current.changed_pin or "nothing"
                raise ApprovalConflict(
                    f"{name}: the definition in quarantine is {waiting}, not {pin}"
                )
            accepted = current.accept(pin, current.changed, by=by.id, at=self._clock())
            await self._record(event_types.pin_accepted(current.to_json(diff=True), by.id))
            await self._save(accepted)
            self._elsewhere.discard(accepted.key)
            self._version += 1
        log.warning("%s: new definition %s accepted by %s", name, pin[:12], by.id)
        return accepted

    async def changed_elsewhere(self) -> frozenset[str]:
        """The servers whose pins in the store differ from those this process holds: another
        process (or replica) sharing the store changed them. Nothing changes here."""
        if self._pins is None:  # nothing read yet: the first review reads the store
            return frozenset()
        async with self._lock:  # not while a review saves
            stored = {p.key: p for p in await self.store.load()}
            mine = self._pins or {}
        return frozenset(k[0] for k in stored.keys() | mine.keys() if stored.get(k) != mine.get(k))

    async def shows(self, server: str, tool: str, pin: str) -> bool:
        """Whether the store has accepted ``pin`` for ``tool`` of ``server`` (an acceptance put
        on record may reach another process before its pin is saved)."""
        return any(p.key == (server, tool) and p.pin == pin for p in await self.store.load())

    async def adopt(self) -> None:
        """Take the pins as the store has them now (after `changed_elsewhere`): the next review
        checks against them; a quarantine recorded elsewhere holds here until accepted."""
        async with self._lock:
            stored, mine = await self.store.load(), self._pins or {}
            for record in stored:
                if not record.quarantined:
                    self._elsewhere.discard(record.key)
                elif mine.get(record.key) != record:
                    self._elsewhere.add(record.key)
            self._pins = {p.key: p for p in stored}
            self._names = {p.name: p.key for p in stored}
            self._version += 1

    async def _loaded(self) -> dict[tuple[str, str], PinRecord]:
        if self._pins is None:
            self._pins = {p.key: p for p in await self.store.load()}
            self._names = {p.name: p.key for p in self._pins.values()}
        return self._pins

    async def _check(
        self, pins: dict[tuple[str, str], PinRecord], name: str, tool: ToolDef
    ) -> bool:
        """Whether ``tool`` (exposed as ``name``) is held; records what changed."""
        key, definition, now = (tool.server, tool.upstream_name), _plain(tool), self._clock()
        self._names[name] = key
        found = pins.get(key)
        if found is None:  # trust on first use
            first = PinRecord(
                server=key[0], tool=key[1], name=name, pin=tool.pin,
                definition=definition, accepted_at=now, accepted_by="first-use",
            )  # fmt: skip
            await self._save(first)
            return False
        found = found if found.name == name else replace(found, name=name)
        if tool.pin == found.pin and found.quarantined and key in self._elsewhere:
            return True  # another process saw the change; this one may list a stale definition
        if tool.pin == found.pin:
            if found.quarantined or found is not pins[key]:  # back to the accepted definition
                await self._save(replace(found, changed_pin=None, changed=None, changed_at=None))
            return False
        if tool.pin == found.changed_pin:
            self._elsewhere.discard(key)  # seen here too: a revert seen here lifts it
            return True
        change = found.hold(tool.pin, definition, at=now)
        action = self._action(change.fields())
        if action == "quarantine":  # saved first: others follow the event by reading the store
            await self._save(change)
            await self._announce(change, action)
            return True
        await self._announce(change, action)
        await self._save(found.accept(tool.pin, definition, by="pins.on_change", at=now))
        return False

    def _action(self, fields: builtins.list[str]) -> Action:
        return self._on_change if CONTENT_FIELDS.intersection(fields) else self._on_metadata_change

    async def _announce(self, change: PinRecord, action: Action) -> None:
        fields = ", ".join(change.fields())
        level = logging.INFO if action == "accept" else logging.WARNING
        verb = {"quarantine": "quarantined", "warn": "served anyway", "accept": "accepted"}
        log.log(level, "%s changed upstream (%s): %s", change.name, fields, verb[action])
        try:
            await self._record(event_types.pin_changed(change.to_json(diff=True), action))
        except LockgateError as exc:  # the change itself is held back; the event is lost
            log.error("tool.pin_changed for %s not on record: %s", change.name, exc)

    async def _save(self, record: PinRecord) -> None:
        assert self._pins is not None
        self._pins[record.key] = record
        self._names[record.name] = record.key
        try:
            await self.store.save(record)
        except Exception as exc:  # kept in memory; the next start-up reviews again
            log.error("pin of %s not saved: %r", record.name, exc)


def _plain(tool: ToolDef) -> dict[str, Any]:
    """The definition as plain JSON (lists, not tuples), as it reads back from a store."""
    plain: dict[str, Any] = json.loads(canonical_json(tool.definition()))
    return plain
