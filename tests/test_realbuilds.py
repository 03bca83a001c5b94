"""Real builds, round 2 (issue 20): relocatable device code (-rdc=true / -dc), relocatable and
linked cubins, flags as real builds write them. Every number is checked against what the
device linker itself reports (nvlink -v, read here with the test's own regex) or ptxas."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from occupancy import load_device
from occupancy.build.builds import _nvrtc_ptx, compile_build
from occupancy.build.compilers import cuda_tool, make_build, nvcc_path, nvrtc_compiler
from occupancy.build.images import read_binary, resources_for_device
from occupancy.build.link import nvjitlink_lib, nvlink_path
from occupancy.build.resolve import CheckResolver
from occupancy.gate.check import evaluate
from occupancy.inputs.manifest import load_manifest
from tests.needs import need

ROOT = Path(__file__).resolve().parent.parent
RDC = ROOT / "tests" / "fixtures" / "rdc"
MM = "tiled_matmul.cu"
SAMPLES = Path("/work/.mirror/NVIDIA+cuda-samples/repo")  # a local snapshot, where there is one
_NVLINK = re.compile(r"Function properties for '([^']+)':.*\n.*used (\d+) registers, used \d+ "
                     r"barriers, (\d+) stack, (\d+) bytes smem")


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OCCUPANCY_CACHE_DIR", str(tmp_path / "cache"))


def nvlink_says(log: str, arch: str) -> dict[str, tuple[int, int]]:
    """(registers, static smem as declared) per kernel from `nvlink -v`; nvlink 13 counts the
    1 KB the driver reserves per block in its sm_90 report (not in its sm_100 one), which the
    declared size does not hold."""
    reserved = 1024 if int(arch[3:]) // 10 == 9 else 0
    return {m.group(1): (int(m.group(2)), max(int(m.group(4)) - reserved, 0) if int(m.group(4))
                         else 0) for m in _NVLINK.finditer(log)}


def rdc_by_hand(arch: str, sources: list[Path], tmp: Path, *extra: str) -> tuple[Path, Path, str]:
    """nvcc -cubin -rdc=true per source, then nvlink -v: (relocatable cubin of the first
    source, linked cubin, nvlink's report)."""
    nvcc = nvcc_path()
    assert nvcc
    objs = []
    for i, s in enumerate(sources):
        objs.append(tmp / f"o{i}_{arch}.cubin")
        subprocess.run([nvcc, "-cubin", "-rdc=true", f"-arch={arch}", *extra, str(s), "-o",
                        str(objs[-1])], check=True, capture_output=True)
    linked = tmp / f"linked_{arch}.cubin"
    exe = nvlink_path()
    assert exe
    r = subprocess.run([exe, "-v", f"-arch={arch}", *map(str, objs), "-o", str(linked)],
                       check=True, capture_output=True, text=True)
    return objs[0], linked, r.stdout + r.stderr


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_100"])
def test_rdc_source_relocatable_and_linked_cubins_equal_nvlink(arch: str, tmp_path: Path) -> None:
    need(nvcc_path(), "nvcc")
    rel, linked, log = rdc_by_hand(arch, [RDC / MM, RDC / "scale_helper.cu"], tmp_path)
    truth = nvlink_says(log, arch)
    assert truth["_Z12tiled_matmulILi32EEvPfPKfS2_ii"][1] == 8192
    assert truth["_Z12tiled_matmulILi16EEvPfPKfS2_ii"][1] == 2048
    # from source, as the build compiles it (-rdc=true, the other file device-linked)
    found = compile_build(make_build(RDC / MM, arch, flags=["-rdc=true"],
                                     link=[str(RDC / "scale_helper.cu")]))
    assert {k: (v.registers_per_thread, v.static_shared_memory) for k, v in found.items()} == truth
    # the linked cubin, read as the driver loads it (sm_90: the reserved 1 KB taken out once)
    img = read_binary(str(linked), "linked.cubin", linked.read_bytes())
    assert {k: (v.registers_per_thread, v.static_shared_memory)
            for k, v in img.sass[arch].items()} == truth
    # the relocatable cubin of the matmul alone: linked here, never read as final
    only_mm = tmp_path / "mm"
    only_mm.mkdir()
    rel_mm, _, log_mm = rdc_by_hand(arch, [RDC / MM], only_mm, "-DNO_SCALED_COPY")
    img = read_binary(str(rel_mm), "k.cubin", rel_mm.read_bytes())
    assert {k: (v.registers_per_thread, v.static_shared_memory)
            for k, v in img.sass[arch].items()} == nvlink_says(log_mm, arch)
    assert "relocatable, device-linked here" in next(iter(img.sass[arch].values())).source


@pytest.mark.slow
def test_cuobjdump_on_the_linked_image_agrees(tmp_path: Path) -> None:
    need(nvcc_path(), "nvcc")
    need(cuda_tool("cuobjdump"), "cuobjdump")
    _, linked, _ = rdc_by_hand("sm_90", [RDC / MM, RDC / "scale_helper.cu"], tmp_path)
    r = subprocess.run([str(cuda_tool("cuobjdump")), "-res-usage", str(linked)],
                       capture_output=True, text=True, check=True)
    said = {m.group(1): (int(m.group(2)), int(m.group(3))) for m in re.finditer(
        r"Function (\S+):\n\s*REG:(\d+) STACK:\d+ SHARED:(\d+)", r.stdout)
        if m.group(1) != "_Z8scale_ofi"}  # a device function (listed with REG:0), no kernel
    img = read_binary(str(linked), "linked.cubin", linked.read_bytes())
    # cuobjdump's SHARED holds the 1 KB the driver reserves per block on sm_90+
    assert {k: (v.registers_per_thread, v.static_shared_memory + 1024)
            for k, v in img.sass["sm_90"].items()} == said


@pytest.mark.parametrize("arch", ["sm_61", "sm_70"])
def test_rdc_from_source_on_nvrtc_archs(arch: str, tmp_path: Path) -> None:
    c = nvrtc_compiler()
    need(c, "NVRTC and ptxas 12.9 (the compiler extra)")
    need(nvjitlink_lib(), "nvJitLink 12 (the compiler extra)")
    assert c
    found = compile_build(make_build(RDC / MM, arch, flags=["-rdc=true"],
                                     link=[str(RDC / "scale_helper.cu")]))
    # by hand: NVRTC's PTX, ptxas -c (registers: the link moves none without a call) and
    # a whole-program ptxas (the static smem the link fixes)
    b = make_build(RDC / MM, arch, flags=["-rdc=true"], defines={"NO_SCALED_COPY": 1})
    ptx, _ = _nvrtc_ptx(c, b, (RDC / MM).read_text())
    (tmp_path / "k.ptx").write_text(ptx)
    rel = subprocess.run([c.ptxas, f"-arch={arch}", "-v", "-c", str(tmp_path / "k.ptx"), "-o",
                          str(tmp_path / "k.cubin")], capture_output=True, text=True,
                         check=True).stderr
    regs = dict(re.findall(r"Function properties for (\S+)\n.*\n.*Used (\d+) registers", rel))
    for name, smem in (("_Z12tiled_matmulILi32EEvPfPKfS2_ii", 8192),
                       ("_Z12tiled_matmulILi16EEvPfPKfS2_ii", 2048)):
        assert (found[name].registers_per_thread, found[name].static_shared_memory) == \
            (int(regs[name]), smem)
    assert found["_Z11scaled_copyPfPKf"].static_shared_memory == 1024
    # that relocatable cubin given as a binary: device-linked here (nvJitLink), never 0 B
    data = (tmp_path / "k.cubin").read_bytes()
    img = read_binary(str(tmp_path / "k.cubin"), "k.cubin", data)
    assert {k: v.static_shared_memory for k, v in img.sass[arch].items()} == {
        "_Z12tiled_matmulILi32EEvPfPKfS2_ii": 8192, "_Z12tiled_matmulILi16EEvPfPKfS2_ii": 2048}


@pytest.mark.slow
def test_manifest_of_rdc_entries_on_four_gpus() -> None:
    need(nvcc_path(), "nvcc")
    need(nvrtc_compiler(), "NVRTC")
    need(nvjitlink_lib(), "nvJitLink 12")
    verdicts = evaluate(load_manifest(RDC / "launches.yaml"), CheckResolver())
    assert len(verdicts) == 12 and all(v.status == "pass" for v in verdicts), \
        [(v.kernel, v.device, v.problems) for v in verdicts if v.status != "pass"]
    smem = {(v.kernel, v.device): v.resources.static_shared_memory for v in verdicts
            if v.resources}
    assert {smem[("mm32", d)] for d in ("gtx1080", "v100", "a100", "h100")} == {8192}
    assert {smem[("mm16", d)] for d in ("gtx1080", "v100", "a100", "h100")} == {2048}


@pytest.mark.slow
def test_unresolved_device_function_names_itself_and_the_fix(tmp_path: Path) -> None:
    need(nvcc_path(), "nvcc")
    from occupancy.core.errors import OccupancyError

    with pytest.raises(OccupancyError) as e:
        compile_build(make_build(RDC / MM, "sm_80", flags=["-rdc=true"]))
    msg = str(e.value)
    assert "undefined reference to scale_of(int)" in msg and "link:" in msg
    assert "\n" not in msg and str(tmp_path) not in msg
    rel, _, _ = rdc_by_hand("sm_80", [RDC / MM, RDC / "scale_helper.cu"], tmp_path)
    with pytest.raises(OccupancyError) as e:
        read_binary(str(rel), "k.cubin", rel.read_bytes())
    assert "k.cubin holds relocatable device code for sm_80" in str(e.value)
    assert "scale_of(int)" in str(e.value) and "nvlink -arch=sm_XX" in str(e.value)


@pytest.mark.slow
@pytest.mark.parametrize(("arch", "gpu"), [("sm_90", "h100"), ("sm_100", "b200")])
def test_ptxas_log_of_an_rdc_compile_is_refused_and_nvlinks_report_is_read(
        arch: str, gpu: str, tmp_path: Path) -> None:
    need(nvcc_path(), "nvcc")
    nvcc = nvcc_path()
    assert nvcc
    log = tmp_path / "build.log"
    r = subprocess.run([nvcc, "-rdc=true", f"-arch={arch}", "-Xptxas", "-v", "-c", str(RDC / MM),
                        "-DNO_SCALED_COPY", "-o", str(tmp_path / "k.o")],
                       capture_output=True, text=True, check=True)
    log.write_text(r.stdout + r.stderr)
    m = tmp_path / "m.yaml"
    m.write_text(f"devices: [{gpu}]\nkernels:\n  - name: mm32\n    ptxas_log: {log}\n"
                 "    function: tiled_matmul<32>\n    flags: [-rdc=true]\n    block: [32, 32]\n")
    (v,) = evaluate(load_manifest(m), CheckResolver())
    assert v.status == "error" and "relocatable compile" in v.problems[0]
    assert "-Xnvlink -v" in v.problems[0]
    # the same build's log with nvlink's report: read as final
    r = subprocess.run([nvcc, "-rdc=true", f"-arch={arch}", "-Xptxas", "-v", "-Xnvlink", "-v",
                        str(RDC / MM), "-DNO_SCALED_COPY", "-DWITH_MAIN", "-o",
                        str(tmp_path / "a.out")], capture_output=True, text=True, check=True)
    log.write_text(r.stdout + r.stderr)
    (v,) = evaluate(load_manifest(m), CheckResolver())
    assert v.status != "error", v.problems
    assert v.resources and v.resources.static_shared_memory == 8192


def _samples_matrixmul(tmp: Path) -> Path | None:
    """cuda-samples' matrixMul (BSD-3, NVIDIA) from a local snapshot, copied at test time
    (not shipped here): its CMake build sets CUDA_SEPARABLE_COMPILATION (-rdc=true)."""
    if not (SAMPLES / "HEAD").exists() and not (SAMPLES / ".git").exists():
        return None
    git = shutil.which("git")
    if git is None:
        return None
    files = {"Samples/0_Introduction/matrixMul/matrixMul.cu": "matrixMul/matrixMul.cu"}
    files.update({f"Common/{h}": f"Common/{h}" for h in (
        "helper_cuda.h", "helper_functions.h", "helper_string.h", "helper_image.h",
        "helper_timer.h", "exception.h")})
    for src, dst in files.items():
        r = subprocess.run([git, "-C", str(SAMPLES), "show", f"HEAD:{src}"], capture_output=True)
        if r.returncode != 0:
            return None
        (tmp / dst).parent.mkdir(parents=True, exist_ok=True)
        (tmp / dst).write_bytes(r.stdout)
    return tmp / "matrixMul" / "matrixMul.cu"


@pytest.mark.slow
def test_cuda_samples_matrixmul_with_its_cmake_flags(tmp_path: Path) -> None:
    need(nvcc_path(), "nvcc")
    src = _samples_matrixmul(tmp_path)
    if src is None:
        pytest.skip("no local cuda-samples snapshot")
    m = tmp_path / "m.yaml"
    m.write_text("devices: [a100, h100]\ninclude_dirs: [Common]\n"
                 "flags: [-Wno-deprecated-gpu-targets, -lineinfo, --extended-lambda, -std=c++17, "
                 "-rdc=true]\nkernels:\n"
                 "  - {name: mm32, source: matrixMul/matrixMul.cu, function: MatrixMulCUDA<32>, "
                 "block: [32, 32]}\n"
                 "  - {name: mm16, source: matrixMul/matrixMul.cu, function: MatrixMulCUDA<16>, "
                 "block: [16, 16]}\n")
    verdicts = evaluate(load_manifest(m), CheckResolver())
    assert all(v.status == "pass" for v in verdicts), [v.problems for v in verdicts]
    for v in verdicts:
        arch = "sm_80" if v.device == "a100" else "sm_90"
        _, _, log = rdc_by_hand(arch, [src], tmp_path, f"-I{tmp_path / 'Common'}", "-lineinfo")
        truth = nvlink_says(log, arch)
        assert v.resources is not None
        assert truth[v.resources.function] == (v.registers_per_thread,
                                               v.resources.static_shared_memory)
        assert v.resources.static_shared_memory == (8192 if v.kernel == "mm32" else 2048)


@pytest.mark.slow
def test_resources_for_device_of_a_fatbin_with_relocatable_code(tmp_path: Path) -> None:
    """An object from nvcc -dc holds a relocatable fatbin: linked here per arch."""
    need(nvcc_path(), "nvcc")
    need(cuda_tool("cuobjdump"), "cuobjdump")
    nvcc = nvcc_path()
    assert nvcc
    obj = tmp_path / "k.o"
    subprocess.run([nvcc, "-dc", "-arch=sm_80", str(RDC / MM), "-DNO_SCALED_COPY", "-o", str(obj)],
                   check=True, capture_output=True)
    img = read_binary(str(obj), "k.o", obj.read_bytes())
    res = resources_for_device(img, load_device("a100"), "k.o")
    assert res["_Z12tiled_matmulILi32EEvPfPKfS2_ii"].static_shared_memory == 8192


@pytest.mark.slow
def test_starter_manifest_keeps_include_dirs_and_flags_and_checks_as_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    need(nvcc_path(), "nvcc")
    import yaml
    from click.testing import CliRunner

    from occupancy.cli import main

    project = ROOT / "tests" / "fixtures" / "project"
    monkeypatch.chdir(project)  # relative paths in, absolute paths out
    r = CliRunner().invoke(main, ["resources", "src/kernels.cu", "-I", "include", "--flag",
                                  "-DUSE_BIG_TILE=1", "--flag", "-Xcompiler", "--flag",
                                  "-fopenmp", "-d", "a100", "--manifest"])
    assert r.exit_code == 0, r.output
    m = tmp_path / "elsewhere" / "starter.yaml"
    m.parent.mkdir()
    m.write_text(r.stdout)
    doc = yaml.safe_load(r.stdout)
    names = [k["name"] for k in doc["kernels"]]
    assert len(names) == len(set(names)) == 6, names
    assert {"tiled_transpose_32_true", "tiled_transpose_16_false"} <= set(names)
    assert doc["flags"] == ["-DUSE_BIG_TILE=1", "-Xcompiler", "-fopenmp"]
    verdicts = evaluate(load_manifest(m), CheckResolver())
    assert len(verdicts) == 6 and all(v.status != "error" for v in verdicts), \
        [v.problems for v in verdicts]
    (staged,) = [v for v in verdicts if v.kernel == "staged"]
    assert staged.resources and staged.resources.static_shared_memory == 16384  # the -D kept


# --- flags as real builds write them --------------------------------------------------------

HOST_ONLY = ["-Wno-deprecated-gpu-targets", "-Xcompiler", "-fopenmp", "-Xcompiler=-Wall,-O2",
             "--compiler-options=-fPIC", "-Werror", "all-warnings", "-lineinfo", "-Xlinker",
             "-rpath", "--diag-suppress=177", "-Xcudafe", "--diag_suppress=550",
             "--default-stream", "per-thread", "-Xptxas", "-v", "-lcublas", "-lcublasLt"]


def test_host_only_flags_are_accepted_and_compile() -> None:
    from occupancy.inputs.flags import check_flags

    flags, defines = check_flags(HOST_ONLY, "t")
    assert "-Xcompiler=-fopenmp" in flags and "-Werror=all-warnings" in flags and not defines
    need(nvcc_path(), "nvcc")
    found = compile_build(make_build(RDC / MM, "sm_80", flags=[*HOST_ONLY, "-dc"],
                                     defines={"NO_SCALED_COPY": 1}))
    k = found["_Z12tiled_matmulILi32EEvPfPKfS2_ii"]
    assert k.static_shared_memory == 8192 and "device-linked" in k.source  # -dc is -rdc too


@pytest.mark.parametrize("bad", [
    ["-Xcompiler", "-B/tmp/evil"], ["-Xcompiler=-fplugin=/tmp/x.so"], ["-Xcompiler=@opts"],
    ["-Xcompiler=-specs=/tmp/s"], ["-Xcompiler=-o,/tmp/x"], ["-Xcompiler=-Wl,-rpath,/x"],
    ["-Xcompiler=-save-temps"], ["-Xcompiler=-fdump-tree-all"], ["-Xcompiler=-wrapper,/bin/sh"],
    ["-Xcompiler=-Wp,-MD,/tmp/d"], ["-ccbin", "/tmp/cc"], ["-Xcompiler"], ["-o", "x"],
    ["-Werror", "everything"],
])
def test_host_flags_that_run_programs_or_write_files_are_refused(bad: list[str]) -> None:
    from occupancy.core.errors import OccupancyError
    from occupancy.inputs.flags import check_flags

    with pytest.raises(OccupancyError) as e:
        check_flags(bad, "t")
    assert "\n" not in str(e.value)


def test_nvrtc_gets_its_own_spelling_and_errors_name_the_real_blocker(tmp_path: Path) -> None:
    from occupancy.core.errors import OccupancyError
    from occupancy.inputs.flags import nvrtc_flags

    assert nvrtc_flags(("--extended-lambda", "--expt-relaxed-constexpr", "-Xcompiler=-fopenmp",
                        "-Wno-deprecated-gpu-targets", "--use_fast_math", "-lineinfo")) == \
        ["--use_fast_math", "-lineinfo"]
    need(nvrtc_compiler(), "NVRTC")
    lam = tmp_path / "lam.cu"
    lam.write_text("__global__ void k(float* x) {\n"
                   "  auto f = [] __device__ (float v) { return 2 * v; };\n  x[0] = f(x[1]);\n}\n")
    with pytest.raises(OccupancyError) as e:
        compile_build(make_build(lam, "sm_61", flags=["--extended-lambda",
                                                      "--expt-relaxed-constexpr"]))
    msg = str(e.value)
    assert "unrecognized option" not in msg and "lambdas" in msg and "CUDA 12" in msg
    assert "compilers: {sm_61:" in msg
    host = tmp_path / "host.cu"
    host.write_text("#include <stdio.h>\n__global__ void k(float* x) { x[0] = 1; }\n"
                    "int main() { printf(\"hi\\n\"); }\n")
    with pytest.raises(OccupancyError) as e:
        compile_build(make_build(host, "sm_70", flags=["--extended-lambda"]))
    assert "this file has host code" in str(e.value) and "sm_70 then needs a CUDA 12 nvcc" in str(e.value)
    # a header found nowhere is the file's own error: no word of host code or another nvcc
    own = tmp_path / "own.cu"
    own.write_text('#include "not_written_yet.h"\n__global__ void k(float* x) { x[0] = 1; }\n')
    with pytest.raises(OccupancyError) as e:
        compile_build(make_build(own, "sm_70"))
    assert "not_written_yet.h" in str(e.value) and "host code" not in str(e.value)
    assert "CUDA 12 nvcc" not in str(e.value)



def test_extern_c_glued_to_global_builds_on_nvrtc_as_on_nvcc(tmp_path: Path) -> None:
    """`extern "C"__global__` (public code has it): nvcc reads two tokens, NVRTC had read
    "C"__global__ as one user-defined literal ("expected an identifier")."""
    need(nvrtc_compiler(), "NVRTC")
    need(nvcc_path(), "nvcc")
    src = tmp_path / "glued.cu"
    src.write_text('extern "C"__global__ void kx(float* p) { p[threadIdx.x] = 1.f; }\n'
                   'extern "C"  __global__ void ky(float* p) { p[0] = 2.f; }\n'
                   '// extern "C"__device__ in a comment: spaced there too, harmlessly\n')
    on_nvrtc = compile_build(make_build(src, "sm_61"))
    on_nvcc = compile_build(make_build(src, "sm_90"))
    assert set(on_nvrtc) == set(on_nvcc) == {"kx", "ky"}
    assert "nvrtc" in on_nvrtc["kx"].source and "nvcc" in on_nvcc["kx"].source

# --- the compiler per architecture ----------------------------------------------------------

def test_manifest_names_the_nvcc_per_arch(tmp_path: Path) -> None:
    nvcc = nvcc_path()
    need(nvcc, "nvcc")
    m = tmp_path / "m.yaml"
    m.write_text(f"devices: [a100, v100]\ncompilers: {{sm_80: {nvcc}, sm_70: {nvcc}}}\n"
                 f"kernels:\n  - name: mm\n    source: {RDC / MM}\n    function: tiled_matmul<16>\n"
                 "    defines: {NO_SCALED_COPY: 1}\n    block: [16, 16]\n")
    a100, v100 = evaluate(load_manifest(m), CheckResolver())
    assert a100.status == "pass" and a100.registers_source.startswith("nvcc")
    assert v100.status == "error"  # nvcc 13 cannot build sm_70: said, not worked around
    assert f"compilers.sm_70: {nvcc} is CUDA" in v100.problems[0]
    assert "which does not target sm_70" in v100.problems[0]


def test_other_cuda_installs_build_the_archs_the_main_nvcc_cannot(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from occupancy.build import compilers

    fake = tmp_path / "cuda-12.4" / "bin"
    fake.mkdir(parents=True)
    for tool in ("nvcc", "ptxas"):
        (fake / tool).write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.4, V12.4.131'\n")
        (fake / tool).chmod(0o755)
    monkeypatch.setattr(compilers, "CUDA_ROOTS", str(tmp_path / "cuda-*"))
    for f in (compilers.other_nvccs, compilers.nvcc_at, compilers.nvcc_compiler):
        f.cache_clear()
    try:
        c = compilers.compiler_for("sm_61")
        assert c is not None and c.kind == "nvcc" and c.version == "12.4"
        assert c.path == str(fake / "nvcc")
        main = compilers.nvcc_compiler()
        if main is not None and main.targets(90):
            assert compilers.compiler_for("sm_90") == main  # the user's nvcc first
    finally:
        for f in (compilers.other_nvccs, compilers.nvcc_at, compilers.nvcc_compiler):
            f.cache_clear()


# --- the build cache ------------------------------------------------------------------------

@pytest.mark.slow
def test_four_cold_parallel_builds_of_one_file_three_times(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """nvcc -keep writes X.cudafe1.c, X.cpp4.ii, ... named after the source: every build has
    its own folder (cwd, -keep-dir and TMPDIR), so cold builds of one file never collide; the
    template instance makes all four write the one instantiating wrapper at once. Three
    rounds of four cold builds."""
    need(nvcc_path(), "nvcc")
    from concurrent.futures import ThreadPoolExecutor

    src = tmp_path / "k.cu"
    src.write_text((RDC / MM).read_text())
    for i in range(3):
        monkeypatch.setenv("OCCUPANCY_CACHE_DIR", str(tmp_path / f"cache{i}"))
        builds = [make_build(src, "sm_80", defines={"NO_SCALED_COPY": 1, "COPY": j},
                             name_expressions=["tiled_matmul<16>"]) for j in range(4)]
        with ThreadPoolExecutor(4) as pool:  # registers and shared memory; no SASS loop mix
            results = list(pool.map(lambda b: compile_build(b, loop_mix=False), builds))
        assert all(r["_Z12tiled_matmulILi16EEvPfPKfS2_ii"].static_shared_memory == 2048
                   for r in results), i


@pytest.mark.slow
def test_failures_are_cached_until_a_file_changes(tmp_path: Path) -> None:
    need(nvcc_path(), "nvcc")
    from occupancy.build import builds
    from occupancy.build.resources import CompileError

    src = tmp_path / "bad.cu"
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "cfg.h").write_text("#define BROKEN }\n")
    src.write_text('#include "cfg.h"\n__global__ void k(float* x) { x[0] = 1; BROKEN }\n')
    b = make_build(src, "sm_80", include_dirs=[str(tmp_path / "inc")])
    calls = []
    real = builds._nvcc_build

    def counting(*a: object) -> object:
        calls.append(1)
        return real(*a)  # type: ignore[arg-type]

    import unittest.mock

    with unittest.mock.patch.object(builds, "_nvcc_build", counting):
        for _ in range(3):
            with pytest.raises(CompileError) as e:
                compile_build(b)
            assert "expected a declaration" in str(e.value) or "error" in str(e.value)
        assert len(calls) == 1  # the same error, from the cache
        (tmp_path / "inc" / "cfg.h").write_text("#define BROKEN\n")  # the header is fixed
        assert "_Z1kPf" in compile_build(b)
        assert len(calls) == 2


@pytest.mark.slow
def test_a_header_that_shadows_the_recorded_one_invalidates_the_cache(tmp_path: Path) -> None:
    """The cache recorded include/b/tile.h; a tile.h added later to include/a (searched
    first) is what the compiler now reads: the cached 8-register answer must not be kept."""
    need(nvcc_path(), "nvcc")
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (b / "tile.h").write_text("#define TILE 1\n")
    src = tmp_path / "k.cu"
    src.write_text('#include <tile.h>\n__global__ void k(float* x) {\n'
                   '  __shared__ float s[TILE * 1024];\n  s[threadIdx.x] = x[threadIdx.x];\n'
                   '  __syncthreads();\n  x[threadIdx.x] = s[(threadIdx.x * 7) % (TILE * 1024)];\n}\n')
    build = make_build(src, "sm_80", include_dirs=[str(a), str(b)])
    assert compile_build(build)["_Z1kPf"].static_shared_memory == 4096
    (a / "tile.h").write_text("#define TILE 4\n")
    assert compile_build(build)["_Z1kPf"].static_shared_memory == 16384


# --- kernel names as launches write them ----------------------------------------------------

def test_names_with_macros_defaults_and_deduced_types_match_one_completion() -> None:
    from occupancy.build.names import match_kernel
    from occupancy.core.errors import OccupancyError

    built = {"_Z1aILi32EEvv": "void norm_f32<32>()",
             "_Z1bILi1024ELb0ELb0EEvv": "void rms_norm_f32<1024, false, false>()",
             "_Z1cILb1ELi0ELi0E6__halfEvv": "void soft_max_f32<true, 0, 0, __half>()",
             "_Z1dILb0ELi0ELi0E6__halfEvv": "void soft_max_f32<false, 0, 0, __half>()",
             "_Z1dILb0ELi0ELi0EfEvv": "void soft_max_f32<false, 0, 0, float>()"}
    macros = {"WARP_SIZE": "32", "HALF": "(WARP_SIZE * 64)"}
    assert match_kernel("norm_f32<WARP_SIZE>", built, "k", macros) == "_Z1aILi32EEvv"
    assert match_kernel("rms_norm_f32<HALF/2, false>", built, "k", macros) == \
        "_Z1bILi1024ELb0ELb0EEvv"
    assert match_kernel("soft_max_f32<true, 0, 0>", built, "k") == "_Z1cILb1ELi0ELi0E6__halfEvv"
    with pytest.raises(OccupancyError) as e:
        match_kernel("soft_max_f32<false, 0, 0>", built, "k")
    assert "matches 2 kernels" in str(e.value) and "float>()" in str(e.value)
    with pytest.raises(OccupancyError) as e:
        match_kernel("norm_f32<WARP>", built, "k", macros)
    assert "no kernel 'norm_f32<WARP>'" in str(e.value)


@pytest.mark.slow
def test_names_as_launches_write_them_from_a_real_build() -> None:
    need(nvcc_path(), "nvcc")
    verdicts = evaluate(load_manifest(ROOT / "tests" / "fixtures" / "names" / "launches.yaml"),
                        CheckResolver())
    got = {v.kernel: v for v in verdicts if v.device == "a100"}
    assert got["norm_warp"].resources and got["norm_warp"].resources.static_shared_memory == 128
    assert got["norm_block"].resources and got["norm_block"].resources.static_shared_memory == 256
    assert got["rms_norm"].status == "pass" and got["rms_norm"].resources
    assert "rms_norm_f32<1024, false, false>" in got["rms_norm"].resources.demangled
    assert got["soft_max"].status == "pass"
    bad = got["soft_max_two"]
    assert bad.status == "error" and "matches 2 kernels" in bad.problems[0]


@pytest.mark.slow
def test_a_multi_arch_relocatable_fatbin_is_linked_per_arch(tmp_path: Path) -> None:
    """nvcc -fatbin -rdc=true for sm_80/90/100: every arch's relocatable cubin is linked here
    and equals what nvlink reports for the same code."""
    need(nvcc_path(), "nvcc")
    need(cuda_tool("cuobjdump"), "cuobjdump")
    nvcc = nvcc_path()
    assert nvcc
    fat = tmp_path / "k.fatbin"
    archs = ("sm_80", "sm_90", "sm_100")
    subprocess.run([nvcc, "-fatbin", "-rdc=true", "-DNO_SCALED_COPY", str(RDC / MM), "-o", str(fat),
                    *[f"-gencode=arch=compute_{a[3:]},code={a}" for a in archs]],
                   check=True, capture_output=True)
    img = read_binary(str(fat), "k.fatbin", fat.read_bytes())
    for arch in archs:
        _, _, log = rdc_by_hand(arch, [RDC / MM], tmp_path, "-DNO_SCALED_COPY")
        assert {k: (v.registers_per_thread, v.static_shared_memory)
                for k, v in img.sass[arch].items()} == nvlink_says(log, arch), arch


# --- what an audit on public code found (2026-12-04) -------------------------------------------

CALLS = """struct B { __device__ virtual float f(float x) { return x; } };
struct D : B {
  __device__ float f(float x) override {
    float b[8];
    for (int i = 0; i < 8; i++) b[i] = x * i;
    return b[(int)x & 7];
  }
};
__global__ void v(float* a) {
  D d;
  B* p = (threadIdx.x & 1) ? (B*)&d : new B();
  a[threadIdx.x] = p->f(a[0]);
}
"""


def test_the_stack_counts_what_a_kernel_calls(tmp_path: Path) -> None:
    """The stack column is the kernel's with its callees' frames: ptxas' "cumulative stack
    size" (a log; the kernel's own frame alone was 0 for cuda-samples' newdelete kernels
    that need 8-32 B), and in a binary the larger of the frame and EIATTR_MIN_STACK_SIZE
    (a device-linked image's final stack; in this object both say the cumulative size)."""
    from occupancy.build.resources import parse_ptxas_log

    log = ("ptxas info    : Compiling entry function '_Z4k' for 'sm_90'\n"
           "ptxas info    : Function properties for _Z4k\n"
           "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
           "ptxas info    : Used 27 registers, used 0 barriers, 32 bytes cumulative stack size\n")
    assert parse_ptxas_log(log)["sm_90"]["_Z4k"].stack_frame_bytes == 32
    need(nvcc_path(), "nvcc")
    src = tmp_path / "calls.cu"
    src.write_text(CALLS)
    (res,) = compile_build(make_build(src, "sm_90")).values()
    out = subprocess.run([str(nvcc_path()), "-arch=sm_90", "-c", "-Xptxas", "-v", str(src), "-o",
                          str(tmp_path / "calls.o")], capture_output=True, text=True, check=True)
    own = int(re.search(r"(\d+) bytes stack frame", out.stderr).group(1))  # type: ignore[union-attr]
    cumulative = int(re.search(r"(\d+) bytes cumulative stack size", out.stderr).group(1))  # type: ignore[union-attr]
    assert cumulative > own and res.stack_frame_bytes == cumulative  # the callee's frame counts
    img = read_binary(str(tmp_path / "calls.o"), "calls.o", (tmp_path / "calls.o").read_bytes())
    assert [r.stack_frame_bytes for r in img.sass["sm_90"].values()] == [cumulative]


def test_a_header_of_kernels_compiles_and_a_file_without_one_says_so(tmp_path: Path) -> None:
    """nvcc knows a source by its suffix: a .cuh of kernels is compiled as CUDA (`-x cu`);
    a .cu with no kernel is an error naming it, as a binary without one is."""
    from click.testing import CliRunner

    from occupancy.cli import main

    need(nvcc_path(), "nvcc")
    (tmp_path / "k.cuh").write_text("__global__ void twice(float* a) { a[threadIdx.x] *= 2; }\n")
    (tmp_path / "none.cu").write_text("__device__ float same(float x) { return x; }\n")
    r = CliRunner().invoke(main, ["resources", str(tmp_path / "k.cuh"), "-d", "h200", "--json"])
    assert r.exit_code == 0, r.output
    assert "twice" in r.stdout
    r = CliRunner().invoke(main, ["resources", str(tmp_path / "none.cu"), "-d", "h200"])
    assert r.exit_code == 2 and "no kernels found" in r.stderr  # type: ignore[attr-defined]


def test_resources_estimates_below_sm_50_as_check_does(tmp_path: Path) -> None:
    """`-d k20c` (sm_35, which no compiler here targets) lists sm_50's figures marked as an
    estimate, as `check` does, and does not sink the other devices' rows."""
    import json

    from click.testing import CliRunner

    from occupancy.cli import main

    (tmp_path / "k.cu").write_text("__global__ void twice(float* a) { a[threadIdx.x] *= 2; }\n")
    r = CliRunner().invoke(main, ["resources", str(tmp_path / "k.cu"), "-d", "k20c", "-d", "t4",
                                  "--json"])
    if r.exit_code == 2 and "no compiler" in r.stderr:  # type: ignore[attr-defined]
        pytest.skip("no compiler for sm_50 or sm_75 here")
    assert r.exit_code == 0, r.output
    rows = {k["arch"]: k for k in json.loads(r.stdout)}
    assert set(rows) == {"sm_35", "sm_75"}
    assert rows["sm_35"]["resources_source"].startswith("estimate (")
    assert "no compiler targets sm_35" in rows["sm_35"]["resources_source"]
    assert not rows["sm_75"]["resources_source"].startswith("estimate")


def test_the_starter_manifest_keeps_two_kernels_of_one_name(tmp_path: Path) -> None:
    """An extern "C" vectorAdd beside a C++ one (a kept log of cuda-samples' two builds):
    --manifest writes an entry for each, the C++ one by its mangled name, and check passes
    both at their own registers (one entry took the name of both before)."""
    from click.testing import CliRunner

    from occupancy.cli import main

    log = tmp_path / "two.log"
    log.write_text(
        "ptxas info    : Compiling entry function '_Z9vectorAddPKfS0_Pfi' for 'sm_90'\n"
        "ptxas info    : Function properties for _Z9vectorAddPKfS0_Pfi\n"
        "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Used 15 registers, used 0 barriers\n"
        "ptxas info    : Compiling entry function 'vectorAdd' for 'sm_90'\n"
        "ptxas info    : Function properties for vectorAdd\n"
        "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Used 12 registers, used 0 barriers\n")
    r = CliRunner().invoke(main, ["resources", str(log), "-d", "h200", "--manifest"])
    assert r.exit_code == 0, r.output
    (tmp_path / "m.yaml").write_text(r.stdout)
    assert 'function: "_Z9vectorAddPKfS0_Pfi"' in r.stdout and 'function: "vectorAdd"' in r.stdout
    r = CliRunner().invoke(main, ["check", str(tmp_path / "m.yaml"), "--format", "json"])
    assert r.exit_code == 0, r.output
    import json

    got = sorted(v["registers_per_thread"] for v in json.loads(r.stdout)["results"])
    assert got == [12, 15]


def test_a_file_local_function_is_demangled() -> None:
    """nvcc names a function local to its file __nv_static_<n>__<hash>_<file>__<mangled> (the
    device runtime's kernels an -rdc link brings, a static kernel): its mangled part is
    demangled and marked; a name with nothing mangled after the prefix stays as it is."""
    from occupancy.build.compilers import _demangler, demangle

    need(_demangler(), "a demangler (c++filt)")
    local = ("__nv_static_52__f4510a67_22_cuda_device_runtime_cu_a2d7a4b6__"
             "Z16memset_3d_deviceIjLi0ELi0ELi0EEv12MemsetParamsIT_E")
    got = demangle([local, "_Z6kernelPf", "__nv_static_x", "__nv_static_" + "a" * 100_000])
    assert got[local] == "void memset_3d_device<unsigned int, 0, 0, 0>(MemsetParams<unsigned int>) " \
        "[file-local]"
    assert got["_Z6kernelPf"] == "kernel(float*)"
    assert got["__nv_static_x"] == "__nv_static_x"


def test_an_rdc_file_local_function_is_named_without_its_file_namespace() -> None:
    """An -rdc compile puts a static or anonymous-namespace device function in a namespace
    named for its file (_INTERNAL_<hash>_<n>_<file>_cu_<hash>): verdicts name the function,
    marked file-local, not the namespace."""
    from occupancy.build.compilers import _demangler, demangle

    need(_demangler(), "a demangler (c++filt)")
    heavy = "_ZN35_INTERNAL_a7ac0bb9_5_st_cu_09a879685heavyEPKfi"
    anon = "_ZN35_INTERNAL_a7ac0bb9_5_st_cu_09a8796837_GLOBAL__N__a7ac0bb9_5_st_cu_09a879684anonEPKf"
    got = demangle([heavy, anon, "_Z6kernelPf"])
    assert got[heavy] == "heavy(float const*, int) [file-local]"
    assert got[anon] == "(anonymous namespace)::anon(float const*) [file-local]"
    assert got["_Z6kernelPf"] == "kernel(float*)"
