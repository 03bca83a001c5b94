"""Hypothesis: solver properties on every profile, and fuzzed command-line input."""

from __future__ import annotations

from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from occupancy import Device, cliffs, solve
from occupancy.cli import main
from occupancy.inputs.profiles import all_devices

DEVICES = all_devices()
devices = st.sampled_from(DEVICES)
threads = st.integers(1, 1100)
regs = st.integers(0, 260)
smem = st.integers(0, 240 * 1024)
carveouts = st.one_of(st.none(), st.integers(0, 100))


@settings(max_examples=400, deadline=None)
@given(devices, threads, regs, st.integers(0, 255), smem, carveouts, st.booleans())
def test_more_registers_never_raise_occupancy(dev: Device, t: int, r: int, extra: int,
                                              dyn: int, carveout: int | None,
                                              opt_in: bool) -> None:
    a = solve(dev, t, r, dynamic_shared_memory=dyn, carveout=carveout, opt_in=opt_in)
    b = solve(dev, t, r + extra, dynamic_shared_memory=dyn, carveout=carveout, opt_in=opt_in)
    assert b.active_blocks_per_sm <= a.active_blocks_per_sm


@settings(max_examples=400, deadline=None)
@given(devices, threads, regs, smem, st.integers(0, 64 * 1024), st.booleans())
def test_more_shared_memory_never_raises_occupancy(dev: Device, t: int, r: int, dyn: int,
                                                   extra: int, opt_in: bool) -> None:
    a = solve(dev, t, r, dynamic_shared_memory=dyn, opt_in=opt_in)
    b = solve(dev, t, r, dynamic_shared_memory=dyn + extra, opt_in=opt_in)
    assert b.active_blocks_per_sm <= a.active_blocks_per_sm


@settings(max_examples=600, deadline=None)
@given(devices, threads, regs, st.integers(0, 48 * 1024), smem, carveouts,
       st.integers(0, 16), st.booleans(), st.booleans(), st.one_of(st.none(), st.integers(1, 1024)))
def test_result_is_consistent(dev: Device, t: int, r: int, static: int, dyn: int,
                              carveout: int | None, barriers: int, opt_in: bool, pgc: bool,
                              bound: int | None) -> None:
    res = solve(dev, t, r, static, dyn, carveout, bound, barriers, opt_in, pgc)
    assert 0 <= res.active_threads_per_sm <= dev.max_threads_per_sm
    assert res.active_warps_per_sm <= dev.max_warps_per_sm
    assert 0.0 <= res.occupancy <= 1.0
    assert res.active_blocks_per_sm <= dev.max_blocks_per_sm
    # Never more blocks than any one resource allows, and the limiters are exactly those.
    finite = [v for v in res.block_limits.values() if v is not None]
    if res.launchable:
        assert res.active_blocks_per_sm == min(finite) > 0
        assert res.limiters == {k for k, v in res.block_limits.items()
                                if v == res.active_blocks_per_sm}
        assert res.allocated_shared_memory_per_block * res.active_blocks_per_sm \
            <= res.shared_memory_per_sm_bytes
        # The register file holds every resident warp.
        assert res.allocated_registers_per_block * res.active_blocks_per_sm \
            <= dev.registers_per_sm
    else:
        assert res.active_blocks_per_sm == 0 and res.cannot_launch


@settings(max_examples=150, deadline=None)
@given(devices, st.integers(1, 1024), st.integers(0, 200), st.integers(0, 64 * 1024))
def test_cliffs_are_where_they_say(dev: Device, t: int, r: int, dyn: int) -> None:
    res = solve(dev, t, r, dynamic_shared_memory=dyn)
    if not res.launchable:
        return
    reg, sm = cliffs(dev, res)
    a = res.active_blocks_per_sm
    if reg.gain_at is not None:
        assert solve(dev, t, reg.gain_at, dynamic_shared_memory=dyn).active_blocks_per_sm > a
        assert solve(dev, t, reg.gain_at + 1, dynamic_shared_memory=dyn).active_blocks_per_sm <= a
    if reg.lose_at is not None:
        assert solve(dev, t, reg.lose_at, dynamic_shared_memory=dyn).active_blocks_per_sm < a
        assert solve(dev, t, reg.lose_at - 1, dynamic_shared_memory=dyn).active_blocks_per_sm == a
    if sm.lose_at is not None:
        assert solve(dev, t, r, dynamic_shared_memory=sm.lose_at).active_blocks_per_sm < a


texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)


@settings(max_examples=150, deadline=None)
@given(texts, texts, texts)
def test_fuzzed_cli_input_never_tracebacks(threads: str, size: str, device: str) -> None:
    runner = CliRunner()
    for args in (["calc", "-d", "v100", "-t", threads, "--smem", size],
                 ["calc", "-d", device or "x", "-t", "256"],
                 ["best", "-d", "a100", "--dyn-smem", size]):
        r = runner.invoke(main, args)
        assert r.exit_code in (0, 2), (args, r.output)
        assert r.exception is None or isinstance(r.exception, SystemExit), (args, r.exception)
        if r.exit_code == 2:
            assert r.stderr.startswith("Error: ") and "Traceback" not in r.output


@settings(max_examples=500, deadline=None)
@given(st.lists(st.text(st.one_of(st.sampled_from(":\n \t\x1b\r\u2028\xa0a"), st.characters())),
                max_size=4), st.booleans())
def test_inert_lines_skips_only_lines_with_nothing_to_escape(chunks: list[str], tty: bool) -> None:
    """InertLines passes a line that str.isprintable() accepts whole: what it writes is what
    looking at every character writes."""
    import io

    from occupancy.inputs.safety import InertLines

    class Stream(io.StringIO):
        def isatty(self) -> bool:
            return tty

    fast, slow = InertLines(Stream()), InertLines(Stream())
    for chunk in chunks:
        fast.write(chunk)
        for line in chunk.splitlines(keepends=True):  # the character-by-character writer
            body = "".join(slow._char(ch) for ch in line)
            if slow.at_start and body.lstrip().startswith("::"):
                i = body.index("::")
                body = body[:i] + ":\\" + body[i + 1:]
            slow.stream.write(body)
            slow.at_start = line.endswith("\n")
    assert fast.stream.getvalue() == slow.stream.getvalue()  # type: ignore[attr-defined]
