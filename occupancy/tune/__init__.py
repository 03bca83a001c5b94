"""tune: see the package layout in docs/layout.md."""
