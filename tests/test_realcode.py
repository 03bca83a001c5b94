"""`check` on real multi-file code: every number equals what ptxas prints for the same build."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from occupancy import load_device
from occupancy.build.builds import _nvrtc_ptx
from occupancy.build.compilers import Build, make_build, nvcc_path, nvrtc_compiler
from occupancy.build.images import read_binary, resources_for_device
from occupancy.build.resolve import CheckResolver
from occupancy.cli import main
from occupancy.core.solver import solve
from occupancy.gate.check import evaluate
from occupancy.inputs.manifest import load_manifest
from tests.needs import need

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "tests" / "fixtures" / "project"
STUBS = ROOT / "tests" / "fixtures" / "cublas_stub"
LLMC = ROOT.parent / "shared" / "realcode" / "llm.c" / "dev" / "cuda"
# "Used 96 registers, used 1 barriers, 16 bytes cumulative stack size, 8192 bytes smem":
# the smem figure may come after other fields.
_USED = re.compile(r"Function properties for (\S+)\n.*\n.*Used (\d+) registers(?:[^\n]*?(\d+) bytes smem)?")


def ptxas_says(log: str) -> dict[str, tuple[int, int]]:
    """(registers, static smem) per mangled kernel from a `ptxas -v` log, read here with a
    regex of the test's own, not the tool's parser."""
    return {m.group(1): (int(m.group(2)), int(m.group(3) or 0)) for m in _USED.finditer(log)}


def reference_build(b: Build) -> dict[str, tuple[int, int]]:
    """The same build, run by hand: nvcc -Xptxas -v, or NVRTC then ptxas -v."""
    defs = [f"-D{k}={v}" for k, v in b.defines]
    incs = [f"-I{d}" for d in b.include_dirs]
    if b.arch >= "sm_75" and len(b.arch) == 5 or len(b.arch) > 5:
        nvcc = nvcc_path()
        assert nvcc
        if b.rdc:  # the device link fixes registers and smem: nvlink's own report
            import tempfile

            from tests.test_realbuilds import nvlink_says, rdc_by_hand
            with tempfile.TemporaryDirectory() as tmp:
                _, _, log = rdc_by_hand(b.arch, [Path(b.source), *map(Path, b.link)], Path(tmp),
                                        *b.flags, *incs, *defs)
            return nvlink_says(log, b.arch)
        r = subprocess.run([nvcc, "-cubin", f"-arch={b.arch}", "-Xptxas", "-v", *b.flags, *incs,
                            *defs, b.source, "-o", os.devnull], capture_output=True, text=True,
                           check=True)
        return ptxas_says(r.stderr + r.stdout)
    c = nvrtc_compiler()
    assert c
    ptx, _ = _nvrtc_ptx(c, b, Path(b.source).read_text())
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "k.ptx"
        path.write_text(ptx)
        p = subprocess.run([c.ptxas, f"-arch={b.arch}", "-v", *(["-c"] if b.rdc else []),
                            str(path), "-o", os.devnull], capture_output=True, text=True, check=True)
    return ptxas_says(p.stderr + p.stdout)


def _verdicts(manifest: Path) -> list:  # type: ignore[type-arg]
    return evaluate(load_manifest(manifest), CheckResolver())


def _beside_project(tmp_path: Path, text: str, name: str = "launches.yaml") -> Path:
    """A variant of the project's manifest written in tmp_path, never into the checked-in
    fixture: its relative paths (include_dirs, source, link) made absolute, so it builds
    exactly what the fixture's own manifest builds (the same cache entries)."""
    import yaml

    def absolute(path: str) -> str:
        return path if os.path.isabs(path) else str(PROJECT / path)

    doc = yaml.safe_load(text)
    for entry in [doc, *doc["kernels"]]:
        for key in ("include_dirs", "link"):
            if key in entry:
                entry[key] = [absolute(d) for d in entry[key]]
        if "source" in entry:
            entry["source"] = absolute(entry["source"])
    p = tmp_path / name
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return p


