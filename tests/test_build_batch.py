"""A manifest's builds compiled together (issue 20, cold time): each translation unit once,
no host-side preprocessing for dependencies, no SASS disassembly where only resources are
read; every number the same as a build compiled alone, and the cache as sound as before."""

from __future__ import annotations

import json
import subprocess
import unittest.mock
from dataclasses import replace
from pathlib import Path

import pytest

from occupancy.build import builds
from occupancy.build.batch import compile_builds
from occupancy.build.builds import compile_build, preprocessed_files
from occupancy.build.cache import cache_dir
from occupancy.build.compilers import make_build, nvcc_path, nvdisasm_path
from tests.needs import need

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "tests" / "fixtures" / "project"
STAGED = "_Z6stagedPf"


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OCCUPANCY_CACHE_DIR", str(tmp_path / "cache"))


def _counting() -> tuple[list[str], object]:
    calls: list[str] = []
    real = builds._nvcc_build

    def counting(build: builds.Build, *a: object) -> object:
        calls.append(dict(build.defines).get("V", "") + dict(build.defines).get("BIG", ""))
        return real(build, *a)  # type: ignore[arg-type]

    return calls, counting


def _project_build(arch: str = "sm_80", **defines: object) -> builds.Build:
    return make_build(PROJECT / "src" / "kernels.cu", arch, include_dirs=[str(PROJECT / "include")],
                      flags=["-std=c++17"], defines=defines)


