"""What users save of a build, read as the driver would load it: nvlink's report alone
(-Xnvlink -v, which names no target where it links one), a -rdc compile's log with nvlink's
report, relocatable objects (nvcc -dc) that do or do not link, a fatbin asked for an arch it
cannot run on, and a truncated cubin. Real nvcc and nvlink (tests/fixtures/saved)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from occupancy.build.compilers import nvcc_path
from occupancy.build.link import nvlink_path
from occupancy.build.resolve import CheckResolver
from occupancy.cli import main
from occupancy.gate.check import evaluate
from occupancy.inputs.manifest import load_manifest
from tests.needs import need

SAVED = Path(__file__).resolve().parent / "fixtures" / "saved"


# a device function with a stack frame (a local array), called or not by a kernel
FRAMED = ("__device__ __noinline__ float helper(const float* p, int n) {\n"
          "  float a[16]; for (int i = 0; i < 16; i++) a[i] = p[i * n];\n"
          "  float s = 0; for (int i = 0; i < n; i++) s += a[i % 16]; return s; }\n")


def _nvcc_log(tmp_path: Path, *args: str) -> str:
    """nvcc's output (ptxas -v on) for ARGS, run in tmp_path."""
    need(nvcc_path(), "nvcc")
    nvcc = nvcc_path()
    assert nvcc
    r = subprocess.run([nvcc, "-arch=sm_90", "-Xptxas", "-v", *args], capture_output=True,
                       text=True, check=True, cwd=tmp_path)
    return r.stdout + r.stderr


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OCCUPANCY_CACHE_DIR", str(tmp_path / "cache"))


def _nvcc(*args: str) -> str:
    need(nvcc_path(), "nvcc")
    r = subprocess.run([nvcc_path(), *args], capture_output=True, text=True, check=True)
    return r.stdout + r.stderr


def _resources(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, ["resources", *args], env={"COLUMNS": "200"})
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r.exit_code, r.stdout, r.stderr


def _verdicts(tmp: Path, entries: str) -> dict[str, object]:
    (tmp / "m.yaml").write_text("devices: [h100]\nkernels:\n" + entries)
    return {v.kernel: v for v in evaluate(load_manifest(tmp / "m.yaml"), CheckResolver())}


def _linked_by_hand(tmp: Path) -> str:
    """a.cu and b.cu compiled -rdc for sm_90 and linked by nvlink -v: its report."""
    need(nvlink_path(), "nvlink")
    for f in ("a", "b"):
        _nvcc("-rdc=true", "-cubin", "-arch=sm_90", "-maxrregcount=32", str(SAVED / f"{f}.cu"),
              "-o", str(tmp / f"{f}.cubin"))
    r = subprocess.run([nvlink_path(), "-v", "-arch=sm_90", str(tmp / "a.cubin"),
                        str(tmp / "b.cubin"), "-o", str(tmp / "l.cubin")],
                       capture_output=True, text=True, check=True)
    return r.stdout + r.stderr


def test_nvlink_s_report_alone_gives_the_source_s_shared_memory(tmp_path: Path) -> None:
    """nvlink 13's sm_90 report counts the 1 KB the driver reserves; with no target named,
    it is taken out once the device's arch is known, as for the source."""
    log = _linked_by_hand(tmp_path)
    assert "(target:" not in log and "46024 bytes smem" in log
    (tmp_path / "dlink.log").write_text(log)
    v = _verdicts(tmp_path, "  - name: big\n    ptxas_log: dlink.log\n    function: big_smem\n"
                            "    flags: [-rdc=true]\n    block: 128\n"
                            f"  - name: src\n    source: {SAVED / 'a.cu'}\n    function: big_smem\n"
                            f"    flags: [-rdc=true]\n    link: [{SAVED / 'b.cu'}]\n    block: 128\n"
                            "  - name: remote\n    ptxas_log: dlink.log\n    function: k_remote\n"
                            "    flags: [-rdc=true]\n    block: 128\n    no_spills: true\n")
    assert v["big"].resources.static_shared_memory == v["src"].resources.static_shared_memory == 45000
    # resources reads the log for the arch asked, as check does
    rows = json.loads(_resources(str(tmp_path / "dlink.log"), "--arch", "sm_90", "--json")[1])
    assert {(r["arch"], r["static_shared_memory"]) for r in rows if r["mangled"] == "_Z8big_smemPf"} \
        == {("sm_90", 45000)}
    assert v["big"].result.active_blocks_per_sm == v["src"].result.active_blocks_per_sm
    # nvlink reports no spills: only the stack frame is known
    assert not v["remote"].ok and "stack frame" in v["remote"].problems[0]


