"""Loading and validating device profiles: shipped ones, a user directory, or a path."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from occupancy.core.device import Device, cc_row
from occupancy.core.errors import ProfileError, UnknownComputeCapabilityError, UnknownDeviceError
from occupancy.inputs.files import YamlDoc, data_dir, display, read_yaml
from occupancy.inputs.safety import excerpt, inert

ENV_DIR = "OCCUPANCY_PROFILES"

# key -> (python type, required, what a valid value is). One table drives validation,
# the README's schema section is checked against it by a test.
_INT, _FLOAT, _STR = int, float, str
SCHEMA: dict[str, tuple[Any, bool, str]] = {
    "name": (_STR, True, "a non-empty string"),
    "aliases": (list, False, "a list of short names"),
    "compute_capability": (_STR, True, 'a string "major.minor", e.g. "8.6"'),
    "architecture": (_STR, True, "a non-empty string"),
    "warp_size": (_INT, True, "32"),
    "max_threads_per_block": (_INT, True, "a positive integer"),
    "max_threads_per_sm": (_INT, True, "a positive multiple of warp_size"),
    "max_blocks_per_sm": (_INT, True, "a positive integer"),
    "registers_per_sm": (_INT, True, "a positive integer"),
    "registers_per_block": (_INT, True, "a positive integer <= registers_per_sm"),
    "max_registers_per_thread": (_INT, True, "a positive integer"),
    "register_allocation": (_STR, True, "'warp' or 'block'"),
    "register_allocation_unit": (_INT, True, "a positive integer"),
    "warp_allocation_granularity": (_INT, True, "a positive integer"),
    "sub_partitions": (_INT, True, "a positive integer"),
    "register_check_sub_partitions": (_INT, False, "null or a positive integer"),
    "shared_memory_per_sm_bytes": (_INT, True, "a positive integer"),
    "shared_memory_per_block_bytes": (_INT, True, "a positive integer"),
    "shared_memory_per_block_optin_bytes": (_INT, True, "an integer >= shared_memory_per_block_bytes"),
    "reserved_shared_memory_per_block_bytes": (_INT, True, "an integer >= 0"),
    "shared_memory_allocation_unit_bytes": (_INT, True, "a positive integer"),
    "shared_memory_carveout_bytes": (list, True, "a list of sizes in bytes, ascending ([] if fixed)"),
    "block_barriers_per_sm": (_INT, False, "null or a positive integer"),
    "partitioned_global_caching": (bool, True, "true or false"),
    "sm_count": (_INT, True, "a positive integer"),
    "boost_clock_mhz": (_FLOAT, True, "a positive number"),
    "dram_bandwidth_gb_s": (_FLOAT, True, "a positive number"),
    "fp32_gflops": (_FLOAT, True, "a positive number"),
    "l2_cache_bytes": (_INT, True, "an integer >= 0"),
    "shared_memory_banks": (_INT, True, "16 or 32"),
    "shared_memory_bank_width_bytes": (_INT, True, "4"),
    "virtual_resources_per_sm": (_INT, False, "null or a positive integer (CC 10-12: 128)"),
    "max_cluster_size": (_INT, False, "null or the non-portable cluster size limit (Hopper: 16)"),
    "gpc_count": (_INT, False, "null or the number of GPCs"),
    "l1_shared_memory_bytes": (_INT, False, "null or the unified L1 + shared memory per SM, "
                                            "above shared_memory_per_sm_bytes"),
    "cluster_table": (list, False, "rows of active clusters per GPU (blocks per SM 1.., cluster "
                                   "size 1..), measured by occupancy devices detect"),
    "sources": (dict, True, "a mapping from figure to where it came from"),
}
SOURCED = ("limits", "sm_count", "boost_clock_mhz", "dram_bandwidth_gb_s", "fp32_gflops",
           "l2_cache_bytes")
_NON_NEGATIVE = {"reserved_shared_memory_per_block_bytes", "l2_cache_bytes"}


# Upper bounds a real GPU stays far below: a profile beyond them is a typo or an attack,
# and every sweep and search is sized by these numbers.
_PLAUSIBLE: dict[str, int | float] = {
    "warp_size": 64, "max_threads_per_block": 65_536, "max_threads_per_sm": 65_536,
    "max_blocks_per_sm": 1_024, "registers_per_sm": 1 << 24, "registers_per_block": 1 << 24,
    "max_registers_per_thread": 1_024, "register_allocation_unit": 1 << 16,
    "warp_allocation_granularity": 64, "sub_partitions": 64, "register_check_sub_partitions": 64,
    "shared_memory_per_sm_bytes": 16 << 20, "shared_memory_per_block_bytes": 16 << 20,
    "shared_memory_per_block_optin_bytes": 16 << 20,
    "reserved_shared_memory_per_block_bytes": 1 << 20,
    "shared_memory_allocation_unit_bytes": 1 << 20, "block_barriers_per_sm": 1 << 16,
    "sm_count": 100_000, "boost_clock_mhz": 100_000.0, "dram_bandwidth_gb_s": 1e6,
    "fp32_gflops": 1e8, "l2_cache_bytes": 1 << 34, "shared_memory_banks": 64,
    "shared_memory_bank_width_bytes": 64, "virtual_resources_per_sm": 1 << 16,
    "max_cluster_size": 64, "gpc_count": 1024, "l1_shared_memory_bytes": 16 << 20,
}


def _type_ok(value: Any, kind: Any) -> bool:
    if kind is _INT:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is _FLOAT:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is bool:
        return isinstance(value, bool)
    return isinstance(value, kind)


class _Problems:
    """Every problem of one profile, reported at once in one line."""

    def __init__(self, path: str, doc: YamlDoc | None) -> None:
        self.path, self.doc = path, doc
        self.items: list[tuple[int | None, str]] = []

    def add(self, message: str, key: str | None = None) -> None:
        self.items.append((self.doc.line(key) if key and self.doc else None, message))

    def raise_if_any(self) -> None:
        if not self.items:
            return
        if len(self.items) == 1:
            line, msg = self.items[0]
            raise ProfileError(msg, self.path, line)
        parts = [(f"line {ln}: " if ln else "") + m for ln, m in
                 sorted(self.items, key=lambda x: (x[0] or 0))]
        raise ProfileError(f"{len(parts)} problems: " + "; ".join(parts), self.path)


def _unknown_keys(data: dict[Any, Any], errs: _Problems, path: str, doc: YamlDoc | None) -> None:
    """The first unknown key (and how many more), never the lines of a file that is not a
    profile at all."""
    unknown = [k for k in data if k not in SCHEMA and k not in _LINK_KEYS]
    if not unknown:
        return
    first = unknown[0]
    line = doc.line(str(first)) if doc else None
    if len(unknown) == len(data):
        raise ProfileError(f"not a device profile: none of its keys is a profile key (the "
                           f"first: {excerpt(first)}); see README, 'Device profiles'", path, line)
    import difflib

    near = difflib.get_close_matches(str(first), SCHEMA, n=1)
    hint = f"; did you mean '{near[0]}'?" if near else "; see README, 'Device profiles'"
    more = f" (and {len(unknown) - 1} more unknown keys)" if len(unknown) > 1 else ""
    errs.add(f"unknown key {excerpt(first)}{more}{hint}", str(first))


def device_from_mapping(data: Any, path: str, doc: YamlDoc | None = None) -> Device:
    """Validate a parsed profile and build the Device; every problem is reported at once,
    each with its line and key and the fix."""
    if not isinstance(data, dict):
        raise ProfileError("a profile must be a mapping of keys to values (see README, "
                           "'Device profiles')", path)
    errs = _Problems(path, doc)
    _unknown_keys(data, errs, path, doc)
    _check_schema(data, errs)
    errs.raise_if_any()
    major = _check_cc(data["compute_capability"], errs)
    _check_consistency(data, errs)
    errs.raise_if_any()
    return _build_device(data, major, path)


def _check_schema(data: dict[str, Any], errs: _Problems) -> None:
    """Every key present where required, of its type, and within real GPUs' range."""
    import math

    for key, (kind, required, what) in SCHEMA.items():
        if key not in data or data[key] is None:
            if required:
                errs.add(f"missing key '{key}': add it ({what})")
            continue
        value = data[key]
        if not _type_ok(value, kind):
            errs.add(f"{key} must be {what}, got {inert(repr(value)[:40])}", key)
            continue
        if kind in (_INT, _FLOAT):
            if isinstance(value, float) and not math.isfinite(value):
                errs.add(f"{key} must be a finite number, got {value!r}", key)
            elif value < 0 or (value == 0 and key not in _NON_NEGATIVE):
                errs.add(f"{key} must be {what}, got {value!r}", key)
            elif (top := _PLAUSIBLE.get(key)) is not None and value > top:
                errs.add(f"{key} = {value:,} is beyond any real GPU (at most {top:,}): fix "
                         "the profile", key)
        if kind in (list, dict, _STR) and len(value) > 256:
            errs.add(f"{key} is too long ({len(value)} items or characters, at most 256)", key)


