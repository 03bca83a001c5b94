"""The command line: thin click commands that parse, call the library, and hand the result
to output.emit. One module per group of commands; `common` holds the group, the exit codes
and the options several commands share. `occupancy.cli:main` is the entry point.

Importing this package imports click and `common` only: a command's module is imported when
the command is looked up (common.COMMAND_MODULES), and every library module a command needs
inside the command (the start-up time of `occupancy calc`).
"""

from __future__ import annotations

from occupancy.cli.common import (
    EXIT_OK,
    EXIT_PROBLEM,
    EXIT_USAGE,
    InputError,
    main,
    translate_errors,
    write_output,
)

__all__ = ["EXIT_OK", "EXIT_PROBLEM", "EXIT_USAGE", "InputError", "main", "translate_errors",
           "write_output"]