def test_a_compile_log_with_nvlink_s_report_keeps_what_it_cannot_attribute(tmp_path: Path) -> None:
    need(nvlink_path(), "nvlink")
    _nvcc("-rdc=true", "-cubin", "-arch=sm_90", "-maxrregcount=32", "-Xptxas", "-v",
          str(SAVED / "b.cu"), "-o", str(tmp_path / "b.cubin"))
    log = _nvcc("-rdc=true", "-arch=sm_90", "-maxrregcount=32", "-Xptxas", "-v", "-Xnvlink", "-v",
                "-cubin", str(SAVED / "b.cu"), "-o", str(tmp_path / "b2.cubin"))
    log += _nvcc("-rdc=true", "-arch=sm_90", "-maxrregcount=32", "-Xptxas", "-v", "-Xnvlink", "-v",
                 str(SAVED / "a.cu"), str(SAVED / "b.cu"), "-dlink", "-o", str(tmp_path / "l.o"))
    (tmp_path / "both.log").write_text(log)
    v = _verdicts(tmp_path, "  - name: remote\n    ptxas_log: both.log\n    function: k_remote\n"
                            "    flags: [-rdc=true]\n    block: 256\n    no_spills: true\n")
    assert not v["remote"].ok and "remote_heavy(float const*, int)" in v["remote"].problems[0]


def test_a_relocatable_compile_s_log_says_its_numbers_are_not_final(tmp_path: Path) -> None:
    log = _nvcc("-rdc=true", "-cubin", "-arch=sm_90", "-maxrregcount=32", "-Xptxas", "-v",
                str(SAVED / "a.cu"), "-o", str(tmp_path / "a.cubin"))
    (tmp_path / "a.log").write_text(log)
    code, out, _ = _resources(str(tmp_path / "a.log"))
    assert code == 0 and "final only after the device link" in out
    code, out, _ = _resources(str(SAVED / "a.cu"), "--link", str(SAVED / "b.cu"), "--arch", "sm_90",
                              "--flag=-rdc=true")
    assert code == 0 and "final only after the device link" not in out


def test_relocatable_objects_that_do_not_link_or_hold_no_kernel_say_so(tmp_path: Path) -> None:
    a, b = tmp_path / "a.o", tmp_path / "b.o"
    _nvcc("-dc", "-gencode", "arch=compute_90,code=sm_90", str(SAVED / "a.cu"), "-o", str(a))
    _nvcc("-dc", "-gencode", "arch=compute_90,code=sm_90", str(SAVED / "b.cu"), "-o", str(b))
    code, out, err = _resources(str(a), "--arch", "sm_90")
    assert code == 2 and out == "" and "remote_heavy(float const*, int)" in err
    assert err.count("Error: ") == 1 and "Traceback" not in err
    code, out, err = _resources(str(b))
    assert code == 2 and "no kernels in it" in err
    code, out, err = _resources(str(b), "--manifest", "-d", "h100")
    assert code == 2 and "kernels:" not in out
    (tmp_path / "m.yaml").write_text(f"devices: [a100, h100]\nkernels:\n  - name: k\n"
                                     f"    cubin: {a}\n    function: k_spill\n    block: 128\n")
    v = {x.device: x for x in evaluate(load_manifest(tmp_path / "m.yaml"), CheckResolver())}
    assert v["a100"].status == "error" and "SASS sm_90 (relocatable, not linked)" in v["a100"].problems[0]
    assert v["h100"].status == "error" and "remote_heavy(float const*, int)" in v["h100"].problems[0]