@pytest.mark.slow
def test_builds_that_differ_in_an_unused_define_share_one_compile(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Six entries differ only in a define the code never reads: one compile; two that set
    BIG (staged's shared array) are other translation units: one compile each. Every
    result equals the build compiled alone, and each has its own cache entry."""
    need(nvcc_path(), "nvcc")
    todo = [_project_build(V=i) for i in range(6)]
    todo += [_project_build(V=9, USE_BIG_TILE=1, BIG=512), _project_build(V=9, USE_BIG_TILE=1, BIG=1024)]
    calls, counting = _counting()
    with unittest.mock.patch.object(builds, "_nvcc_build", counting):
        got = compile_builds(todo, loop_mix=False)
        assert sorted(calls) == ["0", "91024", "9512"]
        assert [g[STAGED].static_shared_memory for g in got] == [1024] * 6 + [2048, 4096]  # type: ignore[index]
        again = [compile_build(b, loop_mix=False) for b in todo]  # every build: a cache hit
        assert len(calls) == 3 and again == got
    monkeypatch.setenv("OCCUPANCY_CACHE_DIR", str(tmp_path / "alone"))
    some = (5, 7)  # the last sharer and the last BIG unit
    alone = [compile_build(todo[i], loop_mix=False) for i in some]
    assert alone == [got[i] for i in some]


@pytest.mark.slow
def test_a_header_one_define_includes_is_that_builds_own(tmp_path: Path) -> None:
    """An include only one define's build reads makes its translation unit another one (the
    line markers name it): compiled on its own, and its cache entry alone depends on it."""
    need(nvcc_path(), "nvcc")
    (tmp_path / "extra.h").write_text("")  # empty: the code is the same, the files read are not
    src = tmp_path / "k.cu"
    src.write_text('#if WITH_EXTRA\n#include "extra.h"\n#endif\n'
                   "__global__ void k(float* x) { __shared__ float s[64]; s[threadIdx.x] = 1;\n"
                   "  __syncthreads(); x[threadIdx.x] = s[63 - threadIdx.x]; }\n")
    plain, extra = (make_build(src, "sm_80", defines={"WITH_EXTRA": i}) for i in (0, 1))
    calls, counting = _counting()
    with unittest.mock.patch.object(builds, "_nvcc_build", counting):
        compile_builds([plain, extra, make_build(src, "sm_80", defines={"WITH_EXTRA": 0, "V": 1})])
        assert len(calls) == 2
        (tmp_path / "extra.h").write_text("// changed\n")
        compile_build(plain)
        assert len(calls) == 2  # plain never read extra.h
        compile_build(extra)
        assert len(calls) == 3


@pytest.mark.slow
def test_the_cache_depends_on_device_headers_not_host_only_ones(tmp_path: Path) -> None:
    """The files a build depends on are those of the device preprocessing (nvcc -MD also ran
    a host-side one): a header only device code includes invalidates the entry when it
    changes, a host-only one cannot change the cubin and does not."""
    need(nvcc_path(), "nvcc")
    (tmp_path / "dev.h").write_text("#define N 64\n")
    (tmp_path / "host.h").write_text("static int host_only = 1;\n")
    src = tmp_path / "k.cu"
    src.write_text('#ifdef __CUDA_ARCH__\n#include "dev.h"\n#else\n#include "host.h"\n#define N 1\n'
                   "#endif\n__global__ void k(float* x) { __shared__ float s[N]; s[threadIdx.x] = 1;\n"
                   "  __syncthreads(); x[threadIdx.x] = s[N - 1 - threadIdx.x]; }\n")
    b = make_build(src, "sm_80")
    calls, counting = _counting()
    with unittest.mock.patch.object(builds, "_nvcc_build", counting):
        assert compile_build(b)["_Z1kPf"].static_shared_memory == 256
        (tmp_path / "host.h").write_text("static int host_only = 2;\n")
        assert compile_build(b)["_Z1kPf"].static_shared_memory == 256
        assert len(calls) == 1
        (tmp_path / "dev.h").write_text("#define N 128\n")
        assert compile_build(b)["_Z1kPf"].static_shared_memory == 512
        assert len(calls) == 2


@pytest.mark.slow
def test_check_leaves_out_the_loop_mix_and_a_later_build_adds_it_from_the_cubin(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    need(nvcc_path(), "nvcc")
    need(nvdisasm_path(), "nvdisasm")
    b = _project_build()
    calls, counting = _counting()
    with unittest.mock.patch.object(builds, "_nvcc_build", counting):
        lean = compile_build(b, loop_mix=False)
        assert all(r.loop_mix is None for r in lean.values())
        full = compile_build(b)
        assert len(calls) == 1  # the mix came from the cached cubin
        assert compile_build(b) == full and compile_build(b, loop_mix=False) == full
        # an entry whose mix is of an older MIX_FORMAT (written `true`, without the nested
        # loops' counts) is read again from its cubin, not compiled again
        older = 0
        for entry in cache_dir().glob("*.json"):
            data = json.loads(entry.read_text())
            if data.get("mix") and any(d[0] == str(b.source) for d in data.get("deps", [])):
                older += 1
                for k in data["kernels"].values():
                    k["loop_mix"] = [x for x in k["loop_mix"] or []
                                     if not x[0].startswith("inner_")]
                entry.write_text(json.dumps({**data, "mix": True}))
        assert older and compile_build(b) == full and len(calls) == 1
    assert any(r.loop_mix for r in full.values())
    monkeypatch.setenv("OCCUPANCY_CACHE_DIR", str(tmp_path / "fresh"))
    assert compile_build(b) == full  # as a cold build with the mix has it
    assert {k: replace(v, loop_mix=None) for k, v in full.items()} == lean


@pytest.mark.slow
def test_nvcc_preprocesses_alike_for_E_and_cubin(tmp_path: Path) -> None:
    """What the sharing rests on: `nvcc -E` gives byte for byte the translation unit that
    `nvcc -cubin` hands cicc (.cpp1.ii), with every kind of flag a manifest may give."""
    nvcc = nvcc_path()
    need(nvcc, "nvcc")
    assert nvcc
    b = make_build(PROJECT / "src" / "kernels.cu", "sm_80", include_dirs=[str(PROJECT / "include")],
                   flags=["-O3", "--use_fast_math", "-std=c++17", "-Xcompiler", "-fopenmp,-DHOST=1",
                          "-lineinfo", "-maxrregcount=64", "--ftz=true", "--prec-div=false",
                          "--extended-lambda", "--expt-relaxed-constexpr", "--restrict", "-UNDEBUG",
                          "-Xptxas", "-O2", "--default-stream", "per-thread", "-w"],
                   defines={"V": "a,b", "USE_BIG_TILE": 1})
    args = builds._nvcc_source_args(b, b.source)
    keep = tmp_path / "keep"
    keep.mkdir()
    subprocess.run([nvcc, "-cubin", "-arch=sm_80", "-keep", "-keep-dir", str(keep), *args, "-o",
                    str(keep / "k.cubin")], check=True, cwd=keep, capture_output=True)
    subprocess.run([nvcc, "-E", "-arch=sm_80", *args, "-o", str(tmp_path / "e.ii")], check=True,
                   cwd=tmp_path, capture_output=True)
    assert (keep / "kernels.cpp1.ii").read_bytes() == (tmp_path / "e.ii").read_bytes()


def test_line_markers_name_every_file_as_opened() -> None:
    text = (b'# 0 "/src/k.cu"\n# 0 "<built-in>"\n# 1 "/tmp/x//"\n# 1 "/src/../inc/a b.h" 1\n'
            b'int x;\n# 1 "rel.h" 1\n# 1 "/q/a\\"b\\\\c\\101.h" 1\n#pragma once\n# 12 "/src/k.cu" 2\n')
    assert preprocessed_files(text, "/cwd") == ["/src/k.cu", "/src/../inc/a b.h", "/cwd/rel.h",
                                                '/q/a"b\\cA.h']
