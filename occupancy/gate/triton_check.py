"""`occupancy check` for a manifest's `triton:` entries: one verdict per config x device.

Every config is compiled offline for each device's architecture (build/triton_entry.py,
in parallel and cached), for each problem point whose call specializes differently. A
config fails where Triton would refuse to load it ("config 7 needs 147,456 B of shared
memory; sm_120 allows 101,376 B"), where the solver says it cannot launch, where it falls
under the occupancy floor, or where it does not compile for that target. Without Triton
installed, each entry x device is an `error` verdict and the rest is still judged.
"""

from __future__ import annotations

from occupancy.build.resources import CompilerUnavailable
from occupancy.build.triton import TritonKernel, occupancy, out_of_resources
from occupancy.build.triton_entry import INSTALL, EntryKernels, compile_entry
from occupancy.core.device import Device
from occupancy.core.errors import OccupancyError
from occupancy.gate.judge import Verdict, verdict
from occupancy.inputs.manifest import KernelSpec, Manifest
from occupancy.inputs.manifest.triton import TritonSpec
from occupancy.inputs.safety import inert


def triton_verdicts(manifest: Manifest, jobs: int | None = None) -> list[Verdict]:
    out: list[Verdict] = []
    for spec in manifest.triton:
        out += entry_verdicts(spec, manifest, jobs)
    return out


def _error(spec: TritonSpec, device: str, message: str, line: int | None = None) -> Verdict:
    return Verdict(spec.name, device, line or spec.line, "error", (inert(message),))


def entry_verdicts(spec: TritonSpec, manifest: Manifest, jobs: int | None = None
                   ) -> list[Verdict]:
    out: list[Verdict] = []
    devs: list[Device] = []
    for name in spec.devices:
        if name in manifest.device_errors:
            out.append(_error(spec, name, *manifest.device_errors[name]))
        elif name in manifest.devices:
            devs.append(manifest.devices[name])
    if not devs:
        return out
    try:
        built = compile_entry(spec, [d.compute_capability for d in devs], jobs=jobs)
    except CompilerUnavailable:
        return out + [_error(spec, d.key, INSTALL) for d in devs]
    except OccupancyError as exc:
        return out + [_error(spec, d.key, str(exc)) for d in devs]
    out += [config_verdict(spec, built, ci, dev) for ci in range(len(spec.configs))
            for dev in devs]
    return out


def config_label(spec: TritonSpec, ci: int) -> str:
    return f"{spec.name} config {ci + 1}"


def config_verdict(spec: TritonSpec, built: EntryKernels, ci: int, dev: Device) -> Verdict:
    """One config on one device, judged at every problem point (the problems of each
    point, once; 'at M=1' where the points disagree)."""
    label = config_label(spec, ci)
    arch = f"sm_{dev.compute_capability.replace('.', '')}"
    points = spec.points()
    judged = [_judge(spec, built.at(ci, pi, dev.compute_capability), dev, ci, arch)
              for pi in range(len(points))]
    status = "error" if any(j.status == "error" for j in judged) else (
        "fail" if any(j.status == "fail" for j in judged) else "pass")
    problems: list[str] = []
    sweep = spec.sweep
    for pi, j in enumerate(judged):
        for p in j.problems:
            tag = "" if sweep is None or all(p in o.problems for o in judged) else \
                f" (at {sweep}={points[pi][sweep]})"
            if p + tag not in problems and p not in problems:
                problems.append(p + tag)
    first = judged[0]
    return Verdict(label, dev.key, spec.config_lines[ci], status, tuple(problems), first.result,
                   first.resources, spec.configs[ci])


def _judge(spec: TritonSpec, k: TritonKernel, dev: Device, ci: int, arch: str) -> Verdict:
    label = config_label(spec, ci)
    line = spec.config_lines[ci]
    if not k.compiled:
        status = "error" if k.error.startswith("compile ") else "fail"
        return Verdict(label, dev.key, line, status,
                       (inert(f"config {ci + 1} does not compile for {arch}: {k.error}"),))
    res = k.resources()
    occ = occupancy(k, dev)
    refusal = out_of_resources(k, dev)
    if refusal is not None:
        return Verdict(label, dev.key, line, "fail", (_refusal(ci, k, dev, arch, refusal),),
                       occ, res)
    as_launch = KernelSpec(name=label, line=line, block=(k.threads,), devices=(dev.key,),
                           min_occupancy=spec.min_occupancy, dynamic_shared_memory=k.shared,
                           opt_in_shared_memory=True)
    return verdict(as_launch, dev, res)


def _refusal(ci: int, k: TritonKernel, dev: Device, arch: str, message: str) -> str:
    """Triton's own words, after ours: 'config 7 needs 147,456 B; sm_120 allows 101,376 B'."""
    if k.shared > dev.shared_memory_per_block_optin_bytes:
        return (f"config {ci + 1} needs {k.shared:,} B of shared memory; {arch} allows "
                f"{dev.shared_memory_per_block_optin_bytes:,} B (Triton: {message})")
    return f"config {ci + 1} cannot load on {arch} (Triton: {message})"