def test_an_arch_the_binary_cannot_run_on_is_an_error_beside_the_rest(tmp_path: Path) -> None:
    fat = tmp_path / "k.fatbin"
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(float* p) { p[threadIdx.x] = 1.f; }\n")
    _nvcc("-fatbin", "-gencode", "arch=compute_80,code=sm_80", "-gencode",
          "arch=compute_90,code=sm_90", str(src), "-o", str(fat))
    assert _resources(str(fat))[0] == 0
    code, out, err = _resources(str(fat), "--arch", "sm_86")  # the driver loads sm_80's SASS
    assert code == 0 and "sm_80" in out
    code, out, err = _resources(str(fat), "--arch", "sm_100")
    assert code == 2 and "sm_90" in out and "nothing the driver can load on sm_100" in err


def test_a_truncated_cubin_names_the_file(tmp_path: Path) -> None:
    cubin = tmp_path / "k.cubin"
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(float* p) { p[threadIdx.x] = 1.f; }\n")
    _nvcc("-cubin", "-arch=sm_90", str(src), "-o", str(cubin))
    (tmp_path / "cut.cubin").write_bytes(cubin.read_bytes()[:300])
    code, _, err = _resources(str(tmp_path / "cut.cubin"))
    assert code == 2 and f"{tmp_path / 'cut.cubin'}:" in err and "Traceback" not in err


def test_launch_bounds_minimum_blocks_from_an_nvcc_build(tmp_path: Path) -> None:
    src = tmp_path / "k.cu"
    src.write_text("__global__ void __launch_bounds__(128, 4) k(float* p) { p[threadIdx.x] = 1.f; }\n"
                   "__global__ void free_(float* p) { p[threadIdx.x] = 2.f; }\n")
    need(nvcc_path(), "nvcc")
    rows = {r["function"]: r for r in json.loads(_resources(str(src), "--arch", "sm_90", "--json")[1])}
    assert rows["k(float*)"]["min_blocks_per_sm"] == 4 and rows["k(float*)"]["max_threads_per_block"] == 128
    assert rows["free_(float*)"]["min_blocks_per_sm"] is None


def test_an_rdc_build_s_cache_key_holds_what_the_link_uses(monkeypatch: pytest.MonkeyPatch) -> None:
    """A link that failed for want of libcudadevrt (or a linker) is cached under the inputs
    it had: once they change, the build is tried again; other builds' keys do not hold them."""
    from occupancy.build import cache
    from occupancy.build.compilers import Compiler, make_build

    c = Compiler("nvcc", "/opt/x/bin/nvcc", "/opt/x/bin/ptxas", "13.0")
    rdc = make_build(SAVED / "a.cu", "sm_90", flags=["-rdc=true"])
    whole = make_build(SAVED / "a.cu", "sm_90")
    monkeypatch.setattr(cache, "linker_inputs", lambda arch, beside: ["/opt/x/bin/nvlink", None])
    before = cache._key(rdc, c), cache._key(whole, c)
    monkeypatch.setattr(cache, "linker_inputs",
                        lambda arch, beside: ["/opt/x/bin/nvlink", "/opt/x/lib64/libcudadevrt.a"])
    after = cache._key(rdc, c), cache._key(whole, c)
    assert before[0] != after[0] and before[1] == after[1]


