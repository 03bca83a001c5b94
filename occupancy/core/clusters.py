"""Thread-block clusters (CC 9.0+): how many clusters of a launch are active on the GPU.

cuda_occupancy.h has no cluster calls, and no formula gives the answer: the GPU places a
cluster inside one GPC, so the count follows the chip's GPC/TPC layout. Measured on an
H200 (driver 580.159.04, 1,152 cudaOccupancyMaxActiveClusters queries), the count is a
function of (active blocks per SM, cluster size) alone: block size, registers, shared
memory, carveout and the cluster's shape (1-D, 2-D or 3-D of the same size) do not change
it, and blocks per SM above 8 count as 8. So a profile may carry that measured table and
the answer is exact; without one, the answer is a pair of guaranteed bounds, labelled an
estimate: at most SMs x blocks / size, and at least GPCs x (8 x blocks // size), since
the portable cluster size of 8 guarantees 8 SMs a GPC at one block per SM.
"""

from __future__ import annotations

from dataclasses import dataclass

from occupancy.core.device import Device

PORTABLE_CLUSTER_SIZE = 8
CLUSTER_BLOCKS_CAP = 8  # blocks per SM that clusters used at most on the H200


@dataclass(frozen=True)
class ClusterResult:
    """Clusters of one launch on one GPU."""

    cluster: tuple[int, int, int]
    size: int  # blocks per cluster
    active_clusters: int | None  # per GPU; exact when measured, else None
    lower: int  # guaranteed bounds (equal to active_clusters when measured)
    upper: int
    source: str  # "measured" or "estimate"
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def launchable(self) -> bool:
        return not self.problems

    @property
    def active_blocks_per_sm(self) -> float | None:
        """Average blocks per SM that clusters keep busy (exact count only when measured)."""
        return None if self.active_clusters is None else self.active_clusters * self.size


def cluster_size_problems(dev: Device, cluster: tuple[int, int, int],
                          grid: tuple[int, ...] | None = None) -> tuple[list[str], list[str]]:
    """Why a cluster shape cannot launch, and what it needs (problems, notes)."""
    problems: list[str] = []
    notes: list[str] = []
    size = cluster[0] * cluster[1] * cluster[2]
    if dev.max_cluster_size is None or dev.cc_major < 9:
        problems.append(f"thread-block clusters need compute capability 9.0 or newer; "
                        f"{dev.name} is {dev.compute_capability}")
        return problems, notes
    if size > dev.max_cluster_size:
        problems.append(f"a cluster of {size} blocks exceeds the {dev.max_cluster_size} "
                        f"{dev.name} allows (portable: {PORTABLE_CLUSTER_SIZE})")
    elif size > PORTABLE_CLUSTER_SIZE:
        notes.append(f"a cluster of {size} blocks is non-portable (over "
                     f"{PORTABLE_CLUSTER_SIZE}): set cudaFuncAttributeNonPortableClusterSizeAllowed "
                     "to 1 before the launch")
    if grid is not None:
        dims = (*grid, 1, 1)[:3]
        if any(g % c for g, c in zip(dims, cluster, strict=True)):
            problems.append(f"the grid {'x'.join(map(str, dims))} is not a multiple of the cluster "
                            f"{'x'.join(map(str, cluster))} in every dimension")
    return problems, notes


def cluster_occupancy(dev: Device, blocks_per_sm: int, cluster: tuple[int, int, int],
                      grid: tuple[int, ...] | None = None) -> ClusterResult:
    """Active clusters per GPU for a launch that fits `blocks_per_sm` blocks on an SM."""
    size = cluster[0] * cluster[1] * cluster[2]
    problems, notes = cluster_size_problems(dev, cluster, grid)
    if problems or blocks_per_sm <= 0:
        if blocks_per_sm <= 0 and not problems:
            problems.append("no block of this launch fits on an SM")
        return ClusterResult(cluster, size, 0, 0, 0, "measured" if dev.cluster_table else
                             "estimate", tuple(problems), tuple(notes))
    table = dev.cluster_table
    if table and size <= len(table[0]):
        row = table[min(blocks_per_sm, len(table)) - 1]
        n = row[size - 1]
        if n == 0:
            problems.append(f"no GPC of {dev.name} holds a cluster of {size} blocks at "
                            f"{blocks_per_sm} blocks per SM")
        return ClusterResult(cluster, size, n, n, n, "measured", tuple(problems), tuple(notes))
    upper = dev.sm_count * blocks_per_sm // size
    # Clusters never used more than 8 blocks per SM on the H200 (rows 8-32 are equal): the
    # lower bound counts at most that many, so it holds whether or not a chip caps them.
    lower = (dev.gpc_count or 0) * (PORTABLE_CLUSTER_SIZE * min(blocks_per_sm, CLUSTER_BLOCKS_CAP)
                                    // size)
    if lower == 0 and size <= PORTABLE_CLUSTER_SIZE:
        lower = 1  # a portable size always launches where one block fits
    notes.append(f"estimate: {dev.name}'s profile has no measured cluster table (occupancy "
                 "devices detect measures one on the GPU)")
    return ClusterResult(cluster, size, None, min(lower, upper), upper, "estimate", tuple(problems),
                         tuple(notes))


def max_cluster_size(dev: Device, blocks_per_sm: int, min_active: int = 1,
                     portable_only: bool = False) -> tuple[int, str]:
    """The largest cluster size that keeps at least `min_active` clusters active (what
    cudaOccupancyMaxPotentialClusterSize answers for 1): (size, "measured"|"estimate");
    (0, ...) if none does. An estimate uses the guaranteed lower bound."""
    if dev.max_cluster_size is None or blocks_per_sm <= 0:
        return 0, "measured" if dev.cluster_table else "estimate"
    top = PORTABLE_CLUSTER_SIZE if portable_only else dev.max_cluster_size
    for s in range(top, 0, -1):
        r = cluster_occupancy(dev, blocks_per_sm, (s, 1, 1))
        if not r.problems and r.lower >= min_active:
            return s, r.source
    return 0, "measured" if dev.cluster_table else "estimate"