@pytest.mark.slow
def test_project_equals_ptxas_through_nvrtc_and_nvcc() -> None:
    """The project's manifest on one device per compiler (GTX 1080: NVRTC + ptxas 12.9;
    H100: nvcc 13): every entry's registers and shared memory equal ptxas's own report,
    (The manifest's V100 and A100 take the same two paths; -rdc builds are checked
    against nvlink's own report in tests/test_realbuilds.py.)"""
    import dataclasses

    need(nvcc_path(), "nvcc")
    need(nvrtc_compiler(), "NVRTC and ptxas 12.9 (the compiler extra)")
    m = load_manifest(PROJECT / "launches.yaml")
    assert list(m.devices) == ["gtx1080", "v100", "a100", "h100"]
    two = {k: m.devices[k] for k in ("gtx1080", "h100")}
    m = dataclasses.replace(m, devices=two, kernels=tuple(
        dataclasses.replace(k, devices=tuple(d for d in k.devices if d in two)) for k in m.kernels
        if not k.link))
    verdicts = evaluate(m, CheckResolver())
    assert len(verdicts) == 5 * 2  # local_array is not in the manifest, extern_call links
    assert all(v.status == "pass" for v in verdicts), [(v.kernel, v.device, v.problems)
                                                        for v in verdicts if not v.ok]
    archs = {v.registers_source.split()[-1] for v in verdicts}
    assert archs == {"sm_61", "sm_90"}
    specs = {s.name: s for s in m.kernels}
    truths: dict[object, dict[str, tuple[int, int]]] = {}  # four entries share one build
    for v in verdicts:
        spec, dev = specs[v.kernel], m.devices[v.device]
        b = make_build(spec.source or "", f"sm_{dev.cc_major}{dev.cc_minor}",
                       include_dirs=spec.include_dirs, flags=spec.flags, defines=spec.defines,
                       link=spec.link)
        if b not in truths:
            truths[b] = reference_build(b)
        truth = truths[b]
        assert v.resources is not None
        assert truth[v.resources.function] == (v.registers_per_thread,
                                               v.resources.static_shared_memory), (v.kernel, v.device)
    big = [v for v in verdicts if v.kernel == "staged_big"]
    assert all(v.resources and v.resources.static_shared_memory == 4096 * 4 for v in big)


@pytest.mark.slow
def test_typed_defines_and_the_header_beside_the_source(tmp_path: Path) -> None:
    need(nvcc_path(), "nvcc")
    text = (PROJECT / "launches.yaml").read_text()
    for value, smem in (("true", 16384), ("false", 1024), ("0", 1024), ("2", 16384)):
        p = _beside_project(tmp_path, text.replace("{USE_BIG_TILE: true}", f"{{USE_BIG_TILE: {value}}}")
                            .replace("[gtx1080, v100, a100, h100]", "[a100]"), f"typed-{value}.yaml")
        (v,) = [x for x in _verdicts(p) if x.kernel == "staged_big"]
        assert v.resources and v.resources.static_shared_memory == smem, value


@pytest.mark.slow
def test_extern_device_call_needs_rdc_and_the_error_names_path_kernel_device(
        tmp_path: Path) -> None:
    need(nvcc_path(), "nvcc")
    p = _beside_project(tmp_path, (PROJECT / "launches.yaml").read_text()
                        .replace("-rdc=true, ", "").replace("    link: [src/helper.cu]\n", "")
                        .replace("[gtx1080, v100, a100, h100]", "[a100]"), "nordc.yaml")
    verdicts = _verdicts(p)
    r = CliRunner().invoke(main, ["check", str(p), "--format", "github"])
    (bad,) = [v for v in verdicts if v.kernel == "extern_call"]
    assert bad.status == "error" and "src/kernels.cu for sm_80" in bad.problems[0]
    # the source as the manifest names it (absolute here), never the compile's temp folder
    shown = bad.problems[0].replace(str(PROJECT), "PROJECT")
    assert "/tmp" not in shown and tempfile.gettempdir() not in shown, shown
    assert "Unresolved extern function" in bad.problems[0]
    assert all(v.ok for v in verdicts if v.kernel != "extern_call")
    assert r.exit_code == 2 and "title=extern_call on a100::" in r.stdout