def test_resources_device_links_other_sources_as_a_manifest_s_link(tmp_path: Path) -> None:
    """`resources a.cu --link b.cu --flag=-rdc=true`: the numbers nvlink reports for the two
    linked by hand; the starter manifest keeps the link; a missing one is named."""
    import re

    truth = {m.group(1): (int(m.group(2)), int(m.group(3))) for m in re.finditer(
        r"Function properties for '([^']+)':\n.*used (\d+) registers, used \d+ barriers, (\d+) stack",
        _linked_by_hand(tmp_path))}
    args = [str(SAVED / "a.cu"), "--link", str(SAVED / "b.cu"), "--arch", "sm_90",
            "--flag=-rdc=true", "--flag=-maxrregcount=32"]
    code, out, _ = _resources(*args, "--json")
    got = {row["mangled"]: (row["registers_per_thread"], row["stack_frame_bytes"])
           for row in json.loads(out)}
    assert code == 0 and got == truth and "_Z8k_remotePfPKf" in got
    code, out, _ = _resources(*args, "--manifest", "-d", "h100")
    assert code == 0 and out.count(f'link: ["{SAVED / "b.cu"}"]') == 3
    code, _, err = _resources(str(SAVED / "a.cu"), "--link", str(tmp_path / "gone.cu"))
    assert code == 2 and "--link" in err and "no such file" in err
    code, _, err = _resources(str(SAVED / "a.cu"), "--arch", "sm_90", "--flag=-rdc=true")
    assert code == 2 and "remote_heavy" in err and "--link FILE" in err


def test_link_is_checked_as_an_option_before_anything_compiles(tmp_path: Path) -> None:
    """Review and attack run, stop 40: --link without -rdc named the manifest's key; a binary
    or a non-source given --link was ignored or compiled as CUDA; a file listed and linked
    was linked with itself; no cap on how many."""
    a, b = str(SAVED / "a.cu"), str(SAVED / "b.cu")
    rdc = "--flag=-rdc=true"
    cases = [([a, "--link", b], "add --flag=-rdc=true"),
             ([a, "--link", b, rdc, "--flag=-rdc=false"], "add --flag=-rdc=true"),  # nvcc: last wins
             ([a, "--link", str(tmp_path), rdc], "not a CUDA source"),
             ([a, "--link", "/dev/null.cu", rdc], "no such file"),
             ([str(tmp_path / "k.cubin"), "--link", b, rdc], "is no CUDA source"),
             ([a, *[x for _ in range(65) for x in ("--link", b)], rdc], "at most 64")]
    (tmp_path / "k.cubin").write_bytes(b"\x7fELF")
    (tmp_path / "dir.cu").mkdir()
    cases.append(([a, "--link", str(tmp_path / "dir.cu"), rdc], "not a regular file"))
    for args, says in cases:
        code, out, err = _resources(*args)
        assert code == 2 and out == "" and says in err and err.count("Error: ") == 1, (args, err)
    need(nvcc_path(), "nvcc")
    code, out, err = _resources(a, b, "--link", b, "--arch", "sm_90", rdc, "--json")
    # b.cu is not linked with itself: it compiles, and holds no kernel of its own
    assert code == 2 and "Multiple definition" not in err and "b.cu: no kernels found" in err
    assert {r["file"] for r in json.loads(out)} == {a}
    c = str(tmp_path / "c.cu")  # two sources, each linked with b.cu: in the starter manifest too
    Path(c).write_text("__global__ void c_k(float* p) { p[0] = 1.f; }\n")
    code, out, _ = _resources(a, c, "--link", b, "--link", c, "-d", "h100", rdc, "--manifest")
    # a.cu's three kernels and c_k, which the image linked with c.cu holds; c.cu's own entry
    assert code == 0 and out.count(f'link: ["{b}", "{c}"]') == 4 and out.count(f'link: ["{b}"]') == 1


