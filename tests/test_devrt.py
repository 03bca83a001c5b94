"""Dynamic parallelism builds: an -rdc compile whose device link needs libcudadevrt, found
for the nvlink that links it even where the nvcc on PATH is a wrapper script elsewhere
(/usr/local/bin/nvcc running /usr/local/cuda-13.0/bin/nvcc), and the fix named where the
flag is missing. Real nvcc and nvlink; CI has both."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from occupancy.build import link
from occupancy.build.builds import compile_build
from occupancy.build.compilers import make_build, nvcc_path
from occupancy.build.link import nvlink_path
from occupancy.core.errors import OccupancyError
from tests.needs import need

CDP = Path(__file__).resolve().parent / "fixtures" / "rdc" / "cdp_parent.cu"
_NVLINK = re.compile(r"Function properties for '([^']+)':.*\n.*used (\d+) registers")


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OCCUPANCY_CACHE_DIR", str(tmp_path / "cache"))


def _wrappers(tmp: Path) -> Path:
    """A bin/ of scripts that run the real nvcc and nvlink, as a site's /usr/local/bin does."""
    nvcc, nvlink = nvcc_path(), nvlink_path()
    need(nvcc, "nvcc")
    need(nvlink, "nvlink")
    b = tmp / "site" / "bin"
    b.mkdir(parents=True)
    for name, real in (("nvcc", nvcc), ("nvlink", nvlink)):
        (b / name).write_text(f'#!/bin/sh\nexec "{real}" "$@"\n')
        (b / name).chmod(0o755)
    return b


def test_the_device_runtime_is_found_through_a_wrapper(tmp_path: Path) -> None:
    b = _wrappers(tmp_path)
    link._cuda_lib_dirs.cache_clear()
    devrt = link._devrt(str(b / "nvlink"))
    assert devrt is not None and Path(devrt).name == "libcudadevrt.a" and Path(devrt).is_file()
    assert not Path(devrt).is_relative_to(tmp_path)  # the install's, not beside the wrapper


def test_a_wrapper_without_nvcc_beside_it_finds_none(tmp_path: Path) -> None:
    b = _wrappers(tmp_path)
    (b / "nvcc").unlink()
    link._cuda_lib_dirs.cache_clear()
    assert link._devrt(str(b / "nvlink")) is None


def test_dynamic_parallelism_links_as_nvlink_does_with_the_device_runtime(tmp_path: Path) -> None:
    need(nvcc_path(), "nvcc")
    got = compile_build(make_build(CDP, "sm_90", flags=["-rdc=true"]))
    # none of libcudadevrt's own functions
    assert set(got) == {"_Z6parentPii", "_Z5childPi"}
    obj = tmp_path / "o.cubin"
    subprocess.run([nvcc_path(), "-cubin", "-rdc=true", "-arch=sm_90", str(CDP), "-o", str(obj)],
                   check=True, capture_output=True)
    devrt = link._devrt(nvlink_path())
    need(devrt, "libcudadevrt.a")
    r = subprocess.run([nvlink_path(), "-v", "-arch=sm_90", str(obj), "-L", os.path.dirname(devrt),
                        "-lcudadevrt", "-o", str(tmp_path / "l.cubin")],
                       check=True, capture_output=True, text=True)
    says = {m.group(1): int(m.group(2)) for m in _NVLINK.finditer(r.stdout + r.stderr)}
    assert got["_Z6parentPii"].registers_per_thread == says["_Z6parentPii"]
    assert got["_Z6parentPii"].static_shared_memory == 64 * 4 and got["_Z6parentPii"].linked


def test_without_rdc_the_error_names_the_flag(tmp_path: Path) -> None:
    need(nvcc_path(), "nvcc")
    with pytest.raises(OccupancyError) as e:
        compile_build(make_build(CDP, "sm_90"))
    msg = str(e.value)
    assert "separate compilation mode" in msg and "add -rdc=true" in msg and "\n" not in msg