def _check_cc(cc: str, errs: _Problems) -> int:
    """The compute capability's major number (-1 if it is not "major.minor"); one outside
    the table is a problem."""
    major = int(cc.split(".")[0]) if re.fullmatch(r"\d+\.\d+", cc) else -1
    if major < 0:
        errs.add(f'compute_capability must be "major.minor", got {cc!r}', "compute_capability")
    elif major >= 3:
        try:
            cc_row(cc)
        except UnknownComputeCapabilityError as exc:
            errs.add(str(exc), "compute_capability")
    elif cc not in ("1.0", "1.1", "1.2", "1.3", "2.0", "2.1"):
        errs.add(f"unknown compute capability {cc}", "compute_capability")

    return major


def _require(errs: _Problems, cond: bool, key: str, message: str) -> None:
    if not cond:
        errs.add(f"{key}: {message}", key)


def _check_consistency(d: dict[str, Any], errs: _Problems) -> None:
    """The keys against each other: multiples, orders, sizes that must fit, sources."""
    _require(errs, d["register_allocation"] in ("warp", "block"), "register_allocation",
             f"must be 'warp' or 'block', got {d['register_allocation']!r}")
    _require(errs, d["max_threads_per_sm"] % d["warp_size"] == 0, "max_threads_per_sm",
             "must be a multiple of warp_size")
    _require(errs, d["max_threads_per_block"] <= d["max_threads_per_sm"], "max_threads_per_block",
             "must not exceed max_threads_per_sm")
    _require(errs, d["registers_per_block"] <= d["registers_per_sm"], "registers_per_block",
             "must not exceed registers_per_sm")
    _require(errs, d["shared_memory_per_block_bytes"] <= d["shared_memory_per_block_optin_bytes"],
             "shared_memory_per_block_optin_bytes",
             "must be >= shared_memory_per_block_bytes (equal when the GPU has no opt-in)")
    _require(errs, d["shared_memory_per_block_optin_bytes"] + d["reserved_shared_memory_per_block_bytes"]
             <= d["shared_memory_per_sm_bytes"], "shared_memory_per_block_optin_bytes",
             "plus the reserved smem per block must fit in shared_memory_per_sm_bytes")
    sizes = d["shared_memory_carveout_bytes"]
    _require(errs, all(_type_ok(x, _INT) and x >= 0 for x in sizes), "shared_memory_carveout_bytes",
             "must list non-negative integers (bytes)")
    if all(_type_ok(x, _INT) for x in sizes):
        _require(errs, list(sizes) == sorted(set(sizes)), "shared_memory_carveout_bytes",
                 "must be ascending without repeats")
        _require(errs, not sizes or sizes[-1] == d["shared_memory_per_sm_bytes"],
                 "shared_memory_carveout_bytes",
                 "the largest size must equal shared_memory_per_sm_bytes")
    unified = d.get("l1_shared_memory_bytes")
    _require(errs, unified is None or not _type_ok(unified, _INT)
             or unified > d["shared_memory_per_sm_bytes"], "l1_shared_memory_bytes",
             "must exceed shared_memory_per_sm_bytes (the L1 keeps what the largest "
             "shared-memory size leaves)")
    if unified is not None and "l1_shared_memory_bytes" not in d["sources"]:
        errs.add("sources: say where l1_shared_memory_bytes came from", "sources")
    missing = [k for k in SOURCED if k not in d["sources"]]
    if missing:
        errs.add(f"sources: say where {', '.join(missing)} came from", "sources")
    aliases = d.get("aliases") or []
    _require(errs, all(isinstance(a, str) and a for a in aliases), "aliases",
             "must be a list of non-empty strings")
    table = d.get("cluster_table") or []
    rows_ok = len(table) <= 64 and all(
        isinstance(row, list) and 1 <= len(row) <= 64
        and all(_type_ok(v, _INT) and 0 <= v <= 1 << 24 for v in row) for row in table)
    _require(errs, rows_ok, "cluster_table", "must be rows (blocks per SM 1, 2, ...) of "
             "non-negative integers (cluster size 1, 2, ...)")