@pytest.mark.slow
def test_launch_bound_from_the_compiler_refuses_a_bigger_block(tmp_path: Path) -> None:
    need(nvcc_path(), "nvcc")
    p = _beside_project(tmp_path, (PROJECT / "launches.yaml").read_text().replace(
        "function: bounded\n    block: 128", "function: bounded\n    block: 256")
        .replace("[gtx1080, v100, a100, h100]", "[h100]"), "bound.yaml")
    (v,) = [x for x in _verdicts(p) if x.kernel == "bounded"]
    assert v.status == "fail" and "launch bound of 128" in v.problems[0]


def test_names_as_people_write_them_and_ambiguity(tmp_path: Path) -> None:
    need(nvcc_path(), "nvcc")
    p = _beside_project(tmp_path, "devices: [a100]\ninclude_dirs: [include]\nkernels:\n"
                        "  - {name: a, source: src/kernels.cu, function: tiled_transpose, block: 256}\n"
                        "  - {name: b, source: src/kernels.cu, function: nope, block: 256}\n"
                        "  - {name: c, source: src/kernels.cu, function: _Z6staticPf, block: 256}\n"
                        "  - {name: scale, source: src/kernels.cu, block: 256}\n", "names.yaml")
    a, b, c, d = _verdicts(p)
    assert a.status == "error" and "matches 2 kernels" in a.problems[0]
    assert "tiled_transpose<16, false>" in a.problems[0] and "tiled_transpose<32, true>" in a.problems[0]
    assert b.status == "error" and "demo::scale" in b.problems[0]
    assert c.status == "error"
    assert d.ok and d.resources and d.resources.function == "_ZN4demo5scaleEPfi"


@pytest.mark.slow
def test_header_edit_invalidates_the_cache(tmp_path: Path) -> None:
    need(nvcc_path(), "nvcc")
    proj = tmp_path / "proj"
    shutil.copytree(PROJECT, proj)
    m = proj / "staged.yaml"  # the one entry whose shared memory the header sets
    m.write_text("devices: [a100]\ninclude_dirs: [include]\nflags: [-std=c++17]\nkernels:\n"
                 "  - name: staged_big\n    source: src/kernels.cu\n    function: staged\n"
                 "    defines: {USE_BIG_TILE: true}\n    block: 256\n")

    def smem() -> int:
        (v,) = [x for x in _verdicts(m) if x.kernel == "staged_big"]
        assert v.resources
        return v.resources.static_shared_memory

    assert smem() == 16384
    cfg = proj / "include" / "tile_config.h"
    cfg.write_text(cfg.read_text().replace("#define BIG 4096", "#define BIG 2048"))
    assert smem() == 8192


