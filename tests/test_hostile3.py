"""Hostile input, round 3 (an audit of 2026-12-04): a manifest that names its own compiler,
-o over a file the run read (a header, a linked source, a profile's parent) or through a
symbolic link, control characters in YAML, integers no record holds, an #include built
from a macro that reaches a FIFO, prints of a user's Python module on --json's stdout, a
ptxas log's overlong numbers, and a CuPy that fails to import."""

from __future__ import annotations

import os
import re
import stat
import sys
from pathlib import Path

import pytest

from occupancy.core.errors import OccupancyError
from tests.needs import need
from tests.test_hostile import one_error_line, run

PROFILE_PARENT = "extends: h200\nname: parent of a test profile\n"


def test_a_manifest_cannot_pick_a_program_to_run(tmp_path: Path) -> None:
    """`compilers:` naming a script of the repository's own is refused before anything
    runs; the user's leave (OCCUPANCY_TRUST_COMPILERS=1) lets it run."""
    tools = tmp_path / "tools"
    tools.mkdir()
    evil = tools / "nvcc"
    evil.write_text(f"#!/bin/sh\necho ran > {tmp_path / 'RAN'}\nexit 1\n")
    evil.chmod(evil.stat().st_mode | stat.S_IEXEC)
    (tools / "ptxas").write_text("")
    (tmp_path / "k.cu").write_text("__global__ void k(float* a) { a[0] = 1; }\n")
    (tmp_path / "m.yaml").write_text("devices: [v100]\ncompilers: {sm_70: tools/nvcc}\n"
                                     "kernels:\n  - {name: k, source: k.cu, block: 256}\n")
    r, _ = run(["check", "m.yaml"], tmp_path)
    one_error_line(r)
    assert "compilers.sm_70" in r.stderr and "OCCUPANCY_TRUST_COMPILERS=1" in r.stderr
    assert not (tmp_path / "RAN").exists()
    r, _ = run(["check", "m.yaml"], tmp_path, env={"OCCUPANCY_TRUST_COMPILERS": "1"})
    assert (tmp_path / "RAN").exists()  # the leave given: the named program is the compiler


def _write_profiles(tmp_path: Path) -> None:
    (tmp_path / "parent.yaml").write_text(PROFILE_PARENT)
    (tmp_path / "child.yaml").write_text("extends: ./parent.yaml\nname: child\n")


def test_o_never_replaces_a_profile_s_parent_or_follows_a_link(tmp_path: Path) -> None:
    _write_profiles(tmp_path)
    (tmp_path / "m.yaml").write_text("devices: [child.yaml]\nkernels:\n"
                                     "  - {name: k, registers: 32, block: 256}\n")
    r, _ = run(["check", "m.yaml", "-o", "parent.yaml"], tmp_path)
    one_error_line(r)
    assert "this run read that file" in r.stderr
    assert (tmp_path / "parent.yaml").read_text() == PROFILE_PARENT
    # a symbolic link is refused, not replaced by a file (-o /dev/stdout would become one)
    (tmp_path / "target.txt").write_text("keep")
    (tmp_path / "out.txt").symlink_to("target.txt")
    r, _ = run(["check", "m.yaml", "-o", "out.txt"], tmp_path)
    one_error_line(r)
    assert "symbolic link" in r.stderr
    assert (tmp_path / "out.txt").is_symlink() and (tmp_path / "target.txt").read_text() == "keep"
    r, _ = run(["check", "m.yaml", "-o", "report.txt"], tmp_path)  # elsewhere: written
    assert r.returncode == 0 and (tmp_path / "report.txt").read_text().strip()


