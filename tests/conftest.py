"""Shared test configuration: every async test runs on anyio's asyncio backend."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import mounted_tmpfs


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: Any) -> None:
    """Mark coroutine tests for anyio before parametrization is generated."""
    if name.startswith("test") and inspect.iscoroutinefunction(obj):
        pytest.mark.anyio(obj)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs under ``tmp_path`` (skipped where mounting is not allowed)."""
    with mounted_tmpfs(tmp_path) as disk:
        yield disk
