"""`python -m occupancy` runs the command-line tool."""

from occupancy.cli import main

main()