@pytest.mark.slow
def test_o_never_replaces_a_header_or_a_linked_source(tmp_path: Path) -> None:
    """The files the compiler read are inputs too, compiled now or found in the cache."""
    from occupancy.build.compilers import nvcc_path

    if nvcc_path() is None:
        pytest.skip("nvcc not found")
    (tmp_path / "src").mkdir()
    (tmp_path / "hdr.h").write_text("#define SCALE 2.0f\n")
    (tmp_path / "k.cu").write_text('#include "hdr.h"\n__device__ float twice(float);\n'
                                   "__global__ void k(float* a) { a[0] = twice(SCALE); }\n")
    (tmp_path / "src" / "other.cu").write_text("__device__ float twice(float x) { return 2 * x; }\n")
    (tmp_path / "m.yaml").write_text(
        "devices: [h200]\nkernels:\n  - {name: k, source: k.cu, block: 256, "
        "flags: [-rdc=true], link: [src/other.cu]}\n")
    before = {p: p.read_text() for p in (tmp_path / "hdr.h", tmp_path / "src" / "other.cu")}
    for _ in range(2):  # compiled, then from the cache
        for target in ("hdr.h", "src/other.cu"):
            r, _ = run(["check", "m.yaml", "-o", target], tmp_path, timeout=300)
            one_error_line(r)
            assert "this run read that file" in r.stderr
    assert {p: p.read_text() for p in before} == before


@pytest.mark.parametrize("text", ["devices: [h200]\nkernels:\n  - name: \x00\n",
                                  "devices: [h200]\nkernels:\n  - name: k\x1b[31m\n",
                                  "name: x\n\x01limits: {}\n"])
def test_control_characters_in_yaml_are_one_line(tmp_path: Path, text: str) -> None:
    (tmp_path / "m.yaml").write_text(text)
    r, _ = run(["check", "m.yaml"], tmp_path)
    one_error_line(r)
    assert "control character" in r.stderr and "line " in r.stderr
    r, _ = run(["calc", "-d", "m.yaml", "-t", "256"], tmp_path)
    one_error_line(r)


def test_integers_no_record_holds_are_refused(tmp_path: Path) -> None:
    big = "9" * 400
    (tmp_path / "rec.json").write_text('{"kernel": "k", "results": [{"median_ms": ' + big + "}]}")
    r, _ = run(["report", "-d", "h200", "--measured", "rec.json", "-o", "r.html"], tmp_path)
    one_error_line(r)
    assert "400 digits" in r.stderr and not (tmp_path / "r.html").exists()
    (tmp_path / "store.json").write_text('{"entries": {"k": {"params": {"T": ' + big
                                         + '}, "median_ms": 1.0}}}')
    r, _ = run(["tile", "matmul", "-d", "h200", "-n", "256", "--store", "store.json"], tmp_path)
    one_error_line(r)  # a shipped family keeps no store: said, not ignored
    assert "--store is for a tuning entry" in r.stderr
    (tmp_path / "k.cu").write_text("__global__ void k(float* a) { a[threadIdx.x] = 1; }\n")
    (tmp_path / "t.yaml").write_text("devices: [h200]\nkernels:\n  - {name: k, source: k.cu, "
                                     "space: {T: [64, 128]}, block: T, grid: 4}\n")
    r, _ = run(["tile", "t.yaml", "--kernel", "k", "-d", "h200", "--store", "store.json"], tmp_path)
    one_error_line(r)  # read before any compile
    assert "--store" in r.stderr and "400 digits" in r.stderr


