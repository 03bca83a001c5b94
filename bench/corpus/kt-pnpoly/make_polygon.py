"""The polygon kernel_tuner's examples/cuda/pnpoly.py tunes cn_pnpoly with (KernelTuner/
kernel_tuner 96a6abc, Apache-2.0): 600 vertices on the unit circle at sorted random angles,
and the slopes its host code pnpoly_host.cu precomputes in float for use_precomputed_slopes.
Seeded (numpy seed 0) so the manifest's constants are one file.
    python make_polygon.py   # writes polygon.npy (d_vertices) and slopes.npy (d_slopes)"""
from pathlib import Path

import numpy

VERTICES = 600
here = Path(__file__).resolve().parent

numpy.random.seed(0)
# pnpoly.py: vertex_seeds = numpy.sort(numpy.random.rand(vertices)*2.0*numpy.pi)[::-1]
vertex_seeds = numpy.sort(numpy.random.rand(VERTICES) * 2.0 * numpy.pi)[::-1]
vertex_x = numpy.cos(vertex_seeds)
vertex_y = numpy.sin(vertex_seeds)
vertices = numpy.array(list(zip(vertex_x, vertex_y))).astype(numpy.float32)  # float2[600]

# pnpoly_host.cu: h_slopes[0] from the last vertex to the first, h_slopes[i] from i-1 to i, in float
x, y = vertices[:, 0], vertices[:, 1]
prev = numpy.roll(numpy.arange(VERTICES), 1)  # i - 1, and VERTICES - 1 for i = 0
slopes = ((x[prev] - x) / (y[prev] - y)).astype(numpy.float32)

numpy.save(here / "polygon.npy", numpy.ascontiguousarray(vertices))
numpy.save(here / "slopes.npy", numpy.ascontiguousarray(slopes))
