"""`PolicyHolder`: the current engine, swapped atomically on reload; can watch its files."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from pathlib import Path

import anyio

from policies.engine import PolicyEngine
from toolsets.errors import ConfigIssue, PolicyError

__all__ = ["PolicyHolder"]

logger = logging.getLogger("lockgate.policy")


def _fingerprint(paths: Sequence[Path]) -> tuple[str | None, ...]:
    """Content hash per file (None when unreadable): catches edits within one mtime tick too."""
    prints: list[str | None] = []
    for path in paths:
        try:
            prints.append(hashlib.sha256(path.read_bytes()).hexdigest())
        except OSError:
            prints.append(None)
    return tuple(prints)


class PolicyHolder:
    """Holds the current `PolicyEngine`; a failed reload keeps the last good one.

    Readers take ``holder.current`` once per listing or call; a reload replaces it in one
    assignment, so a decision never mixes two policy versions.
    """

    def __init__(self, engine: PolicyEngine, paths: Sequence[str | Path] | None = None) -> None:
        """Hold ``engine``; ``paths`` (default: the engine's files) are what `reload` reads."""
        self._engine = engine
        self._paths = tuple(Path(p) for p in (engine.files if paths is None else paths))
        self._fingerprint = _fingerprint(self._paths)
        self._last_issues: list[ConfigIssue] = []
        self._reloaded: anyio.Event | None = None

    @classmethod
    def load(cls, paths: Sequence[str | Path], *, root: Path | None = None) -> PolicyHolder:
        """Load ``paths`` into a new holder; ``root``: the config file's directory (rules are
        shown where they are written relative to it, `PolicyEngine.where`).

        Raises:
            PolicyError: When the initial policy is invalid (there is no last good one yet).
        """
        fingerprint = _fingerprint([Path(p) for p in paths])
        holder = cls(PolicyEngine.load(paths, root=root), paths)
        holder._fingerprint = fingerprint
        return holder

    @property
    def current(self) -> PolicyEngine:
        """The engine to evaluate against."""
        return self._engine

    @property
    def paths(self) -> tuple[Path, ...]:
        """The policy files, in layer order."""
        return self._paths

    def reload(self) -> list[ConfigIssue]:
        """Reload the files; on any error keep the current engine.

        Returns:
            The issues found (empty on success); each is also logged.
        """
        self._fingerprint = _fingerprint(self._paths)
        try:
            root = self._engine.root
            engine = PolicyEngine.load(self._paths, root=root) if self._paths else self._engine
        except PolicyError as exc:
            issues = list(exc.issues)
            for issue in issues:
                logger.error("policy reload failed, keeping version %s: %s", self.version, issue)
        else:
            issues = []
            if engine.version != self._engine.version:
                logger.info("policy reloaded: version %s -> %s", self.version, engine.version)
                self._engine = engine
        self._notify(issues)
        return issues

    @property
    def version(self) -> str:
        """Version of the current engine."""
        return self._engine.version

    def _notify(self, issues: list[ConfigIssue]) -> None:
        self._last_issues = issues
        if self._reloaded is not None:
            self._reloaded.set()
            self._reloaded = None

    async def wait_reload(self) -> list[ConfigIssue]:
        """Wait for the next reload attempt (by `watch` or `reload`) and return its issues."""
        if self._reloaded is None:
            self._reloaded = anyio.Event()
        await self._reloaded.wait()
        return self._last_issues

    async def watch(self, interval: float = 1.0) -> None:
        """Poll the files every ``interval`` seconds and reload when their content changes.

        Runs until cancelled. Errors are logged and the last good policy stays in force.
        """
        while True:
            await anyio.sleep(interval)
            if _fingerprint(self._paths) != self._fingerprint:
                self.reload()
