"""Profiles: every shipped one loads; bad ones fail with file, line, key and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from occupancy import (
    Device,
    ProfileError,
    UnknownComputeCapabilityError,
    UnknownDeviceError,
    load_device,
    load_profile,
)
from occupancy.inputs.profiles import SCHEMA, all_devices, shipped_dir, to_yaml

from .test_differential import props_for

REQUIRED = ["gt200", "m2050", "k20c", "gtx1080", "v100", "t4", "a100", "rtx3090", "rtx4090",
            "h100", "h200"]
ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("alias", REQUIRED)
def test_required_profiles_and_aliases(alias: str) -> None:
    dev = load_device(alias)
    assert load_device(alias.upper()) == dev
    assert alias in dev.aliases


def test_every_shipped_profile_loads_with_sources() -> None:
    devs = all_devices()
    assert len(devs) >= 15
    for d in devs:
        assert {"limits", "sm_count", "dram_bandwidth_gb_s", "fp32_gflops"} <= set(d.sources)
        # the unified L1 + shared memory array from Volta on, the L1 what the largest
        # shared-memory size leaves (28-32 KB); separate caches before
        if d.cc_major >= 7:
            assert d.l1_shared_memory_bytes is not None, d.name
            assert 28 << 10 <= d.l1_shared_memory_bytes - d.shared_memory_per_sm_bytes <= 32 << 10
        else:
            assert d.l1_shared_memory_bytes is None, d.name


def test_table_figures_from_reference() -> None:
    h200 = load_device("h200")
    assert (h200.shared_memory_per_sm_bytes, h200.shared_memory_per_block_optin_bytes,
            h200.reserved_shared_memory_per_block_bytes, h200.l2_cache_bytes) == (
        233_472, 232_448, 1024, 62_914_560)
    assert load_device("p100").sub_partitions == 2
    assert load_device("gtx980").registers_per_block == 32768
    assert load_device("t4").max_threads_per_sm == 1024


def test_lookup_by_full_name_and_path() -> None:
    assert load_device("NVIDIA Tesla V100 SXM2").key == "v100"
    assert load_device(str(shipped_dir() / "a100.yaml")).key == "a100"


def test_unknown_device_suggests_close_names() -> None:
    with pytest.raises(UnknownDeviceError, match="did you mean.*v100"):
        load_device("v10")


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _v100_text() -> str:
    return (shipped_dir() / "v100.yaml").read_text()


def test_user_dir_profiles_join_the_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = _v100_text().replace("aliases: [v100, tesla-v100, v100-sxm2, gv100]",
                                "aliases: [myv100]").replace("sm_count: 80", "sm_count: 84")
    _write(tmp_path, "myv100.yaml", text)
    monkeypatch.setenv("OCCUPANCY_PROFILES", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "none"))
    assert load_device("myv100").sm_count == 84
    assert any(d.key == "myv100" for d in all_devices())


def test_xdg_config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = tmp_path / "occupancy" / "profiles"
    d.mkdir(parents=True)
    _write(d, "lab.yaml", _v100_text().replace(
        "aliases: [v100, tesla-v100, v100-sxm2, gv100]", "aliases: [lab]"))
    monkeypatch.delenv("OCCUPANCY_PROFILES", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert load_device("lab").compute_capability == "7.0"


BAD = [
    ("missing key", lambda t: t.replace("registers_per_sm: 65536\n", ""),
     "missing key 'registers_per_sm'", None),
    ("unknown key", lambda t: t.replace("warp_size: 32", "warp_size: 32\nregister_per_sm: 1"),
     "unknown key 'register_per_sm'; did you mean 'registers_per_sm'?", 9),
    ("wrong type", lambda t: t.replace("max_blocks_per_sm: 32", "max_blocks_per_sm: lots"),
     "max_blocks_per_sm must be a positive integer, got 'lots'", 11),
    ("negative", lambda t: t.replace("registers_per_sm: 65536", "registers_per_sm: -1"),
     "registers_per_sm must be a positive integer, got -1", 12),
    ("inconsistent", lambda t: t.replace("registers_per_block: 65536", "registers_per_block: 131072"),
     "registers_per_block: must not exceed registers_per_sm", 13),
    ("opt-in below default", lambda t: t.replace("shared_memory_per_block_optin_bytes: 98304",
                                                  "shared_memory_per_block_optin_bytes: 1024"),
     "must be >= shared_memory_per_block_bytes", 22),
    ("carveout", lambda t: t.replace("[0, 8192, 16384, 32768, 65536, 98304]", "[0, 8192]"),
     "the largest size must equal shared_memory_per_sm_bytes", 25),
    ("unknown CC", lambda t: t.replace('compute_capability: "7.0"', 'compute_capability: "7.7"'),
     "unknown compute capability 7.7", 4),
    ("bad CC", lambda t: t.replace('compute_capability: "7.0"', "compute_capability: 7.0"),
     "compute_capability must be a string", 4),
    ("yaml syntax", lambda t: t.replace("warp_size: 32", "warp_size: [32"),
     "YAML syntax error", None),
    ("not a mapping", lambda t: "- just\n- a list\n", "a profile must be a mapping", None),
    ("sources", lambda t: t.replace("  fp32_gflops:", "  fp32_gflops_x:"),
     "sources: say where fp32_gflops came from", None),
    ("L1 below shared memory", lambda t: t.replace("l1_shared_memory_bytes: 131072",
                                                    "l1_shared_memory_bytes: 98304"),
     "l1_shared_memory_bytes: must exceed shared_memory_per_sm_bytes", 37),
    ("L1 without a source", lambda t: t.replace("  l1_shared_memory_bytes:", "  l1_x:"),
     "sources: say where l1_shared_memory_bytes came from", None),
]


@pytest.mark.parametrize(("case", "edit", "message", "line"), BAD, ids=[b[0] for b in BAD])
def test_bad_profiles(tmp_path: Path, case: str, edit: object, message: str,
                      line: int | None) -> None:
    p = _write(tmp_path, "bad.yaml", edit(_v100_text()))  # type: ignore[operator]
    with pytest.raises(ProfileError) as info:
        load_profile(p)
    text = str(info.value)
    assert text.startswith(str(p)), text
    assert message in text, text
    if line is not None:
        assert f"line {line}:" in text, text


def test_missing_file_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="no such file"):
        load_device(str(tmp_path / "nope.yaml"))


def test_readme_documents_every_profile_key() -> None:
    readme = (ROOT / "README.md").read_text()
    for key in SCHEMA:
        assert f"`{key}`" in readme, key


def test_from_cuda_properties_h200() -> None:
    props = props_for("9.0")
    props.update({"name": b"NVIDIA H200\x00\x00", "multiProcessorCount": 132,
                  "maxBlocksPerMultiProcessor": 32, "clockRate": 1980000,
                  "memoryClockRate": 3201000, "memoryBusWidth": 6016, "l2CacheSize": 62914560})
    dev = Device.from_cuda_properties(props)
    shipped = load_device("h200")
    assert dev.name == "NVIDIA H200"
    arch = ["warp_size", "max_threads_per_block", "max_threads_per_sm", "max_blocks_per_sm",
            "registers_per_sm", "registers_per_block", "max_registers_per_thread",
            "register_allocation", "register_allocation_unit", "sub_partitions",
            "shared_memory_per_sm_bytes", "shared_memory_per_block_bytes",
            "shared_memory_per_block_optin_bytes", "reserved_shared_memory_per_block_bytes",
            "shared_memory_allocation_unit_bytes", "shared_memory_carveout_bytes",
            "block_barriers_per_sm", "partitioned_global_caching", "sm_count", "l2_cache_bytes",
            "l1_shared_memory_bytes"]
    for key in arch:
        assert getattr(dev, key) == getattr(shipped, key), key
    assert round(dev.dram_bandwidth_gb_s) == 4814  # 3201 MHz x 6016 bit, DDR


def test_from_cuda_properties_refuses_unknown_cc() -> None:
    props = props_for("9.0")
    props["minor"] = 5
    with pytest.raises(UnknownComputeCapabilityError, match="unknown compute capability 9.5"):
        Device.from_cuda_properties(props)
    with pytest.raises(UnknownComputeCapabilityError, match="lack 'regsPerBlock'"):
        Device.from_cuda_properties({k: v for k, v in props_for("8.0").items()
                                     if k != "regsPerBlock"})


def test_detected_profile_round_trips(tmp_path: Path) -> None:
    dev = Device.from_cuda_properties(props_for("8.6"))
    p = _write(tmp_path, "mine.yaml", to_yaml(dev))
    again = load_profile(p)
    assert again.to_dict() == dev.to_dict()
    assert yaml.safe_load(p.read_text())["compute_capability"] == "8.6"


def test_shipped_aliases_never_collide_and_new_profiles_load() -> None:
    seen: dict[str, str] = {}
    for f in sorted(shipped_dir().glob("*.yaml")):
        dev = load_profile(f)
        for n in {f.stem.lower(), *dev.aliases}:
            assert n not in seen, (n, f.name, seen.get(n))
            seen[n] = f.name
    for key in ("a100-80gb", "h100-pcie", "l4", "l40s", "a10", "gh200", "rtx6000ada"):
        dev = load_device(key)
        assert dev.key == key and dev.sources, key


def test_extends_changes_only_the_keys_it_gives() -> None:
    base, child = load_device("a100").to_dict(), load_device("a100-80gb").to_dict()
    differ = {k for k in base if base[k] != child[k]}
    assert differ == {"name", "aliases", "dram_bandwidth_gb_s", "sources"}
    assert child["sources"]["sm_count"] == base["sources"]["sm_count"]
    assert load_device("h100-pcie").sm_count == 114
    assert load_device("l4").compute_capability == "8.9"
    assert load_device("gh200").cluster_table == ()  # a measured table is a chip's own


def test_extends_errors(tmp_path: Path) -> None:
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text("extends: b.yaml\nname: A\n")
    b.write_text("extends: a.yaml\nname: B\n")
    with pytest.raises(ProfileError, match="cycle"):
        load_profile(a)
    a.write_text("extends: nosuchgpu\nname: A\n")
    with pytest.raises(ProfileError, match="no shipped profile 'nosuchgpu'"):
        load_profile(a)


def test_user_profile_reusing_a_shipped_alias(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OCCUPANCY_PROFILES", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "none"))
    (tmp_path / "mine.yaml").write_text("extends: a100\nname: My A100\naliases: [a100]\nsm_count: 100\n")
    with pytest.raises(ProfileError, match="overrides: a100"):
        load_device("a100")
    (tmp_path / "mine.yaml").write_text(
        "extends: a100\noverrides: a100\nname: My A100\naliases: [a100]\nsm_count: 100\n")
    assert load_device("a100").sm_count == 100 and load_device("ga100").sm_count == 100
    assert sum(d.name == "My A100" for d in all_devices()) == 1
    assert not any(d.name == "NVIDIA A100 SXM4 40GB" for d in all_devices())


def test_every_problem_at_once(tmp_path: Path) -> None:
    text = _v100_text().replace("sm_count: 80", "sm_count: -3").replace(
        "warp_size: 32", "warp_size: .nan").replace("register_allocation: warp", "regalloc: warp")
    p = _write(tmp_path, "bad.yaml", text)
    with pytest.raises(ProfileError) as info:
        load_profile(p)
    msg = str(info.value)
    assert "problems:" in msg and "sm_count" in msg and "warp_size" in msg and "regalloc" in msg
    assert "\n" not in msg