def _build_device(d: dict[str, Any], major: int, path: str) -> Device:
    cc = d["compute_capability"]
    aliases = d.get("aliases") or []
    sizes = d["shared_memory_carveout_bytes"]
    table = d.get("cluster_table") or []
    values: dict[str, Any] = {k: d.get(k) for k in SCHEMA}
    values["aliases"] = tuple(a.lower() for a in aliases)
    values["shared_memory_carveout_bytes"] = tuple(sizes)
    values["cluster_table"] = tuple(tuple(row) for row in table)
    # Absent (not null): the compute capability's own value, from cuda_occupancy.h's table.
    if major >= 3:
        row = cc_row(cc)
        defaults = {"virtual_resources_per_sm": row.virtual_resources,
                    "max_cluster_size": row.max_cluster}
        values.update({k: v for k, v in defaults.items() if k not in d})
    values["sources"] = {str(k): str(v)[:1000] for k, v in d["sources"].items()}
    for k in ("boost_clock_mhz", "dram_bandwidth_gb_s", "fp32_gflops"):
        values[k] = float(values[k])
    return Device(**values, path=path)


_LINK_KEYS = {"extends", "overrides"}
# What a profile that extends another does not inherit: the SKU's own identity, and the
# cluster table (placement differs between SKUs and even between chips).
_NOT_INHERITED = {"name", "aliases", "cluster_table", "gpc_count", "overrides"}
MAX_EXTENDS = 4


