"""Domain errors of the core; the CLI turns each into a one-line `Error: ...` and exit 2."""

from __future__ import annotations


class OccupancyError(Exception):
    """Bad input the user can fix: the message names what is wrong and the fix."""


class FileError(OccupancyError):
    """An input file that cannot be used: `PREFIXpath: line N: message` (files.py raises
    it with the path as shown; `prefix` names the option that gave the file, if any)."""

    prefix = ""

    def __init__(self, message: str, path: str | None = None, line: int | None = None) -> None:
        where = ""
        if path:
            where = f"{self.prefix}{path}: "
            if line:
                where += f"line {line}: "
        super().__init__(where + message)
        self.path = path
        self.line = line


class ProfileError(FileError):
    """A device profile that is missing, malformed or inconsistent."""


class UnknownDeviceError(OccupancyError):
    """A device name that matches no shipped or user profile."""


class UnknownComputeCapabilityError(OccupancyError):
    """A compute capability outside the table this tool knows (refuse rather than guess)."""
