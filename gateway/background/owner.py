"""`TaskOwner`: an object that runs background tasks for the life of its ``async with`` block."""

from __future__ import annotations

from types import TracebackType
from typing import Self

import anyio
from anyio.abc import TaskGroup

__all__ = ["TaskOwner"]


class TaskOwner:
    """Owns a task group while entered (``_tg``; None outside the block): its tasks start with
    ``self._tg.start_soon`` and are cancelled when the block ends, after `_stopping`."""

    _tg: TaskGroup | None = None

    def _stopping(self) -> None:
        """Called as the block ends, before the tasks are cancelled."""

    async def __aenter__(self) -> Self:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        tg, self._tg = self._tg, None
        self._stopping()
        if tg is not None:
            tg.cancel_scope.cancel()
            await tg.__aexit__(None, None, None)
        return None
