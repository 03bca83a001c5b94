"""Device linking: relocatable cubins (`-rdc=true` / `-dc`) into the image the driver loads.

With relocatable device code, ptxas leaves static shared memory (and, across calls into
other functions, registers and stack) to the device linker: a relocatable cubin or a ptxas
log of that compile shows 0 B where the launch needs 8 KB. What the driver loads is what
nvlink writes, so every relocatable image is linked here before it is read:

- nvlink (beside nvcc, or on PATH) for the archs its release targets (13.x: sm_75+);
- else nvJitLink 12 (the nvidia-nvjitlink-cu12 wheel, the `compiler` extra) for sm_50+,
  the library form of the same device linker.

Both link libcudadevrt (as nvcc's device link does) where it is at hand. Nothing reaches a
shell; objects are written under plain names in a private folder.
"""

from __future__ import annotations

import ctypes
import os
import re
import subprocess
import tempfile
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from occupancy.build.compilers import TIMEOUT_S, _wheel_dir, cuda_tool, demangle, nvcc_path, tool_version
from occupancy.build.resources import CompileError, CompilerUnavailable, CompileTimeout
from occupancy.build.run import COMPILER_MEMORY, run_tool
from occupancy.inputs.safety import inert

LINK_HINT = ("link it the way the build does (nvlink -arch=sm_XX FILE.cubin [the objects it "
             "calls into] -o linked.cubin, or nvcc -dlink) and give the linked cubin, the "
             "executable, or the source")
_NVJITLINK_INPUT_CUBIN, _NVJITLINK_INPUT_LIBRARY = 1, 6


def _cc(arch: str) -> int:
    return int(re.sub(r"\D", "", arch) or 0)


def nvlink_path() -> str | None:
    nvcc = nvcc_path()
    beside = os.path.join(os.path.dirname(nvcc), "nvlink") if nvcc else None
    if beside and os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return cuda_tool("nvlink")


def _nvlink_for(arch: str, beside: str | None = None) -> str | None:
    """nvlink of the CUDA that compiled (beside that nvcc), else the user's, if it links arch."""
    near = os.path.join(os.path.dirname(beside), "nvlink") if beside else None
    exe = near if near and os.path.isfile(near) and os.access(near, os.X_OK) else nvlink_path()
    if exe is None:
        return None
    version = tool_version(exe)
    major = int(version.split(".")[0]) if version[:1].isdigit() else 0
    return exe if _cc(arch) >= (75 if major >= 13 else 50) else None


@cache
def nvjitlink_lib() -> str | None:
    d = _wheel_dir("nvidia.nvjitlink")
    lib = d / "lib" / "libnvJitLink.so.12" if d else None
    return str(lib) if lib and lib.is_file() else None


def _devrt(beside: str | None) -> str | None:
    """libcudadevrt.a of the same CUDA as the linker (its install's lib64, or the cu12 runtime
    wheel for nvJitLink)."""
    if beside:
        cands = [os.path.join(d, "libcudadevrt.a") for d in _cuda_lib_dirs(beside)]
    else:
        rt = _wheel_dir("nvidia.cuda_runtime")
        cands = [str(rt / "lib" / "libcudadevrt.a")] if rt else []
    return next((c for c in cands if os.path.isfile(c)), None)


_TOP = re.compile(r"^#\$ TOP=(.+)$", re.MULTILINE)
_LIBRARIES = re.compile(r"^#\$ LIBRARIES=(.*)$", re.MULTILINE)


@cache
def _cuda_lib_dirs(tool: str) -> tuple[str, ...]:
    """The library folders of the CUDA install a tool of it (nvlink) belongs to: beside its
    bin/, and where the nvcc beside it says it links from (`nvcc --dryrun`'s TOP and -L
    folders), asked only where the first have no libcudadevrt: an nvcc on PATH can be a
    wrapper in /usr/local/bin that runs an install elsewhere."""
    root = os.path.dirname(os.path.dirname(tool))
    dirs = [os.path.join(root, "lib64"), os.path.join(root, "lib")]
    nvcc = os.path.join(os.path.dirname(tool), "nvcc")
    if any(os.path.isfile(os.path.join(d, "libcudadevrt.a")) for d in dirs) \
            or not (os.path.isfile(nvcc) and os.access(nvcc, os.X_OK)):
        return tuple(dirs)
    with tempfile.TemporaryDirectory(prefix="occupancy-link-") as tmp:
        try:  # --dryrun prints the steps and its settings; the input need not exist
            r = run_tool([nvcc, "--dryrun", "-c", "x.cu", "-o", "x.o"], timeout=TIMEOUT_S, cwd=tmp)
        except (OSError, subprocess.TimeoutExpired):
            return tuple(dirs)
    text = r.stdout + r.stderr
    for top in _TOP.findall(text):
        dirs += [os.path.join(top.strip(), "lib64"), os.path.join(top.strip(), "lib")]
    for libs in _LIBRARIES.findall(text):
        dirs += re.findall(r'"-L([^"]+)"', libs)
    return tuple(dict.fromkeys(dirs))


def linker_inputs(arch: str, beside: str | None = None) -> list[str | None]:
    """What device_link for `arch` would use besides the objects (the linker, libcudadevrt):
    a build's cache key holds them, so a link that failed for want of one is tried again
    once it is there."""
    exe = _nvlink_for(arch, beside)
    if exe is not None:
        return [exe, _devrt(exe)]
    return [nvjitlink_lib(), _devrt(None)]


