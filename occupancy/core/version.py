"""The package version, in one place (the CLI, the build cache key and the reports read it)."""

__version__ = "0.1.0"
