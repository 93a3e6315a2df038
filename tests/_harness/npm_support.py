"""Published MCP servers from the npm registry, installed into a test's tmp folder with an npm
cache of its own there (a few seconds each); a test using one is skipped only without npm."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

NPM = shutil.which("npm")
NODE = shutil.which("node") or "node"
INSTALL_TIMEOUT = 180


def npm_package(tmp_path_factory: pytest.TempPathFactory, spec: str) -> Path:
    """The folder of the package ``spec`` (``name`` or ``name@version``), freshly installed."""
    if NPM is None:
        pytest.skip(f"npm is not installed: {spec} needs Node.js")
    prefix = tmp_path_factory.mktemp("npm")
    command = [NPM, "install", "--prefix", str(prefix), "--cache", str(prefix / ".npm-cache")]
    command += ["--no-audit", "--no-fund", "--loglevel", "error", spec]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False
    )
    assert done.returncode == 0, f"npm install {spec} failed:\n{done.stderr}"
    name = spec.rsplit("@", 1)[0] if spec.count("@") > spec.startswith("@") else spec
    return prefix / "node_modules" / name


def npm_bin(package: Path, command: str) -> Path:
    """The script of ``package``'s executable ``command`` (its ``bin`` in package.json)."""
    bins = json.loads((package / "package.json").read_text(encoding="utf-8"))["bin"]
    script: str = bins[command] if isinstance(bins, dict) else bins
    return package / script
