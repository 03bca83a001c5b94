"""Shared fixtures: the cuda_occupancy.h oracle compiled with g++ at test time; a private
build cache per session; and the check that no test wrote into the checked-in tree."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

import pytest

from occupancy import Device
from tests import tree_guard

HEADER_DIRS = [os.environ.get("CUDA_HOME", "/usr/local/cuda") + "/include", "/usr/local/cuda/include"]
INT_MAX = 2**31 - 1
FLAGS = {"warps": 0x01, "registers": 0x02, "shared_memory": 0x04, "blocks": 0x08, "barriers": 0x10,
         "virtual_resources": 0x20}


def _unavailable(reason: str) -> None:
    # CI must run the differential tests: there a missing g++ or header is a failure.
    if os.environ.get("CI"):
        pytest.fail(f"differential oracle unavailable in CI: {reason}")
    pytest.skip(reason)


class Oracle:
    """Runs NVIDIA's cuda_occupancy.h on many configurations in one process."""

    def __init__(self, exe: Path) -> None:
        self.exe = exe

    def run(self, lines: Iterable[str]) -> list[list[int]]:
        text = "\n".join(lines) + "\n"
        out = subprocess.run([str(self.exe)], input=text, capture_output=True, text=True,
                             check=True).stdout
        return [[int(x) for x in row.split()] for row in out.splitlines()]

    @staticmethod
    def prefix(cmd: str, dev: Device, regs: int, static: int, max_dyn: int, opt_in: bool,
               barriers: int, pgc: bool, carveout: int | None, virtual: int = 0) -> str:
        """The header's inputs. opt_in: FUNC_SHMEM_LIMIT_OPTIN with max_dyn as the kernel's
        cudaFuncAttributeMaxDynamicSharedMemorySize; else the default per-block limit."""
        major, minor = dev.compute_capability.split(".")
        return " ".join(str(v) for v in (
            cmd, major, minor, dev.max_threads_per_block, dev.max_threads_per_sm,
            dev.registers_per_block, dev.registers_per_sm, dev.warp_size,
            dev.shared_memory_per_block_bytes, dev.shared_memory_per_sm_bytes, dev.sm_count,
            dev.shared_memory_per_block_optin_bytes, dev.reserved_shared_memory_per_block_bytes,
            INT_MAX, regs, static, int(opt_in), max_dyn, barriers, int(pgc),
            -1 if carveout is None else carveout, virtual))


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Each test session compiles into its own cache, never the user's ~/.cache/occupancy."""
    if "OCCUPANCY_CACHE_DIR" not in os.environ or os.environ.get("CI"):
        # Under pytest-xdist the workers share one cache (writes are atomic renames).
        root = tmp_path_factory.getbasetemp()
        if os.environ.get("PYTEST_XDIST_WORKER"):
            root = root.parent
        cache = root / "occupancy-cache"
        cache.mkdir(exist_ok=True)
        os.environ["OCCUPANCY_CACHE_DIR"] = str(cache)
    # The interpreters the tests start (the CLI, build workers) compile this checkout's
    # modules once into the session's own bytecode folder, not once each: an editable
    # install has no .pyc, and PYTHONDONTWRITEBYTECODE (set on some machines) would have
    # every one of a few hundred children compile ~100 modules again.
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    os.environ["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


@pytest.fixture(scope="session")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Oracle:
    gxx = shutil.which("g++")
    if not gxx:
        _unavailable("g++ not found: the differential test compiles cuda_occupancy.h with it")
    include = next((d for d in HEADER_DIRS if Path(d, "cuda_occupancy.h").is_file()), None)
    if include is None:
        _unavailable("cuda_occupancy.h not found under $CUDA_HOME/include or /usr/local/cuda/include")
    exe = tmp_path_factory.mktemp("oracle") / "oracle"
    src = Path(__file__).parent / "oracle" / "oracle.cpp"
    subprocess.run([gxx, "-O1", "-std=c++14", f"-I{include}", str(src), "-o", str(exe)],
                   check=True)
    return Oracle(exe)


# --- no test writes into the checked-in tree (tests/tree_guard.py) --------------------------

REPO = Path(__file__).resolve().parent.parent
_TREE_BEFORE = pytest.StashKey[tree_guard.Snapshot]()
_TREE_WRITES = pytest.StashKey[list[str]]()


def pytest_configure(config: pytest.Config) -> None:
    if tree_guard.is_controller(config):
        config.stash[_TREE_BEFORE] = tree_guard.snapshot(REPO)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    before = session.config.stash.get(_TREE_BEFORE, None)
    if before is None:  # an xdist worker: the controller checks once, after all of them
        return
    allowed = tree_guard.allowed_writes(REPO, session.config.option.basetemp,
                                        os.environ.get("OCCUPANCY_CACHE_DIR"))
    wrote = tree_guard.changes(before, tree_guard.snapshot(REPO), allowed)
    if wrote:
        session.config.stash[_TREE_WRITES] = wrote
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int,
                            config: pytest.Config) -> None:
    wrote = config.stash.get(_TREE_WRITES, [])
    if wrote:
        terminalreporter.section("tests wrote into the checked-in tree", sep="=", red=True)
        for line in wrote:
            terminalreporter.line(line)
        terminalreporter.line("Write under tmp_path: copy the fixture there, or write a manifest "
                              "there that points at it.")
