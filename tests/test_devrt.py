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


MAIN = """#include <cstdio>
__global__ void child(int* p) { p[threadIdx.x] = threadIdx.x; }
__global__ void parent(int* p) { if (threadIdx.x == 0) child<<<1, 32>>>(p); }
int main() { int* p; cudaMalloc(&p, 128); parent<<<1, 32>>>(p); cudaDeviceSynchronize(); }
"""


def test_device_runtime_names() -> None:
    from occupancy.build.compilers import device_runtime

    runtime = ("__nv_static_52__f4510a67_22_cuda_device_runtime_cu_3ecce0c0_2317245__Z16memset_3d"
               "_deviceIjLi0ELi0ELi0EEv12MemsetParamsIT_E")
    assert device_runtime(runtime)
    assert not device_runtime("__nv_static_43__2f4e5f1c_10_k_cu_5e1f__Z6helperPf")  # the user's
    assert not device_runtime("_Z6parentPi") and not device_runtime("_cuda_device_runtime_cu_")


def test_an_executable_with_dynamic_parallelism_lists_the_user_s_kernels(tmp_path: Path) -> None:
    """An -rdc executable holds libcudadevrt's kernels (memset_3d_device, memcpy_3d_device):
    left out of the listing, the JSON and the starter manifest, and said in one line."""
    import json

    from click.testing import CliRunner

    from occupancy.cli import main

    need(nvcc_path(), "nvcc")
    (tmp_path / "main.cu").write_text(MAIN)
    exe = tmp_path / "cdp"  # two archs: the runtime's kernels counted once, not per arch
    subprocess.run([nvcc_path(), "-rdc=true", "-gencode", "arch=compute_80,code=sm_80",
                    "-gencode", "arch=compute_90,code=sm_90", str(tmp_path / "main.cu"), "-o",
                    str(exe)], check=True, capture_output=True)
    text = CliRunner().invoke(main, ["resources", str(exe)], env={"COLUMNS": "200"})
    assert text.exit_code == 0 and "parent" in text.stdout and "memset" not in text.stdout
    assert "(and 32 kernels of CUDA's device runtime" in text.stdout
    rows = json.loads(CliRunner().invoke(main, ["resources", str(exe), "--json"]).stdout)
    assert sorted(r["mangled"] for r in rows) == ["_Z5childPi"] * 2 + ["_Z6parentPi"] * 2
    starter = CliRunner().invoke(main, ["resources", str(exe), "--manifest", "-d", "h100"]).stdout
    assert "parent" in starter and "memset" not in starter and "memcpy" not in starter
