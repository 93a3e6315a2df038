"""`ScanCache`: an inspector's verdicts by content hash, bounded, least recently used evicted."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Final

from gateway.inspectors.base import Scan
from toolsets.findings import Direction

__all__ = ["ScanCache"]

_SHORT: Final = 64
"""Texts up to this long are their own key (hashing them costs more than it saves)."""


class ScanCache:
    """Up to ``size`` scans of one inspector, keyed by direction and the text's SHA-256."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._scans: OrderedDict[tuple[str, str], Scan] = OrderedDict()

    @staticmethod
    def key(direction: Direction, text: str) -> tuple[str, str]:
        """The cache key of ``text`` scanned on ``direction`` (never the text when long)."""
        if len(text) <= _SHORT:
            return direction, text
        return direction, hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def get(self, key: tuple[str, str]) -> Scan | None:
        scan = self._scans.get(key)
        if scan is not None:
            self._scans.move_to_end(key)
        return scan

    def put(self, key: tuple[str, str], scan: Scan) -> None:
        if self.size == 0:
            return
        self._scans[key] = scan
        self._scans.move_to_end(key)
        while len(self._scans) > self.size:
            self._scans.popitem(last=False)

    def __len__(self) -> int:
        return len(self._scans)