def load_profile(path: str | os.PathLike[str], _chain: tuple[str, ...] = ()) -> Device:
    """Read and validate one YAML profile. `extends: NAME|PATH` starts from another profile
    and changes only the keys it gives; `overrides: NAME` replaces a shipped profile."""
    doc = read_yaml(path, ProfileError,
                    "give a profile path or a device name (occupancy devices lists them)",
                    what="profile")
    shown = display(path)
    data = doc.data
    link: dict[str, str] = {}
    if isinstance(data, dict):
        for key in _LINK_KEYS & set(data):
            v = data[key]
            if not isinstance(v, str) or not v or len(v) > 256:
                raise ProfileError(f"{key} must be a device name or a profile path", shown,
                                   doc.line(key))
            link[key] = v
    if "extends" in link:
        real = os.path.realpath(path)
        if real in _chain or len(_chain) >= MAX_EXTENDS:
            raise ProfileError(f"extends: a chain of more than {MAX_EXTENDS} profiles or a cycle "
                               f"({' -> '.join(map(display, (*_chain, real)))})", shown,
                               doc.line("extends"))
        base = _base_profile(link["extends"], Path(path).parent, (*_chain, real), shown,
                             doc.line("extends"))
        merged = {k: v for k, v in base.to_dict().items() if k not in _NOT_INHERITED}
        merged.update({k: v for k, v in data.items() if k not in _LINK_KEYS})
        merged["sources"] = {**base.sources, **(data.get("sources") or {})} \
            if isinstance(data.get("sources") or {}, dict) else data.get("sources")
        data = merged
    elif isinstance(data, dict):
        data = {k: v for k, v in data.items() if k != "overrides"}
    dev = device_from_mapping(data, shown, doc)
    return dataclasses.replace(dev, overrides=link["overrides"].lower()) if "overrides" in link else dev


def _base_profile(ref: str, here: Path, chain: tuple[str, ...], shown: str, line: int | None
                  ) -> Device:
    if ref.endswith((".yaml", ".yml")) or "/" in ref or os.sep in ref:
        p = Path(ref) if os.path.isabs(ref) else here / ref
        return load_profile(p, chain)
    # By name: a shipped or user file of that name (the chain sees cycles through names
    # too), else a shipped profile's full name or alias. Never the whole catalogue: it
    # loads every user profile, this one included.
    for f in (*shipped_dir().glob("*.yaml"), *_user_files()):
        if f.stem.lower() == ref.lower():
            return load_profile(f, chain)
    try:
        return _shipped_names()[ref.lower()]
    except KeyError:
        raise ProfileError(f"extends: no shipped profile '{inert(ref)}' (occupancy devices lists "
                           "them)", shown, line) from None


def shipped_dir() -> Path:
    """profiles/ inside the installed package, or at the top of a source checkout."""
    return data_dir("profiles")


def user_dirs() -> list[Path]:
    """$OCCUPANCY_PROFILES (os.pathsep-separated), then $XDG_CONFIG_HOME/occupancy/profiles."""
    dirs = [Path(p) for p in os.environ.get(ENV_DIR, "").split(os.pathsep) if p]
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    dirs.append(Path(xdg) / "occupancy" / "profiles")
    return dirs


def _user_files() -> list[Path]:
    return [f for d in user_dirs() if d.is_dir() for f in sorted(d.glob("*.yaml")) if f.is_file()]


def _shipped_names() -> dict[str, Device]:
    out: dict[str, Device] = {}
    for f in sorted(shipped_dir().glob("*.yaml")):
        dev = _load(f)
        out.update(dict.fromkeys(_names(dev, f.stem), dev))
    return out


