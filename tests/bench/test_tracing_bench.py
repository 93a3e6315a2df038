"""The tracing benchmark runs end to end in a tiny configuration: the three gateways answer (off,
on, and the control beside off), the one with tracing on exports its spans to the local
collector, and the table says so."""

from __future__ import annotations

import re
import subprocess
import sys

from paths import REPO


def test_the_tracing_bench_measures_both_gateways_and_counts_the_exported_spans() -> None:
    command = [sys.executable, "bench/tracing.py", "--calls", "50", "--rounds", "1"]
    command += ["--eras", "legacy", "--transports", "http"]
    done = subprocess.run(
        command, check=False, cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    row = re.search(
        r"^\| http \| legacy \| (\d+) \| (\d+) \| [+-][\d.]+% \| [+-][\d.]+% "
        r"\| (\d+), (\d+) \| (\d+) \|",
        done.stdout,
        re.M,
    )
    assert row is not None, done.stdout
    off_us, on_us, off_cpu, on_cpu, spans = (int(group) for group in row.groups())
    assert off_us > 0
    assert on_us > 0
    assert off_cpu > 0
    assert on_cpu > 0
    assert spans >= 50  # at least a span per measured call reached the collector
