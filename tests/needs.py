"""What a test needs from the machine: a skip where it is missing, a failure under CI
(where every tool the README names is installed)."""

from __future__ import annotations

import os

import pytest

from occupancy.build.compilers import nvcc_path


def need(tool: object, what: str) -> None:
    if tool is None:
        if os.environ.get("CI"):
            pytest.fail(f"{what} missing in CI")
        pytest.skip(f"{what} not found")


def need_nvcc() -> None:
    need(nvcc_path(), "nvcc")
