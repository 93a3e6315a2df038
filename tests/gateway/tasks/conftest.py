"""The tasks suites' shared fixture: server-everything (its task tool), installed from the npm
registry once per test run (``npm_support``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from npm_support import npm_bin, npm_package

EVERYTHING = "@modelcontextprotocol/server-everything"


@pytest.fixture(scope="module")
def everything(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """server-everything's stdio entry point, installed from the npm registry."""
    return npm_bin(npm_package(tmp_path_factory, EVERYTHING), "mcp-server-everything")
