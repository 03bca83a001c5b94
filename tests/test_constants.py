"""A tuning entry's `constants:` (kernel_tuner's cmem_args): module symbols `measure` fills
from .npy files before each launch. The manifest side is checked on the CPU; the fill is
checked against a stand-in for CuPy's RawModule (the real one runs in tests/test_gpu.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy
import pytest
from click.testing import CliRunner

from occupancy.build.compilers import nvcc_path
from occupancy.cli import main
from occupancy.core.errors import OccupancyError
from occupancy.gpu.constants import fill_constants
from occupancy.inputs.manifest.tuning import load_tuning
from tests.needs import need_nvcc

KERNEL = """__constant__ float2 d_vertices[600];
__global__ void walk(int* out, const float2* pts, int n) {
  int i = blockIdx.x * BS + threadIdx.x;
  if (i >= n) return;
  int c = 0;
  for (int j = 0; j < 600; j++) c += pts[i].x < d_vertices[j].x;
  out[i] = c;
}
"""
MANIFEST = """devices: [h200]
kernels:
  - name: walk
    source: walk.cu
    defines: {{BS: BS}}
    space: {{BS: [128, 256]}}
    problem: {{n: 65536}}
    block: BS
    grid: ceil(n / BS)
    args: [{{array: out, dtype: int32, shape: [n], output: true}},
           {{array: pts, dtype: float32, shape: [n, 2]}}, n]
    constants: {constants}
"""


def _entry(tmp_path: Path, constants: str) -> Path:
    (tmp_path / "walk.cu").write_text(KERNEL)
    p = tmp_path / "tune.yaml"
    p.write_text(MANIFEST.format(constants=constants))
    return p


def test_constants_name_npy_files_beside_the_manifest(tmp_path: Path) -> None:
    numpy.save(tmp_path / "poly.npy", numpy.zeros((600, 2), numpy.float32))
    spec = load_tuning(_entry(tmp_path, "{d_vertices: poly.npy}"), "walk")
    assert spec.constants == {"d_vertices": str(tmp_path / "poly.npy")}
    assert load_tuning(_entry(tmp_path, "{}"), "walk").constants == {}


@pytest.mark.parametrize("constants,message", [
    ("[poly.npy]", "maps up to 16 symbols"),
    ("{'d-vertices': poly.npy}", "is not a symbol name"),
    ("{'d;rm -rf': poly.npy}", "is not a symbol name"),
    ("{d_vertices: poly.txt}", "give a .npy file"),
    ("{d_vertices: 7}", "give a .npy file"),
    ("{d_vertices: missing.npy}", "no such file"),
    ("{d_vertices: big.npy}", "over 64 KB"),
    ("{d_vertices: " + "x" * 300 + ".npy}", "no such file"),  # a name the system refuses
    ("{d_vertices: folder.npy}", "no such file"),
    ("{" + ", ".join(f"t{i}: poly.npy" for i in range(17)) + "}", "maps up to 16 symbols"),
])
def test_bad_constants_are_one_line_naming_the_key(tmp_path: Path, constants: str,
                                                   message: str) -> None:
    numpy.save(tmp_path / "poly.npy", numpy.zeros((600, 2), numpy.float32))
    numpy.save(tmp_path / "big.npy", numpy.zeros(20000, numpy.float32))  # 80 KB
    (tmp_path / "folder.npy").mkdir()
    p = _entry(tmp_path, constants)
    with pytest.raises(OccupancyError, match=message):
        load_tuning(p, "walk")
    r = CliRunner().invoke(main, ["tile", str(p), "--kernel", "walk", "-d", "h200"])
    assert r.exit_code == 2 and "constants" in r.stderr and message in r.stderr  # type: ignore[attr-defined]
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.output  # type: ignore[attr-defined]


class _DriverError(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"CUDA driver error {status}")
        self.status = status


class _Symbol:
    """CuPy's get_global result as fill_constants uses it (its reported size is 0 in CuPy,
    so the size comes from the cubin)."""

    def __init__(self) -> None:
        self.got = b""

    def copy_from_host(self, ptr: int, nbytes: int) -> None:
        import ctypes

        self.got = ctypes.string_at(ptr, nbytes)


class _Module:
    def __init__(self, symbols: dict[str, _Symbol], status: int = 500) -> None:
        self.symbols, self.status = symbols, status  # 500: CUDA_ERROR_NOT_FOUND

    def get_global(self, name: str) -> _Symbol:
        if name not in self.symbols:
            raise _DriverError(self.status)
        return self.symbols[name]


_CUPY: Any = type("Cupy", (), {"cuda": type("C", (), {"driver": type("D", (), {
    "CUDADriverError": _DriverError})})})


@pytest.fixture(scope="module")
def cubin(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A real cubin (nvcc, sm_90) whose symbol table says d_vertices is 4,800 bytes and
    d_slopes 2,400: the sizes fill_constants checks a file against."""
    import subprocess

    need_nvcc()
    d = tmp_path_factory.mktemp("cubin")
    (d / "t.cu").write_text("__constant__ float2 d_vertices[600];\n__constant__ float d_slopes[600];"
                            "\n__global__ void k(float* o) { o[0] = d_vertices[0].x + d_slopes[0]; }\n")
    subprocess.run([nvcc_path() or "nvcc", "-cubin", "-arch=sm_90", "-o", str(d / "t.cubin"),
                    str(d / "t.cu")], check=True)
    return (d / "t.cubin").read_bytes()