def test_a_kernel_in_a_linked_file_keeps_its_launch_bounds(tmp_path: Path) -> None:
    other = tmp_path / "other.cu"
    other.write_text("__global__ void __launch_bounds__(128, 4) other_k(float* p) { p[0] = 1.f; }\n")
    main_ = tmp_path / "main.cu"
    main_.write_text("__global__ void __launch_bounds__(256, 2) main_k(float* p) { p[0] = 2.f; }\n")
    need(nvcc_path(), "nvcc")
    code, out, _ = _resources(str(main_), "--link", str(other), "--arch", "sm_90",
                              "--flag=-rdc=true", "--json")
    got = {r["function"]: r["min_blocks_per_sm"] for r in json.loads(out)}
    assert code == 0 and got == {"main_k(float*)": 2, "other_k(float*)": 4}


def test_ptx_only_without_an_arch_says_which_to_give(tmp_path: Path) -> None:
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(float* p) { p[threadIdx.x] = 1.f; }\n")
    fat = tmp_path / "k.fatbin"
    _nvcc("-fatbin", "-gencode", "arch=compute_90,code=compute_90", str(src), "-o", str(fat))
    code, _, err = _resources(str(fat))
    assert code == 2 and "PTX only (compute_90" in err and "give --arch sm_90" in err
    code, out, _ = _resources(str(fat), "--arch", "sm_90")
    assert code == 0 and "JIT from compute_90" in out


def test_the_driver_loads_an_arch_specific_sass_on_its_own_arch_only() -> None:
    from occupancy.build.images import loaded_sass

    assert loaded_sass(["sm_100a"], "sm_100") == "sm_100a"
    assert loaded_sass(["sm_100a"], "sm_103") is None
    assert loaded_sass(["sm_80", "sm_86"], "sm_89") == "sm_86"
    assert loaded_sass(["sm_80", "sm_90"], "sm_100") is None


def test_rdc_hints_for_an_extern_function_and_nvrtc_s_device_launch(tmp_path: Path) -> None:
    code, _, err = _resources(str(SAVED / "a.cu"), "--arch", "sm_90")
    assert code == 2 and "Unresolved extern function" in err and "--flag=-rdc=true" in err
    cdp = Path(__file__).resolve().parent / "fixtures" / "rdc" / "cdp_parent.cu"
    from occupancy.build.compilers import nvrtc_compiler

    need(nvrtc_compiler(), "NVRTC")
    code, _, err = _resources(str(cdp), "--arch", "sm_61")
    assert code == 2 and "device-side kernel launch" in err and "-rdc=true" in err