@pytest.mark.slow
def test_llmc_kernels(tmp_path: Path) -> None:
    need(nvcc_path(), "nvcc")
    if not LLMC.is_dir():
        need(None, f"the llm.c corpus at {LLMC}")
    p = tmp_path / "llmc.yaml"
    names = {"gelu_forward": "gelu_forward_kernel2", "softmax_forward": "softmax_forward_kernel7",
             "layernorm_forward": "layernorm_forward_kernel3", "adamw": "adamw_kernel2",
             "encoder_forward": "encoder_forward_kernel3", "residual_forward": "residual_forward_kernel2"}
    lines = ["devices: [h100, gtx1080]", f"include_dirs: [{STUBS}]",
             "flags: [-std=c++17, --use_fast_math]", "kernels:"]
    for f, fn in names.items():
        lines += [f"  - name: {fn}", f"    source: {LLMC / (f + '.cu')}", "    block: 256"]
    p.write_text("\n".join(lines) + "\n")
    m = load_manifest(p)
    verdicts = evaluate(m, CheckResolver())
    assert len(verdicts) == 12
    for v in verdicts:
        if v.device == "gtx1080":  # host code: NVRTC cannot build it, the error says why
            assert v.status == "error" and "CUDA 12 nvcc" in v.problems[0], v.problems
            continue
        assert v.status == "pass" and v.resources, (v.kernel, v.device, v.problems)
        dev = m.devices[v.device]
        spec = next(s for s in m.kernels if s.name == v.kernel)
        b = make_build(spec.source or "", f"sm_{dev.cc_major}{dev.cc_minor}",
                       include_dirs=spec.include_dirs, flags=spec.flags)
        assert reference_build(b)[v.resources.function] == (
            v.registers_per_thread, v.resources.static_shared_memory), (v.kernel, v.device)


def _nvcc(*args: str) -> None:
    nvcc = nvcc_path()
    assert nvcc
    subprocess.run([nvcc, *args], check=True, capture_output=True)


@pytest.mark.slow
def test_multi_arch_ptxas_log_is_read_per_arch(tmp_path: Path) -> None:
    need(nvcc_path(), "nvcc")
    nvcc = nvcc_path()
    assert nvcc
    r = subprocess.run([nvcc, "-fatbin", "-gencode", "arch=compute_75,code=sm_75", "-gencode",
                        "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=sm_90",
                        "-Xptxas", "-v", f"-I{PROJECT / 'include'}", "-DUSE_BIG_TILE=1",
                        str(PROJECT / "src" / "kernels.cu"), "-o", os.devnull],
                       capture_output=True, text=True, check=True)
    log = tmp_path / "build.log"
    log.write_text(r.stderr + r.stdout)
    p = tmp_path / "m.yaml"
    p.write_text("devices: [t4, a100, h100, gtx1080]\nkernels:\n"
                 "  - {name: t, ptxas_log: build.log, function: 'tiled_transpose<32, true>', block: 256}\n")
    verdicts = _verdicts(p)
    for v in verdicts[:3]:
        assert v.ok and v.registers_source.endswith({"t4": "sm_75", "a100": "sm_80",
                                                     "h100": "sm_90"}[v.device])
    regs = {v.device: v.registers_per_thread for v in verdicts[:3]}
    truth = {}
    # Against the per-arch cubins of the same build:
    for arch, dev in (("sm_75", "t4"), ("sm_80", "a100"), ("sm_90", "h100")):
        out = tmp_path / f"{arch}.cubin"
        _nvcc("-cubin", f"-arch={arch}", f"-I{PROJECT / 'include'}", "-DUSE_BIG_TILE=1",
              str(PROJECT / "src" / "kernels.cu"), "-o", str(out))
        img = read_binary(str(out), out.name, out.read_bytes())
        truth[dev] = resources_for_device(img, load_device(dev), out.name)[
            "_Z15tiled_transposeILi32ELb1EEvPKfPfi"].registers_per_thread
    assert regs == truth
    assert verdicts[3].status == "error" and "no section for sm_61" in verdicts[3].problems[0]


