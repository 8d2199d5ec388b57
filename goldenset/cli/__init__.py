"""The `goldenset` command line, one module per command group.

`app` assembles the program and turns errors into exit codes; `golden` holds the top-level
commands (status, rejects, export); `bench`, `calibrate`, `judge`, `label`, `labels`,
`pool` and `rubric` are the groups; `options` and `shared` are what they share. Each
command parses its arguments, calls one library function and prints the result; library
errors propagate as GoldensetError subclasses. This file imports nothing, so importing
one command module never loads the others.
"""
