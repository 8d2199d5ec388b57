"""`python -m goldenset.demo ROOT`: write the demo data under ROOT and print what it holds."""

from __future__ import annotations

import sys
from dataclasses import fields
from pathlib import Path

from goldenset.demo import write_demo_data


def main(argv: list[str] | None = None) -> int:
    """Write the data; exit 2 without exactly one ROOT."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m goldenset.demo ROOT", file=sys.stderr)
        return 2
    demo = write_demo_data(Path(args[0]))
    for f in fields(demo):
        print(f"{f.name}: {getattr(demo, f.name)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