@pytest.mark.slow
def test_binaries_per_arch_sass_jit_and_errors(tmp_path: Path) -> None:
    need(nvcc_path(), "nvcc")
    from occupancy.build.images import cuobjdump_path

    need(cuobjdump_path(), "cuobjdump (the compiler extra)")
    src = str(PROJECT / "src" / "kernels.cu")
    inc = f"-I{PROJECT / 'include'}"
    _nvcc("-fatbin", "-gencode", "arch=compute_80,code=sm_80", "-gencode",
          "arch=compute_80,code=compute_80", inc, src, "-o", str(tmp_path / "k.fatbin"))
    _nvcc("-cubin", "-arch=sm_80", inc, src, "-o", str(tmp_path / "k80.cubin"))
    _nvcc("-cubin", "-arch=sm_90", "-maxrregcount=32", inc, src, "-o", str(tmp_path / "k90.cubin"))
    p = tmp_path / "m.yaml"
    p.write_text(
        "kernels:\n"
        "  - {name: fat, cubin: k.fatbin, function: demo::scale, block: 256,"
        " devices: [a100, rtx3090, h100, v100]}\n"
        "  - {name: bare, cubin: k80.cubin, function: demo::scale, block: 256, devices: [a100, h100]}\n"
        "  - {name: bound, cubin: k80.cubin, function: bounded, block: 512, devices: [a100]}\n"
        "  - {name: local, cubin: k90.cubin, function: local_array, block: 256, devices: [h100],"
        " no_spills: true}\n")
    v = {(x.kernel, x.device): x for x in _verdicts(p)}
    assert v[("fat", "a100")].ok and v[("fat", "a100")].registers_source.endswith("sm_80")
    assert v[("fat", "rtx3090")].ok and v[("fat", "rtx3090")].registers_source.endswith("sm_80")
    jit = v[("fat", "h100")]
    assert jit.ok and "JIT from compute_80" in jit.registers_source and jit.registers_source.endswith("sm_90")
    assert v[("fat", "v100")].status == "error" and "k.fatbin" in v[("fat", "v100")].problems[0]
    assert "sm_70" in v[("fat", "v100")].problems[0]
    assert v[("bare", "a100")].ok
    assert v[("bare", "h100")].status == "error" and "SASS sm_80" in v[("bare", "h100")].problems[0]
    assert v[("bound", "a100")].status == "fail" and "launch bound of 128" in v[("bound", "a100")].problems[0]
    local = v[("local", "h100")]
    assert local.status == "fail" and "stack frame" in local.problems[0], local.problems


def test_static_shared_memory_over_48_kb_cannot_launch() -> None:
    a100 = load_device("a100")
    r = solve(a100, 256, 32, 60 * 1024, 0, opt_in=True)
    assert r.active_blocks_per_sm == 0 and "move the array to dynamic shared memory" in r.cannot_launch[0]
    ok = solve(a100, 256, 32, 0, 60 * 1024, opt_in=True)
    assert ok.active_blocks_per_sm == 2 and ok.requires_opt_in
    r = CliRunner().invoke(main, ["calc", "-d", "a100", "-t", "256", "--smem", "60K"])
    out = " ".join(r.stdout.split())
    assert "dynamic shared memory" in out and "MaxDynamicSharedMemorySize, 0)" not in out


@pytest.mark.slow
def test_resources_command_lists_and_starts_a_manifest(tmp_path: Path) -> None:
    need(nvcc_path(), "nvcc")
    import json

    src = str(PROJECT / "src" / "kernels.cu")
    r = CliRunner().invoke(main, ["resources", src, "-I", str(PROJECT / "include"), "--arch",
                                  "sm_80", "--json"])
    assert r.exit_code == 0, r.output
    rows = {d["function"]: d for d in json.loads(r.stdout)}
    k = rows["void tiled_transpose<32, true>(float const*, float*, int)"]
    assert k["mangled"] == "_Z15tiled_transposeILi32ELb1EEvPKfPfi" and k["static_shared_memory"] == 4224
    assert rows["bounded(__half*)"]["max_threads_per_block"] == 128
    assert rows["local_array(float*, int)"]["stack_frame_bytes"] > 0
    r = CliRunner().invoke(main, ["resources", src, "-I", str(PROJECT / "include"), "-d", "a100",
                                  "--manifest"])
    m = tmp_path / "starter.yaml"
    m.write_text(r.stdout)  # as written: it keeps the -I it was given
    verdicts = _verdicts(m)
    assert len(verdicts) == 6 and all(x.status != "error" for x in verdicts), \
        [x.problems for x in verdicts]
