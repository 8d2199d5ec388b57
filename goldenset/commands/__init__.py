"""Typer sub-apps that goldenset/cli.py mounts, one module per command group.

Each command parses its arguments, calls one library function and prints the result;
library errors propagate as GoldensetError subclasses and the main CLI turns them into
"Error: ..." and the exit code.
"""
