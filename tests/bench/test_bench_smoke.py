"""The benchmark runs end to end in a tiny configuration and writes its table and JSON, into an
untracked folder unless asked to update the committed results (never by a quick run)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from paths import REPO

from bench.__main__ import COMMITTED, OUT, build_parser, results_dir
from bench.profiling import read_stacks, summary

TRACKED = ("RESULTS.md", "results.json")


def _tracked() -> dict[str, bytes]:
    return {name: (COMMITTED / name).read_bytes() for name in TRACKED}


def test_quick_bench_measures_direct_and_gateway_and_writes_results(tmp_path: Path) -> None:
    before = _tracked()
    command = [sys.executable, "-m", "bench", "--quick", "--out", str(tmp_path)]
    command += ["--transports", "http", "stdio", "--eras", "legacy", "modern"]
    command += ["--only", "http/legacy/echo seq*,stdio/modern/echo seq*"]
    done = subprocess.run(
        command, check=False, cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert _tracked() == before

    rows = json.loads((tmp_path / "results.json").read_text())["rows"]
    keys = {row["key"] for row in rows}
    assert keys == {
        "http/legacy/echo sequential",
        "http/legacy/CPU per echo call",
        "stdio/modern/echo sequential",
        "stdio/modern/CPU per echo call",
    }
    sequential = next(r for r in rows if r["key"] == "http/legacy/echo sequential")
    assert len(sequential["direct"]) == len(sequential["gateway"]) == 2
    assert sequential["ratio"] > 0
    target = sequential["target"]
    assert (target["op"], target["bound"], target["measure"]) == ("<=", 500, "added_us")
    pairs = zip(sequential["direct"], sequential["gateway"], strict=True)
    added = [g["p50"] - d["p50"] for d, g in pairs]
    assert target["value"] == pytest.approx(sum(added) / 2)  # the median of two rounds
    for row in rows:
        if row["metric"] == "cpu":
            assert row["cpu"]["gateway_us"] >= 0, row
            assert row["cpu"]["gateway_upstream_us"] >= 0, row

    markdown = (tmp_path / "RESULTS.md").read_text()
    assert "| http | legacy | echo sequential |" in markdown
    assert "mcp 2." in markdown


def test_a_run_writes_to_an_untracked_folder_unless_asked_to_update_the_committed_results() -> None:
    parser = build_parser()
    assert results_dir(parser, parser.parse_args([])) == OUT
    assert results_dir(parser, parser.parse_args(["--quick"])) == OUT
    assert results_dir(parser, parser.parse_args(["--out", "/tmp/b"])) == Path("/tmp/b")
    assert results_dir(parser, parser.parse_args(["--update-results"])) == COMMITTED
    for name in TRACKED:
        ignored = subprocess.run(
            ["git", "check-ignore", "-q", str(OUT / name)], check=False, cwd=REPO
        )
        assert ignored.returncode == 0, f"bench/out/{name} is not ignored by git"
    listed = subprocess.run(
        ["git", "ls-files", *(f"bench/{name}" for name in TRACKED)],
        check=True,
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert listed.stdout.split() == [f"bench/{name}" for name in TRACKED]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--quick"], "a --quick run never replaces the committed results"),
        (["--out", "elsewhere"], "leave out --out"),
    ],
)
def test_update_results_is_refused_with_quick_or_out_before_anything_runs(
    extra: list[str], message: str
) -> None:
    before = _tracked()
    command = [sys.executable, "-m", "bench", "--update-results", *extra]
    done = subprocess.run(
        command, check=False, cwd=REPO, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 2
    assert message in done.stderr
    assert _tracked() == before


def test_profile_summary_ranks_packages_and_leaves_out_waits(tmp_path: Path) -> None:
    stacks = tmp_path / "stacks.txt"
    stacks.write_text(
        "main (gateway/cli/main.py);call_tool (gateway/mcp/server.py);dumps (json/__init__.py) 30\n"
        "main (gateway/cli/main.py);select (selectors.py);EpollSelector.select (selectors.py) 50\n"
        "main (gateway/cli/main.py);send (mcp/client/session.py) 10\n"
    )
    parsed = read_stacks(stacks)
    assert sum(parsed.values()) == 40
    text = summary(parsed)
    by_package = text.split("Own time by frame")[0]
    assert by_package.index("json") < by_package.index("mcp")
    assert "75.0 30 json" in " ".join(by_package.split())
    assert isinstance(parsed, Counter)


def test_the_replicas_bench_runs_every_target_on_postgres_and_reports_json() -> None:
    command = [sys.executable, "-m", "bench.replicas", "--rounds", "1", "--calls", "40"]
    command += ["--sessions", "4", "--decisions", "2", "--json"]
    done = subprocess.run(
        command, check=False, cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert set(figures["calls_per_s"]) == {"direct", "embedded", "replicas", "split"}
    assert all(rate > 0 for rate in figures["calls_per_s"].values())
    for ratio in ("replicas_vs_embedded", "split_vs_embedded", "replicas_vs_split"):
        assert figures[ratio] > 0
    assert 0 < figures["decision_to_result_ms"]["p50"] < 5000


def test_the_credentials_bench_measures_shared_secret_and_oauth_connections() -> None:
    command = [sys.executable, "bench/credentials.py", "--rounds", "1", "--calls", "20"]
    command += ["--principals", "3"]
    done = subprocess.run(
        command, check=False, cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    rows = {line.split(" | ")[0].lstrip("| "): line for line in done.stdout.splitlines()}
    sequential = rows["one caller, sequential, median µs"]
    assert "secret " in sequential
    assert "oauth " in sequential
    opened = rows["3 principals, calls/s (all at once)"]
    assert "connections open: secret 3, oauth 3" in opened
    assert "failed calls: shared 0, secret 0, oauth 0" in opened
    assert "connect gate look-up per call, median µs" in rows
    assert "memory per connection, gateway RSS" in rows
