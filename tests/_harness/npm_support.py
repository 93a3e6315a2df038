"""Published MCP servers from the npm registry, installed once per test run per package spec
(shared by the xdist workers of that run) from the user's npm cache when it holds the package,
else from the registry; a test using one is skipped only without npm."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

NPM = shutil.which("npm")
NODE = shutil.which("node") or "node"
INSTALL_TIMEOUT = 180


def _run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of this test run that every xdist worker of the run sees (the workers' common
    base temp folder), or the session's own base temp folder without xdist."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if "PYTEST_XDIST_WORKER" in os.environ else base


def npm_package(tmp_path_factory: pytest.TempPathFactory, spec: str) -> Path:
    """The folder of the package ``spec`` (``name`` or ``name@version``), installed by the first
    test of this run that asks for it (the others wait for that install, then share it)."""
    if NPM is None:
        pytest.skip(f"npm is not installed: {spec} needs Node.js")
    prefix = _run_folder(tmp_path_factory) / "npm" / re.sub(r"[^A-Za-z0-9.-]+", "_", spec)
    prefix.mkdir(parents=True, exist_ok=True)
    name = spec.rsplit("@", 1)[0] if spec.count("@") > spec.startswith("@") else spec
    with (prefix / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (prefix / ".installed").exists():
            _install(prefix, spec)
            (prefix / ".installed").touch()
    return prefix / "node_modules" / name


def _install(prefix: Path, spec: str) -> None:
    """``npm install spec`` into ``prefix``, preferring the npm cache to the registry."""
    command = [str(NPM), "install", "--prefix", str(prefix), "--prefer-offline"]
    command += ["--no-audit", "--no-fund", "--loglevel", "error", spec]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False
    )
    assert done.returncode == 0, f"npm install {spec} failed:\n{done.stderr}"


def npm_bin(package: Path, command: str) -> Path:
    """The script of ``package``'s executable ``command`` (its ``bin`` in package.json)."""
    bins = json.loads((package / "package.json").read_text(encoding="utf-8"))["bin"]
    script: str = bins[command] if isinstance(bins, dict) else bins
    return package / script
