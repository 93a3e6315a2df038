"""Shared test configuration: every async test runs on anyio's asyncio backend."""

from __future__ import annotations

import inspect
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zygote
from support import mounted_tmpfs

ZYGOTE = pytest.StashKey[subprocess.Popen[bytes] | None]()


def pytest_configure(config: pytest.Config) -> None:
    """Start the zygote the test upstreams fork from (tests/_harness/zygote.py) in a process
    that runs tests: an xdist worker, or a run without workers."""
    runs_tests = hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", 0)
    if runs_tests and not config.option.collectonly and not config.option.help:
        config.stash[ZYGOTE] = zygote.start()


def pytest_unconfigure(config: pytest.Config) -> None:
    if (process := config.stash.get(ZYGOTE, None)) is not None:
        zygote.stop(process)


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
