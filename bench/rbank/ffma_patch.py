"""Register-bank microbenchmark, step 1 (CPU): rewrites the registers of the 128 FFMAs in
ffma.cu's unrolled loop (built here for sm_90) to chosen patterns, one cubin a pattern. The
hardware does not check fixed-latency dependences (ptxas's stall counts do), so the values
come out wrong but the issue timing is the pattern's own. Each FFMA keeps its control bits
(stall 1) except the reuse flags, which the pattern sets. R0 (the epilogue's thread index)
and R1 are never written. Usage: python bench/rbank/ffma_patch.py CUBIN SASS OUTDIR
(SASS: `nvdisasm -c -hex CUBIN`); writes OUTDIR/NAME.cubin and OUTDIR/patterns.txt.
With ffma48.cu's build (72 registers; its loop counter in R31), `--replay NAME=FILE` instead
writes one cubin per real loop: 128 FFMAs from the middle of the hottest loop in FILE
(`nvdisasm -c` text), in order, with their `.reuse` flags, the registers renamed one to one
onto the build's free registers of the same parity (the other instructions of that loop left
out), and 64 of them twice (32 four times) where 128 name more registers than the build has."""

from __future__ import annotations

import re
import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from occupancy.build.sass_loops import source_register  # noqa: E402

EVEN = list(range(2, 38, 2))  # R2-R37: ptxas counted 40 registers, of which R38 and R39 are
# reserved (a register past the last one the build uses traps as an illegal instruction)
ODD = list(range(3, 38, 2))


def text_section(elf: bytes, name: str) -> int:
    """File offset of the ELF64 section `name`."""
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    def sh(i: int) -> tuple[int, int]:
        base = shoff + i * shentsize
        return struct.unpack_from("<I", elf, base)[0], struct.unpack_from("<Q", elf, base + 0x18)[0]
    strtab = sh(shstrndx)[1]
    for i in range(shnum):
        nm, off = sh(i)
        end = elf.index(b"\0", strtab + nm)
        if elf[strtab + nm:end].decode() == name:
            return off
    raise SystemExit(f"Error: no section {name}")


def loop_ffmas(sass: str) -> list[int]:
    """Offsets (in .text) of the FFMAs in the loop headed by .L_x_2."""
    out, inside = [], False
    for line in sass.splitlines():
        if line.startswith(".L_x_2:"):
            inside = True
        m = re.match(r"\s*/\*([0-9a-f]+)\*/\s+(\S+)", line)
        if inside and m:
            if m.group(2) == "FFMA":
                out.append(int(m.group(1), 16))
            if "BRA" in line:
                break
    return out


def pick(pool: list[int], i: int, step: int, avoid: set[int]) -> int:
    k = i * step
    while pool[k % len(pool)] in avoid:
        k += 1
    return pool[k % len(pool)]


