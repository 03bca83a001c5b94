"""Build layer: compilers, the compile cache, binaries and the resources they give."""
