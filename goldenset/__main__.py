"""`python -m goldenset ...` is the installed `goldenset` program (library commands plus build and demo).

The one module of the package that reaches into the orchestration package: it is
the program's entry point, never imported as library code (the import test skips it).
"""

from goldenset_dagster.cli import entry

entry()