def device_link(objects: Sequence[bytes], arch: str, what: str, beside: str | None = None,
                sources: bool = False) -> bytes:
    """The linked cubin of relocatable cubins for `arch` (with the nvlink beside the nvcc
    `beside` where there is one); errors are one line that names `what` (the file or build)
    and the blocker (an undefined function, a missing linker; `sources`: compiled here, so
    the fix for a missing function is another source to link)."""
    exe = _nvlink_for(arch, beside)
    if exe is not None:
        return _nvlink(exe, objects, arch, what, sources)
    lib = nvjitlink_lib()
    if lib is not None and _cc(arch) >= 50:
        return _nvjitlink(lib, objects, arch, what, sources)
    raise CompilerUnavailable(
        f"{what}: relocatable device code (-rdc=true / -dc) for {arch} is only final after the "
        f"device link, and no linker here targets {arch}: put nvlink (CUDA 13 links sm_75+, "
        f"CUDA 12 sm_50+) beside nvcc or pip install nvidia-nvjitlink-cu12; or {LINK_HINT}")


def _nvlink(exe: str, objects: Sequence[bytes], arch: str, what: str, sources: bool) -> bytes:
    with tempfile.TemporaryDirectory(prefix="occupancy-link-") as tmp:
        names = []
        for i, data in enumerate(objects):
            names.append(os.path.join(tmp, f"o{i}.cubin"))
            Path(names[-1]).write_bytes(data)
        out = os.path.join(tmp, "linked.cubin")
        devrt = _devrt(exe)
        lib = ["-L", os.path.dirname(devrt), "-lcudadevrt"] if devrt else []
        try:
            r = run_tool([exe, f"-arch={arch}", *names, *lib, "-o", out], timeout=TIMEOUT_S,
                         memory=COMPILER_MEMORY, cwd=tmp)
        except subprocess.TimeoutExpired:
            raise CompileTimeout(f"{what}: nvlink did not finish in {TIMEOUT_S} s") from None
        except OSError as exc:
            raise CompilerUnavailable(f"{what}: nvlink cannot run: {exc.strerror}") from None
        if r.returncode != 0 or not os.path.isfile(out):
            raise CompileError(f"{what}: device link for {arch}: "
                               f"{_link_error(r.stderr + r.stdout, tmp, sources)}")
        return Path(out).read_bytes()


def _nvjitlink(path: str, objects: Sequence[bytes], arch: str, what: str, sources: bool
               ) -> bytes:
    """nvJitLink keeps every kernel of a library it is given, so libcudadevrt is added only
    when the objects call into it (a first link reports it undefined)."""
    try:
        return _nvjitlink_once(path, objects, arch, None)
    except _LinkFailed as first:
        devrt = _devrt(None)
        log = str(first)
        if devrt and _UNDEFINED.search(log):
            try:
                return _nvjitlink_once(path, objects, arch, devrt)
            except _LinkFailed as second:
                log = str(second)
        raise CompileError(f"{what}: device link for {arch} (nvJitLink): "
                           f"{_link_error(log, None, sources)}") from None


class _LinkFailed(Exception):
    pass


def _nvjitlink_once(path: str, objects: Sequence[bytes], arch: str, devrt: str | None) -> bytes:
    lib = ctypes.CDLL(path)
    handle = ctypes.c_void_p()
    opts = [f"-arch={arch}".encode()]
    arr = (ctypes.c_char_p * len(opts))(*opts)
    if lib.nvJitLinkCreate(ctypes.byref(handle), len(opts), arr) != 0:
        raise _LinkFailed(f"nvJitLink cannot link for {arch}")
    try:
        status = 0
        for i, data in enumerate(objects):
            status = status or lib.nvJitLinkAddData(handle, _NVJITLINK_INPUT_CUBIN, data,
                                                    ctypes.c_size_t(len(data)), f"o{i}".encode())
        if not status and devrt:
            status = lib.nvJitLinkAddFile(handle, _NVJITLINK_INPUT_LIBRARY, devrt.encode())
        status = status or lib.nvJitLinkComplete(handle)
        if status != 0:
            size = ctypes.c_size_t()
            lib.nvJitLinkGetErrorLogSize(handle, ctypes.byref(size))
            buf = ctypes.create_string_buffer(size.value + 1)
            lib.nvJitLinkGetErrorLog(handle, buf)
            raise _LinkFailed(buf.value.decode(errors="replace"))
        size = ctypes.c_size_t()
        lib.nvJitLinkGetLinkedCubinSize(handle, ctypes.byref(size))
        out = ctypes.create_string_buffer(size.value)
        lib.nvJitLinkGetLinkedCubin(handle, out)
        return out.raw
    finally:
        lib.nvJitLinkDestroy(ctypes.byref(handle))


_UNDEFINED = re.compile(r"Undefined reference to '([^']+)'", re.IGNORECASE)


def _link_error(log: str, tmp: str | None, sources: bool = False) -> str:
    """The linker's first error as one line; an undefined function names itself, demangled,
    and says where its definition has to come from (`sources`: a build compiled here)."""
    missing = list(dict.fromkeys(_UNDEFINED.findall(log)))
    if missing:
        names = demangle(missing)
        shown = ", ".join(inert(names[m]) for m in missing[:3])
        where = ("list that file under the entry's `link:` (resources: --link FILE), or "
                 if sources else "")
        return f"undefined reference to {shown}, defined in another file: {where}{LINK_HINT}"
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    errs = [ln for ln in lines if "error" in ln.lower()] or lines
    msg = " | ".join(errs[:2])[:400]
    if tmp:
        msg = msg.replace(tmp + os.sep, "")
    return inert(msg) if msg else "failed without a message"
