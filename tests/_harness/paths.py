"""Where things are: the repository, the test suite and this harness."""

from __future__ import annotations

from pathlib import Path
from typing import Final

HARNESS: Final = Path(__file__).resolve().parent
TESTS: Final = HARNESS.parent
REPO: Final = TESTS.parent