@pytest.mark.slow
def test_an_include_built_from_a_macro_that_reaches_a_fifo_ends_at_once(tmp_path: Path) -> None:
    """The include scan reads literal #includes only; a macro's reaches the compiler, which
    would wait 300 s to open the FIFO. The tool sees it blocked there and stops it."""
    from occupancy.build.compilers import nvcc_path

    if nvcc_path() is None or not os.path.isdir("/proc"):
        pytest.skip("nvcc or /proc not here")
    fifo = tmp_path / "ff"
    os.mkfifo(fifo)
    (tmp_path / "k.cu").write_text(f'#define F "{fifo}"\n#include F\n'
                                   "__global__ void k(float* a) { a[0] = 1; }\n")
    (tmp_path / "m.yaml").write_text("devices: [h200]\nkernels:\n"
                                     "  - {name: k, source: k.cu, block: 256}\n")
    r, wall = run(["check", "m.yaml", "--format", "json"], tmp_path, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"it opened {fifo}, which no compile ends on" in r.stdout  # the verdict's, in JSON
    assert wall < 60


def test_a_user_module_s_prints_stay_off_stdout(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """What a manifest's Python prints, at import or when called (a reference, an inputs
    maker), goes to stderr: stdout carries --json alone."""
    from occupancy.build.triton import load_function

    mod = tmp_path / "noisy_mod.py"
    mod.write_text("print('at import')\ndef make(n):\n    print('called')\n    return n + 1\n")
    fn = load_function(str(mod), "make", "inputs")
    assert fn(2) == 3
    out = capsys.readouterr()
    assert out.out == "" and "at import" in out.err and "called" in out.err


def test_a_ptxas_log_s_overlong_number_is_refused(tmp_path: Path) -> None:
    (tmp_path / "k.log").write_text(
        "ptxas info    : Compiling entry function 'saxpy' for 'sm_80'\n"
        "ptxas info    : Function properties for saxpy\n"
        "    0 bytes stack frame, 1000000000000 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Used 40 registers, 1000000004096 bytes smem, 380 bytes cmem[0]\n")
    (tmp_path / "m.yaml").write_text("devices: [a100]\nkernels:\n"
                                     "  - {name: saxpy, ptxas_log: k.log, block: 256, no_spills: true}\n")
    r, _ = run(["check", "m.yaml", "--format", "json"], tmp_path)
    assert r.returncode == 2 and "over 12 digits" in r.stdout
    r, _ = run(["resources", "k.log"], tmp_path)
    one_error_line(r)
    # a long number elsewhere (a compiler warning quoting a source line) is no count
    from occupancy.build.resources import parse_ptxas_log

    quoted = ("k.cu(2): warning #177-D: variable \"total_bytes\" was declared but never referenced\n"
              "      long long total_bytes = 1099511627776LL; // 1099511627776 bytes\n")
    log = quoted + (tmp_path / "k.log").read_text().replace("1000000000000", "0").replace(
        "1000000004096", "4096")
    assert parse_ptxas_log(log)["sm_80"]["saxpy"].static_shared_memory == 4096
    # the spill line alone too (its last 12 digits read as 0: no_spills passed)
    with pytest.raises(OccupancyError, match="line 5: a number of over 12 digits"):
        parse_ptxas_log(log.replace("0 bytes spill stores", "1000000000000 bytes spill stores"))


def test_a_cupy_that_fails_to_import_is_one_line(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from occupancy.gpu.measure import GpuUnavailable, cupy_module

    (tmp_path / "cupy").mkdir()
    (tmp_path / "cupy" / "__init__.py").write_text("raise RuntimeError('broken\\nbuild')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    with pytest.raises(GpuUnavailable) as info:
        cupy_module("measure")
    assert "RuntimeError" in str(info.value) and "\n" not in str(info.value)


def test_a_cuda_looking_path_must_be_a_system_install(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A path shaped like a CUDA install's nvcc (/opt/cuda-1/bin/nvcc) is trusted only where
    root put it: the file and every folder above it root's and writable by no one else. A
    repository cloned there is its cloner's; anything under /tmp sits in a folder everyone
    may write to."""
    from occupancy.inputs.manifest import keys

    fake = tmp_path / "cuda-1" / "bin" / "nvcc"
    fake.parent.mkdir(parents=True)
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    assert not keys.system_owned(str(fake))
    # the install pattern alone no longer vouches for it
    monkeypatch.setattr(keys, "_INSTALLED", re.compile(r".*/cuda-1/bin/nvcc"))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    assert keys._installed_nvcc(fake) is None
    with pytest.raises(OccupancyError, match="root's and writable by no one else"):
        keys.parse_compilers({"sm_70": str(fake)}, tmp_path, 1)
    # each condition on its own, on a made-up tree: the file and every folder above it
    # root's (uid 0) and writable by neither group nor others
    tree = {"/": (0, 0o755), "/opt": (0, 0o755), "/opt/cuda-9": (0, 0o755),
            "/opt/cuda-9/bin": (0, 0o755), "/opt/cuda-9/bin/nvcc": (0, 0o755)}

    def fake_stat(path: str) -> os.stat_result:
        uid, mode = tree[path]
        return os.stat_result((mode, 0, 0, 1, uid, 0, 0, 0, 0, 0))

    with monkeypatch.context() as m:
        m.setattr(os, "stat", fake_stat)
        assert keys.system_owned("/opt/cuda-9/bin/nvcc")
        for path, bad in (("/opt/cuda-9/bin/nvcc", (1000, 0o755)), ("/opt/cuda-9", (1000, 0o755)),
                          ("/opt/cuda-9/bin", (0, 0o775)), ("/opt", (0, 0o757))):
            good, tree[path] = tree[path], bad
            assert not keys.system_owned("/opt/cuda-9/bin/nvcc"), (path, bad)
            tree[path] = good
    # a real install passes: root's, 755 all the way up
    real = "/usr/local/cuda/bin/nvcc"
    if os.path.exists(real) and os.stat(os.path.realpath(real)).st_uid == 0:
        assert keys.system_owned(os.path.realpath(real))
        monkeypatch.setattr(keys, "_INSTALLED", re.compile(
            r"/(usr/local|opt)/cuda(-[0-9][0-9.]*)?/bin/nvcc"))
        assert keys._installed_nvcc(Path(real)) == os.path.realpath(real)  # the install's own
    # the user's own $CUDA_HOME, whatever its nvcc links to, runs as named: its folder holds
    # the install's nvcc.profile and ptxas
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "nvcc").symlink_to(fake)
    monkeypatch.setenv("CUDA_HOME", str(home))
    assert keys._installed_nvcc(home / "bin" / "nvcc") == str(home / "bin" / "nvcc")


def test_resources_names_its_own_options(tmp_path: Path) -> None:
    """`resources`' -I and --flag are checked as the options they are: a missing folder and
    a refused flag name the option (not a manifest's include_dirs or flags), exit 2."""
    (tmp_path / "k.cu").write_text("__global__ void k(float* a) { a[0] = 1; }\n")
    r, _ = run(["resources", "k.cu", "-I", "no_such_dir", "--arch", "sm_90"], tmp_path)
    one_error_line(r)
    assert "-I 'no_such_dir': no such folder" in r.stderr
    r, _ = run(["resources", "k.cu", "-I", "a\nb", "--arch", "sm_90"], tmp_path)
    one_error_line(r)  # a control character in the folder's name: refused, shown escaped
    r, _ = run(["resources", "k.cu", "--flag=-Xfoo", "--arch", "sm_90"], tmp_path)
    one_error_line(r)
    assert r.stderr.startswith("Error: --flag: flag -Xfoo is not accepted")
    assert "include folders go in -I" in r.stderr and "include_dirs" not in r.stderr


def test_a_link_to_the_real_nvcc_does_not_bring_its_own_profile(tmp_path: Path) -> None:
    """A repository's `cuda-1/bin/nvcc` that links to the system's nvcc passes as the install
    (its path resolves there), but nvcc reads nvcc.profile, which names the programs it runs,
    from the folder it was started from: the link's folder, the repository's. The install's
    own path is what runs."""
    from occupancy.build.compilers import nvcc_path
    from tests.needs import need

    installs = [os.path.realpath(p) for p in (str(nvcc_path()), "/usr/local/cuda/bin/nvcc")]
    found = next((p for p in installs
                  if os.path.isfile(os.path.join(os.path.dirname(p), "nvcc.profile"))), None)
    need(found, "a CUDA install's nvcc with its nvcc.profile")
    nvcc = str(found)
    bin_ = tmp_path / "cuda-1" / "bin"
    bin_.mkdir(parents=True)
    (bin_ / "nvcc").symlink_to(nvcc)
    (bin_ / "ptxas").symlink_to(os.path.join(os.path.dirname(nvcc), "ptxas"))
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "cicc").write_text(f"#!/bin/sh\necho ran > {tmp_path / 'RAN'}\nexit 1\n")
    (evil / "cicc").chmod(0o755)
    profile = Path(os.path.dirname(nvcc), "nvcc.profile").read_text()
    (bin_ / "nvcc.profile").write_text(f"CICC_PATH = {evil}\n" + "\n".join(
        ln for ln in profile.splitlines() if not ln.startswith("CICC_PATH")) + "\n")
    (tmp_path / "k.cu").write_text("__global__ void k(float* a) { a[0] = 1; }\n")
    (tmp_path / "m.yaml").write_text("devices: [h100]\ncompilers: {sm_90: cuda-1/bin/nvcc}\n"
                                     "kernels:\n  - {name: k, source: k.cu, block: 256}\n")
    r, _ = run(["check", "m.yaml"], tmp_path, env={"OCCUPANCY_CACHE_DIR": str(tmp_path / "c")})
    assert not (tmp_path / "RAN").exists(), r.stderr
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_host_header_hint_looks_only_in_the_host_s_folders() -> None:
    """NVRTC's "cannot open source file" is host code only for a header in the host
    compiler's folders; a name from the log never reaches outside them (absolute, `..`)."""
    from occupancy.build.blockers import _host_header

    log = 'error: cannot open source file "{}"'
    assert not _host_header(log.format("/etc/passwd"))
    assert not _host_header(log.format("../../etc/passwd"))
    assert not _host_header(log.format("not_written_yet.h"))
    if os.path.isfile("/usr/include/stdio.h"):
        assert _host_header(log.format("stdio.h"))


def test_a_root_owned_repository_s_link_to_nvcc_runs_the_install_s_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A CI job run as root clones a repository whose folders root owns: its tools/nvcc, a
    link to the nvcc on PATH, must not run from tools/, where its own nvlink, ptxas and
    nvcc.profile sit (attack run, stop 40: its nvlink ran for an -rdc build)."""
    import shutil

    from occupancy.inputs.manifest import keys

    nvcc = shutil.which("nvcc")
    need(nvcc, "nvcc")
    tools = tmp_path / "repo" / "tools"
    tools.mkdir(parents=True)
    (tools / "nvcc").symlink_to(nvcc)
    for name in ("nvlink", "ptxas"):
        (tools / name).write_text("#!/bin/sh\ntouch \"$0.ran\"\n")
        (tools / name).chmod(0o755)
    monkeypatch.setattr(keys, "system_owned", lambda path: True)  # as root's checkout is
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    got = keys.parse_compilers({"sm_90": "tools/nvcc"}, tmp_path / "repo", 1)["sm_90"]
    assert got == os.path.realpath(nvcc) and not got.startswith(str(tmp_path))


def _cubin(tmp_path: Path, arch: str = "sm_90a") -> bytes:
    import subprocess

    from occupancy.build.compilers import nvcc_path

    need(nvcc_path(), "nvcc")
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(int* p) { p[threadIdx.x] = 1; }\n")
    subprocess.run([str(nvcc_path()), f"-arch={arch}", "-cubin", str(src), "-o",
                    str(tmp_path / "k.cubin")], check=True, capture_output=True)
    return (tmp_path / "k.cubin").read_bytes()


def _with_sections(elf: bytes, name: str, count: int, blob: bytes) -> bytes:
    """`elf` with `count` more section headers named `name` (an existing section name), all
    over one `blob` appended to the file."""
    import struct

    shoff = struct.unpack_from("<Q", elf, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    table = elf[shoff:shoff + shentsize * shnum]
    names = [struct.unpack_from("<IIQQQQIIQQ", table, i * shentsize) for i in range(shnum)]
    str_off = names[shstrndx][4]
    name_at = next(h[0] for h in names if elf[str_off + h[0]:].startswith(name.encode() + b"\0"))
    blob_at = len(elf)
    new_table = len(elf) + len(blob)
    extra = b"".join(struct.pack("<IIQQQQIIQQ", name_at, 0x70000000, 0, 0, blob_at, len(blob),
                                 0, 0, 4, 0) for _ in range(count))
    out = bytearray(elf + blob + table + extra)
    struct.pack_into("<Q", out, 0x28, new_table)
    struct.pack_into("<H", out, 0x3C, shnum + count)
    return bytes(out)


@pytest.mark.slow
def test_sections_over_one_blob_and_a_table_of_none_are_one_error_line(tmp_path: Path) -> None:
    """Attack run, stop 52: 1,000 `.nv.compat` headers over one megabyte of records took 97 s
    (each read again), one of 60 MB 2 GB; 1,000 `.nv.info` headers over one blob are the same
    attack on the older reader; a section table of none was an IndexError traceback."""
    elf = _cubin(tmp_path)
    records = b"\x02\x0a\x00\x00" * (1 << 18)  # a megabyte of 4-byte records
    for name in (".nv.compat", ".nv.info"):
        bad = tmp_path / f"many{name}.cubin"
        bad.write_bytes(_with_sections(elf, name, 1000, records))
        r, took = run(["resources", str(bad)], tmp_path)
        assert "Traceback" not in r.stderr and took < 60, (took, r.stderr[-300:])
        assert r.returncode == 0 or (r.returncode == 2 and "overlap" in r.stderr), r.stderr
    big = tmp_path / "big.cubin"
    big.write_bytes(_with_sections(elf, ".nv.compat", 1, records * 60))
    r, took = run(["resources", str(big)], tmp_path)
    assert r.returncode == 0 and "sm_90a" in r.stdout and took < 60, (took, r.stderr[-300:])
    none = bytearray(elf)
    none[0x3C:0x40] = b"\x00\x00\x00\x00"  # no sections, the names' index 0
    (tmp_path / "none.cubin").write_bytes(bytes(none))
    r, _ = run(["resources", str(tmp_path / "none.cubin")], tmp_path)
    one_error_line(r)
    assert "malformed ELF section table" in r.stderr


def test_a_name_that_nests_back_references_is_not_demangled_for_minutes() -> None:
    """Attack run, stop 52: a 300-byte name whose back-references nest doubles c++filt's
    output each level (60 s and 1 GB at 32 levels). The demangler runs under a small share
    of time, memory and output; the names then stay as they are."""
    import time

    from occupancy.build.compilers import _demangler, demangle

    need(_demangler(), "a demangler (c++filt)")
    def ref(i: int) -> str:  # S0_, then S<i in base 36>_
        digits, out = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ", ""
        while True:
            out, i = digits[i % 36] + out, i // 36
            if not i:
                return f"S{out}_"

    bomb = "_Z1f1AIiE" + "".join(f"S_I{'S0_' if i == 0 else ref(i)}{'S0_' if i == 0 else ref(i)}E"
                                 for i in range(32))
    t0 = time.monotonic()
    got = demangle([bomb, "_Z6kernelPf"])
    assert time.monotonic() - t0 < 30
    assert len(got[bomb]) < 100_000


def test_a_file_namespace_that_leaves_a_line_starting_with_colons_stays_whole() -> None:
    """Attack run, stop 52: `_ZN16_INTERNAL_a_cu_0E::::error::pwned` demangled and cut at its
    file namespace left `::error::pwned`, a CI workflow command at a line's start; a table
    showed the kernel as `[file-local]` alone. Such a name keeps its namespace."""
    from occupancy.build.compilers import _internal_named

    assert _internal_named("_INTERNAL_a_1_a_cu_0::::error::pwned") == \
        "_INTERNAL_a_1_a_cu_0::::error::pwned"
    assert _internal_named("_INTERNAL_a_1_a_cu_0::") == "_INTERNAL_a_1_a_cu_0::"
    # a .cuh compiled as CUDA (resources does so): its namespace ends _cuh_<hash>
    assert _internal_named("_INTERNAL_f869c592_7_a_b_cuh_ea3211c0::sheavy(float const*, int)") \
        == "sheavy(float const*, int) [file-local]"
    assert _internal_named("_INTERNAL_a7ac0bb9_5_st_cu_09a87968::heavy(float const*, int)") \
        == "heavy(float const*, int) [file-local]"
