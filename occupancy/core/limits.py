"""CUDA's fixed sizes that every layer checks its input against, defined once."""

from __future__ import annotations

INT32_MAX = 2**31 - 1  # CUDA's own sizes (block dims, grid, smem, counts) are 32-bit ints