def _profile_files() -> Iterator[Path]:
    yield from sorted(shipped_dir().glob("*.yaml"))
    for d in user_dirs():
        if d.is_dir():
            for f in sorted(d.glob("*.yaml")):
                if f.is_file():
                    yield f
                else:  # a dangling link or a folder named *.yaml: skip it, say so once
                    _warn(f"skipping {display(f)}: not a readable profile file")


@cache
def _warn(message: str) -> None:
    import sys

    print(f"warning: {message}", file=sys.stderr)


@cache
def _load_cached(path: str, mtime_ns: int) -> Device:
    return load_profile(path)


def _load(path: Path) -> Device:
    return _load_cached(str(path), path.stat().st_mtime_ns)


def _names(dev: Device, stem: str) -> set[str]:
    return {stem.lower(), dev.name.lower(), *dev.aliases}


_broken: dict[str, ProfileError] = {}  # user profiles that failed to load, by file stem


def _catalogue() -> dict[str, Device]:
    """Every name and alias -> its device. Shipped names never collide (a test keeps it so);
    a user profile that takes a shipped name or alias must say `overrides: THAT`, and then
    replaces that shipped profile everywhere."""
    shipped_files = sorted(shipped_dir().glob("*.yaml"))
    names: dict[str, Device] = {}
    owner: dict[str, str] = {}
    for f in shipped_files:
        dev = _load(f)
        for n in _names(dev, f.stem):
            names[n], owner[n] = dev, dev.key
    shipped_keys = set(owner.values())
    for f in _profile_files():
        if f.parent == shipped_dir() or f in shipped_files:
            continue
        try:
            dev = _load(f)
        except ProfileError as exc:  # one broken user profile must not break every command
            _broken[f.stem.lower()] = exc  # said by all_devices, raised when asked for by name
            continue
        # The file stem and the aliases are claims; a full name shared with a shipped
        # profile (a copied file) stays the shipped one's.
        claims = {f.stem.lower(), *dev.aliases}
        taken = {owner[n] for n in claims if n in owner and owner[n] in shipped_keys}
        if taken:
            target = sorted(taken)[0]
            allowed = {n for n, k in owner.items() if k in taken}
            if dev.overrides is None or dev.overrides not in allowed:
                raise ProfileError(f"it reuses the shipped name or alias of '{target}': add "
                                   f"'overrides: {target}' to replace that profile, or rename it",
                                   display(f))
            # It takes over every name of the profile it replaces.
            replaced = [n for n, k in owner.items() if k in taken]
            claims |= set(replaced)
            for n in replaced:
                names[n], owner[n] = dev, dev.key
        for n in _names(dev, f.stem):
            if n not in names or n in claims:
                names[n], owner[n] = dev, dev.key
    return names


def all_devices() -> list[Device]:
    """Every shipped and user profile, once each (a user profile with `overrides:` replaces
    the shipped one)."""
    devs = list({id(d): d for d in _catalogue().values()}.values())
    for exc in _broken.values():
        _warn(f"skipping a user profile: {exc}")
    return devs


def load_device(name: str | os.PathLike[str] | Device) -> Device:
    """A device by name, alias (case-insensitive) or path to a YAML profile."""
    if isinstance(name, Device):
        return name
    text = str(name)
    if text.endswith((".yaml", ".yml")) or os.sep in text or "/" in text:
        return load_profile(text)
    wanted = text.strip().lower()
    # A shipped file named after the alias is found without parsing the others (fast
    # start-up), unless a user profile might claim that name.
    user = [f for d in user_dirs() if d.is_dir() for f in d.glob("*.yaml")]
    if not user:
        for f in shipped_dir().glob("*.yaml"):
            if f.stem.lower() == wanted:
                return _load(f)
    known = _catalogue()
    if wanted in known:
        return known[wanted]
    if wanted in _broken:
        raise _broken[wanted]
    import difflib

    near = difflib.get_close_matches(wanted, known, n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(near)}? " if near else ""
    raise UnknownDeviceError(
        f"unknown device '{inert(text)}': {hint}run 'occupancy devices' for the list, "
        "or pass a profile path (-d my_gpu.yaml)"
    )


def to_yaml(dev: Device) -> str:
    """A profile file for a Device (what `devices detect -o` writes); loads back equal."""
    data = dev.to_dict()
    lines = [f"# {dev.name}: device profile for occupancy (schema: README.md, 'Device profiles')"]
    body = yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)
    return "\n".join(lines) + "\n" + body