def patterns() -> dict[str, list[tuple[int, int, int, int, int]]]:
    """name -> 128 x (d, a, b, c, reuse bits); registers change from one FFMA to the next
    (no reuse-cache hit) unless the pattern says otherwise."""
    out: dict[str, list[tuple[int, int, int, int, int]]] = {}
    pools = {0: EVEN, 1: ODD}
    for pa in (0, 1):
        for pb in (0, 1):
            for pc in (0, 1):
                for pd in (0, 1):
                    rows = []
                    for i in range(128):
                        a = pick(pools[pa], i, 1, set())
                        b = pick(pools[pb], i + 7, 1, {a})
                        c = pick(pools[pc], i + 13, 1, {a, b})
                        d = pick(pools[pd], i + 3, 1, {0, 1})
                        rows.append((d, a, b, c, 0))
                    out[f"abc{pa}{pb}{pc}-d{pd}"] = rows
    # mod 4: a, b, c in distinct quarter banks, a and c the same parity
    for name, (qa, qb, qc) in {"q012": (0, 1, 2), "q013": (0, 1, 3), "q023": (0, 2, 3),
                               "q000": (0, 0, 0), "q022": (0, 2, 2), "q002": (0, 0, 2)}.items():
        rows = []
        for i in range(128):
            a = [r for r in range(4, 38) if r % 4 == qa][i % 8]
            b = [r for r in range(4, 38) if r % 4 == qb][(i + 3) % 8]
            c = [r for r in range(4, 38) if r % 4 == qc][(i + 5) % 8]
            if c in (a, b):
                c = [r for r in range(4, 38) if r % 4 == qc][(i + 6) % 8]
            if b == a:
                b = [r for r in range(4, 38) if r % 4 == qb][(i + 4) % 8]
            rows.append((pick(EVEN, i + 3, 1, {0, 1}), a, b, c, 0))
        out[name] = rows
    # the reuse cache: a 3-even FFMA whose `a` the instruction before marked .reuse
    rows = []
    for i in range(128):
        a = EVEN[(i // 4) % len(EVEN)]
        b = pick(EVEN, i + 7, 1, {a})
        c = pick(EVEN, i + 13, 1, {a, b})
        rows.append((pick(ODD, i, 1, set()), a, b, c, 1 if i % 4 != 3 else 0))
    out["abc000-reuse-a"] = rows
    # the same, without the flags (the same registers)
    out["abc000-same-a-noflag"] = [(d, a, b, c, 0) for d, a, b, c, _ in rows]
    # two reads: b is RZ-free but c = d (an accumulator), a and b of one parity
    out["acc-ab00"] = [(d, a, b, d, 0) for d, a, b, _, _ in out["abc001-d1"]]
    out["acc-ab01"] = [(d, a, b, d, 0) for d, a, b, _, _ in out["abc010-d0"]]
    return out


def real_ffmas(text: str) -> list[tuple[int, int, int, int, int]]:
    """(d, a, b, c, reuse bits) of every register-form FFMA, in order."""
    out = []
    for line in text.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]+\*/\s+FFMA\s+(.*?)\s*;", line)
        if not m:
            continue
        ops = [source_register(o) for o in m.group(1).split(",")]
        regs = [r for r in ops if r is not None]
        if len(ops) != 4 or len(regs) != 4:
            continue
        out.append((*(r[0] for r in regs),  # type: ignore[arg-type]
                    sum(r[1] << k for k, r in enumerate(regs[1:]))))
    return out


def replay(text: str, free: dict[int, list[int]]) -> list[tuple[int, int, int, int, int]]:
    ffmas = real_ffmas(text)
    for n in (128, 64, 32):
        mid = len(ffmas) // 2 - n // 2
        window = ffmas[mid:mid + n]
        regs = sorted({r for f in window for r in f[:4]})
        if all(sum(r % 2 == p for r in regs) <= len(free[p]) for p in (0, 1)):
            names = {r: free[r % 2][[x for x in regs if x % 2 == r % 2].index(r)] for r in regs}
            rows = [(names[d], names[a], names[b], names[c], ru) for d, a, b, c, ru in window]
            return rows * (128 // n)
    raise SystemExit("Error: the loop names more registers than the build has")


def main() -> None:
    if "--replay" in sys.argv:
        cubin, sass, outdir = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
        free = {p: [r for r in range(2, 70) if r % 2 == p and r != 31] for p in (0, 1)}
        pats = {}
        for arg in sys.argv[sys.argv.index("--replay") + 1:]:
            name, path = arg.split("=", 1)
            pats[f"replay-{name}"] = replay(Path(path).read_text(), free)
        write(cubin, sass, outdir, pats)
        return
    cubin, sass, outdir = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    write(cubin, sass, outdir, patterns())


def write(cubin: Path, sass: Path, outdir: Path,
          pats: dict[str, list[tuple[int, int, int, int, int]]]) -> None:
    elf = bytearray(cubin.read_bytes())
    base = text_section(bytes(elf), ".text.ffma_loop")
    offs = loop_ffmas(sass.read_text())
    assert len(offs) == 128, len(offs)
    outdir.mkdir(parents=True, exist_ok=True)
    lines = []
    for name, rows in pats.items():
        buf = bytearray(elf)
        for off, (d, a, b, c, reuse) in zip(offs, rows):
            lo, hi = struct.unpack_from("<QQ", buf, base + off)
            assert lo & 0xFFF == 0x223, "not a register-form FFMA"
            lo = (lo & ~0xFFFFFF0000) | (d << 16) | (a << 24) | (b << 32)
            hi = (hi & ~0xFF & ~(0xF << 58)) | c | (reuse << 58)
            struct.pack_into("<QQ", buf, base + off, lo, hi)
        (outdir / f"{name}.cubin").write_bytes(bytes(buf))
        lines.append(f"{name}: " + " ".join(f"R{d},R{a},R{b},R{c}/{r}" for d, a, b, c, r in rows[:6]))
    (outdir / "patterns.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
