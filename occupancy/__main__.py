"""`python -m occupancy` runs the command-line tool."""

from .cli import main

main()