@pytest.mark.slow
def test_fill_copies_each_file_into_its_symbol(tmp_path: Path, cubin: bytes) -> None:
    """In C order (a Fortran-ordered file is reordered) and the machine's byte order (a
    big-endian file is swapped), each file's bytes land in its symbol."""
    poly = numpy.arange(1200, dtype=numpy.float32).reshape(600, 2)
    numpy.save(tmp_path / "poly.npy", numpy.asfortranarray(poly))
    numpy.save(tmp_path / "slopes.npy", numpy.arange(600, dtype=">f4"))
    spec = load_tuning(_entry(tmp_path, "{d_vertices: poly.npy, d_slopes: slopes.npy}"), "walk")
    syms = {"d_vertices": _Symbol(), "d_slopes": _Symbol()}
    fill_constants(_CUPY, _Module(syms), spec, cubin)
    assert syms["d_vertices"].got == poly.tobytes()
    assert syms["d_slopes"].got == numpy.arange(600, dtype=numpy.float32).tobytes()


def _claims(path: Path, shape: tuple[int, ...]) -> None:
    """A .npy file whose header claims `shape` of float32 but holds 40 bytes."""
    header = {"descr": "<f4", "fortran_order": False, "shape": shape}
    with open(path, "wb") as fh:
        numpy.lib.format.write_array_header_1_0(fh, header)
        fh.write(numpy.zeros(10, numpy.float32).tobytes())


@pytest.mark.slow
@pytest.mark.parametrize("write,symbols,message", [
    (lambda p: numpy.save(p, numpy.zeros(1300, numpy.float32)), {"d_vertices"},
     "holds 5200 bytes, the symbol 4800"),
    (lambda p: _claims(p, (10 ** 12,)), {"d_vertices"},  # read before any allocation
     "holds 4000000000000 bytes, the symbol 4800"),
    (lambda p: _claims(p, (20,)), {"d_vertices"}, "is no .npy array"),  # truncated
    (lambda p: numpy.save(p, numpy.zeros(10, numpy.float32)), set(), "has no symbol 'd_vertices'"),
    (lambda p: numpy.save(p, numpy.array([{"a": 1}], dtype=object)), {"d_vertices"},
     "holds no numbers"),  # refused from its header: the pickle is never loaded
    (lambda p: numpy.save(p, numpy.array(["abc"])), {"d_vertices"}, "holds no numbers"),
    (lambda p: p.write_bytes(b"\x93NUMPY not really"), {"d_vertices"}, "is no .npy array"),
    (lambda p: p.write_bytes(b"SECRET=hunter2\n"), {"d_vertices"}, "is no .npy array"),
])
def test_fill_refuses_what_does_not_fit(tmp_path: Path, write: Any, symbols: set[str],
                                        message: str, cubin: bytes) -> None:
    write(tmp_path / "poly.npy")
    spec = load_tuning(_entry(tmp_path, "{d_vertices: poly.npy}"), "walk")
    module = _Module({k: _Symbol() for k in symbols})
    with pytest.raises(OccupancyError, match=message) as info:
        fill_constants(_CUPY, module, spec, cubin)
    assert "kernel 'walk': constants:" in str(info.value) and "SECRET" not in str(info.value)
    assert all(s.got == b"" for s in module.symbols.values())  # nothing half-written


@pytest.mark.slow
def test_every_file_is_checked_before_any_is_copied(tmp_path: Path, cubin: bytes) -> None:
    numpy.save(tmp_path / "poly.npy", numpy.zeros((600, 2), numpy.float32))
    numpy.save(tmp_path / "slopes.npy", numpy.zeros(601, numpy.float32))  # one too many
    spec = load_tuning(_entry(tmp_path, "{d_vertices: poly.npy, d_slopes: slopes.npy}"), "walk")
    syms = {"d_vertices": _Symbol(), "d_slopes": _Symbol()}
    with pytest.raises(OccupancyError, match="d_slopes: .* holds 2404 bytes, the symbol 2400"):
        fill_constants(_CUPY, _Module(syms), spec, cubin)
    assert syms["d_vertices"].got == b""
    # a symbol the cubin has but the loaded module does not; a driver error of another kind
    for status, message in ((500, "has no symbol 'd_slopes'"), (1, "the driver refused the copy")):
        numpy.save(tmp_path / "slopes.npy", numpy.zeros(600, numpy.float32))
        with pytest.raises(OccupancyError, match=message):
            fill_constants(_CUPY, _Module({"d_vertices": _Symbol()}, status), spec, cubin)