def test_a_starter_manifest_names_a_log_by_what_it_holds(tmp_path: Path) -> None:
    log = tmp_path / "ptxas.out"  # any name: read as the ptxas log it is
    log.write_text("ptxas info    : Compiling entry function '_Z1kPf' for 'sm_90'\n"
                   "ptxas info    : Function properties for _Z1kPf\n"
                   "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                   "ptxas info    : Used 10 registers, used 0 barriers\n")
    code, out, _ = _resources(str(log), "--manifest", "-d", "h100")
    assert code == 0 and f'ptxas_log: "{log}"' in out and "cubin:" not in out


def test_a_manifest_s_link_list_is_capped(tmp_path: Path) -> None:
    """Attack run, stop 40: each file of `link:` is a compile, and nothing bounded them."""
    many = ", ".join([str(SAVED / "b.cu")] * 65)
    (tmp_path / "m.yaml").write_text(f"devices: [h100]\nkernels:\n  - name: k\n    source: "
                                     f"{SAVED / 'a.cu'}\n    flags: [-rdc=true]\n    link: [{many}]\n"
                                     "    block: 128\n")
    m = load_manifest(tmp_path / "m.yaml")
    problems = [str(e) for e in getattr(m, "errors", ())] + [
        p for v in evaluate(m, CheckResolver()) for p in v.problems]
    assert any("link lists 65 files; at most 64" in p for p in problems), problems


def test_arch_specific_builds_are_read_by_their_own_names(tmp_path: Path) -> None:
    """Second review, stop 40: an sm_90a cubin's e_flags say sm_90, so its SASS was filed as
    sm_90 (another arch's numbers beside sm_90's, by -gencode order) and sm_100a's loaded on
    sm_103; compute_90a PTX was JIT-compiled for sm_90 and failed."""
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(float* p) {\n#if defined(__CUDA_ARCH_FEAT_SM90_ALL)\n"
                   "  __shared__ float s[2048];\n#else\n  __shared__ float s[512];\n#endif\n"
                   "  s[threadIdx.x] = 1.f; __syncthreads(); p[threadIdx.x] = s[511 - threadIdx.x];\n}\n")
    both = tmp_path / "both.fatbin"
    _nvcc("-fatbin", "-gencode", "arch=compute_90a,code=sm_90a", "-gencode",
          "arch=compute_90,code=sm_90", str(src), "-o", str(both))
    rows = {r["arch"]: r["static_shared_memory"]
            for r in json.loads(_resources(str(both), "--json")[1])}
    assert rows == {"sm_90": 2048, "sm_90a": 8192}
    code, _, err = _resources(str(both), "--arch", "sm_100")
    assert code == 2 and "SASS sm_90a" in err
    ptx = tmp_path / "a.fatbin"
    _nvcc("-fatbin", "-gencode", "arch=compute_90a,code=compute_90a", str(src), "-o", str(ptx))
    code, _, err = _resources(str(ptx))
    assert code == 2 and "give --arch sm_90a " in err
    code, out, err = _resources(str(ptx), "--arch", "sm_90")
    assert code == 0 and "JIT from compute_90a" in out, err


def test_logs_follow_the_arch_asked_and_an_arch_specific_section_serves_its_arch(
        tmp_path: Path) -> None:
    from occupancy.build.resources import log_section, parse_ptxas_log

    log = ("ptxas info    : 0 bytes gmem\n"
           "ptxas info    : Compiling entry function '_Z1kPf' for 'sm_90a'\n"
           "ptxas info    : Function properties for _Z1kPf\n"
           "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
           "ptxas info    : Used 12 registers, used 0 barriers\n")
    assert log_section(parse_ptxas_log(log), "sm_90", "k.log")["_Z1kPf"].registers_per_thread == 12
    (tmp_path / "k.log").write_text(log)
    code, out, err = _resources(str(tmp_path / "k.log"), "--arch", "sm_90", "--arch", "sm_80")
    assert code == 2 and " sm_90 " in out and "no section for sm_80" in err
    # an older nvlink (CUDA 10/11) writes no barriers: the compile step's
    old = log + ("nvlink info    : Function properties for '_Z1kPf':\n"
                 "nvlink info    : used 30 registers, 0 stack, 0 bytes smem, 352 bytes cmem[0], "
                 "0 bytes lmem\n")
    (res,) = parse_ptxas_log(old)["sm_90a"].values()
    assert (res.registers_per_thread, res.barriers, res.linked) == (30, 0, True)


def test_one_file_twice_and_a_link_twice_are_one(tmp_path: Path) -> None:
    import os

    a, b = str(SAVED / "a.cu"), str(SAVED / "b.cu")
    dot_b = os.path.relpath(b)  # the same file by another path
    code, out, err = _resources(a, "--link", b, "--link", "./" + dot_b, "--arch", "sm_90",
                                "--flag=-rdc=true", "--json")
    assert code == 0 and "Multiple definition" not in err, err
    code, out, _ = _resources(a, "./" + os.path.relpath(a), "--link", b, "--arch", "sm_90",
                              "--flag=-rdc=true", "--json")
    assert code == 0 and len(json.loads(out)) == 3


def test_a_binary_s_link_error_does_not_send_users_to_link(tmp_path: Path) -> None:
    obj = tmp_path / "a.o"
    _nvcc("-dc", "-gencode", "arch=compute_90,code=sm_90", str(SAVED / "a.cu"), "-o", str(obj))
    code, _, err = _resources(str(obj), "--arch", "sm_90")
    assert code == 2 and "remote_heavy" in err and "--link" not in err and "`link:`" not in err


def test_the_last_rdc_flag_decides_as_nvcc_s_does() -> None:
    """nvcc takes the last of repeated -rdc values (warning 'incompatible redefinition'):
    `-rdc=true -rdc=false` builds whole-program code, so it neither device-links nor reads
    a log as relocatable; -dc is relocatable whatever else is said."""
    from occupancy.inputs.flags import is_rdc

    assert is_rdc(["-rdc=true"]) and is_rdc(["-rdc=false", "-dc"])
    assert is_rdc(["-rdc=false", "--relocatable-device-code=true"])
    assert not is_rdc(["-rdc=true", "-rdc=false"])
    assert is_rdc(["-dc", "-rdc=false"])  # -dc is relocatable: nvcc refuses the pair
    assert not is_rdc([]) and not is_rdc(["-G", "-lineinfo"])


@pytest.mark.slow
def test_check_refuses_a_log_that_reads_as_a_relocatable_compile_without_the_flag(
        tmp_path: Path) -> None:
    """A manifest entry naming the ptxas log of an -rdc compile, its flags not saying so: the
    log compiles `heavy` on its own and prints no kernel's cumulative stack, so k_spill's 24
    registers and no stack are the numbers before the link (32 and 280 after). `check` had
    passed on them; now it refuses them as it does with -rdc in the flags."""
    log = tmp_path / "a.log"
    rdc_log = _nvcc_log(tmp_path, "-rdc=true", "-c", str(SAVED / "a.cu"), "-o", "a.o")
    log.write_text(rdc_log)
    m = tmp_path / "m.yaml"
    m.write_text(f"devices: [h100]\nkernels:\n  - name: k_spill\n    ptxas_log: {log}\n"
                 "    block: [256]\n")
    (m.parent / "spill.yaml").write_text(m.read_text())
    (v,) = evaluate(load_manifest(m), CheckResolver())
    assert v.status == "error" and "relocatable compile" in v.problems[0], v.problems
    # a -G build also compiles a function on its own, but its kernel prints the cumulative
    # stack: a whole program, read as final
    (tmp_path / "g.cu").write_text(FRAMED + "__global__ void k_g(float* out, const float* p, "
                                   "int n) {\n  out[threadIdx.x] = helper(p, n); }\n")
    g_log = _nvcc_log(tmp_path, "-G", "-cubin", "g.cu", "-o", "g.cubin")
    assert "cumulative stack" in g_log
    log.write_text(g_log)
    m.write_text(m.read_text().replace("name: k_spill", "name: k_g"))
    (v,) = evaluate(load_manifest(m), CheckResolver())
    assert v.status != "error", v.problems
    # judged per compile (attack run): the -G build's log appended to the -rdc one's, in
    # either order, neither clears k_spill nor refuses k_g
    for both in (rdc_log + g_log, g_log + rdc_log):
        log.write_text(both)
        (v,) = evaluate(load_manifest(m), CheckResolver())
        assert v.status != "error", v.problems
        (v,) = evaluate(load_manifest(m.parent / "spill.yaml"), CheckResolver())
        assert v.status == "error" and "relocatable compile" in v.problems[0], v.problems


@pytest.mark.slow
def test_a_binary_s_unknown_spills_are_null_in_json(tmp_path: Path) -> None:
    """A cubin says its stack frame, not its spills: `resources --json` had said
    spill_stores_bytes 0 beside spill_bytes = the frame. Now null, and spills_known false;
    the same kernel from its source gives the spills ptxas reports."""
    src = tmp_path / "g.cu"
    src.write_text(FRAMED + "__global__ void k_g(float* out, const float* p, int n) {\n"
                   "  out[threadIdx.x] = helper(p, n); }\n")
    _nvcc_log(tmp_path, "-cubin", "g.cu", "-o", "g.cubin")
    code, out, err = _resources(str(tmp_path / "g.cubin"), "--json")
    assert code == 0, err
    (row,) = json.loads(out)
    assert row["spill_stores_bytes"] is None and row["spill_loads_bytes"] is None
    assert row["spills_known"] is False and row["spill_bytes"] == row["stack_frame_bytes"] > 0
    code, out, err = _resources(str(src), "--arch", "sm_90", "--json")
    (row,) = json.loads(out)
    assert code == 0 and row["spills_known"] is True and row["spill_stores_bytes"] == 0


@pytest.mark.slow
def test_a_bare_arch_specific_cubin_is_read_as_its_own_arch(tmp_path: Path) -> None:
    """A cubin built for sm_90a has the e_flags of an sm_90 one; its .nv.compat records say
    which. It had been listed as sm_90; now sm_90a, relocatable or linked, and the ordinary
    build stays sm_90."""
    from occupancy.build.binaries import elf_arch

    need(nvcc_path(), "nvcc")
    nvcc = nvcc_path()
    assert nvcc
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(int* p) { p[threadIdx.x] = 1; }\n")
    for arch, extra in (("sm_90a", []), ("sm_90", []), ("sm_90a", ["-rdc=true"])):
        out = tmp_path / f"k-{arch}-{len(extra)}.cubin"
        subprocess.run([nvcc, f"-arch={arch}", "-cubin", *extra, str(src), "-o", str(out)],
                       capture_output=True, text=True, check=True)
        assert elf_arch(out.read_bytes()) == arch
        code, text, err = _resources(str(out))
        assert code == 0 and f"   {arch} " in text and (arch == "sm_90a") == ("sm_90a" in text), text


@pytest.mark.slow
def test_one_file_of_a_several_file_rdc_log_and_the_g_flag(tmp_path: Path) -> None:
    """Second review, stop 52: in `nvcc -c -rdc=true m.cu b.cu`, m.cu's compile holds only
    a kernel that calls b.cu's function: nothing in it says relocatable, and it passed with
    its pre-link numbers; such a compile takes the log's word. A -G log whose kernel calls
    nothing beside a function compiled on its own reads as relocatable too, so the entry's
    -G (or --device-debug) says otherwise."""
    (tmp_path / "m.cu").write_text(
        "extern __device__ float remote_heavy(const float* p, int n);\n"
        "__global__ void k3(float* o, const float* p, int n) { o[0] = remote_heavy(p, n); }\n")
    (tmp_path / "two.log").write_text(_nvcc_log(tmp_path, "-rdc=true", "-c", "m.cu",
                                                str(SAVED / "b.cu")))
    m = tmp_path / "m.yaml"
    m.write_text("devices: [h100]\nkernels:\n  - name: k3\n    ptxas_log: two.log\n    block: [256]\n")
    (v,) = evaluate(load_manifest(m), CheckResolver())
    assert v.status == "error" and "relocatable compile" in v.problems[0], v.problems
    (tmp_path / "g.cu").write_text(FRAMED + "__global__ void kn(float* o) { o[threadIdx.x] = 1.f; }\n")
    (tmp_path / "g.log").write_text(_nvcc_log(tmp_path, "-G", "-cubin", "g.cu", "-o", "g.cubin"))
    for flags, refused in (("", True), ("    flags: [-G]\n", False),
                           ("    flags: [--device-debug]\n", False)):
        m.write_text("devices: [h100]\nkernels:\n  - name: kn\n    ptxas_log: g.log\n"
                     f"    block: [256]\n{flags}")
        (v,) = evaluate(load_manifest(m), CheckResolver())
        assert (v.status == "error") == refused, (flags, v.problems)
