"""Code versions of the assets: a digest of the code each one runs, so "Unsynced" means something.

Dagster marks an asset Unsynced when the code version it was materialized with is not the
asset's current one (or an input's data version moved). Without code versions every
materialization counts as new code, and the badge says nothing. A hand-kept version per
asset would be forgotten; a package version stays the same in a checkout that changes. So
an asset's code version is the sha256 (first 12 hex digits) of the source text of its
module and of every library module (`goldenset`) it imports, transitively (found by reading
the import statements, at any depth in a function as well, as text: nothing is imported to
find them). An edit of any of them marks the asset Unsynced until it runs again; an edit of
the wiring (resources, jobs, the program) does not.

It costs a read of the modules once per process (about 150 small files), when the
Definitions are built.
"""

from __future__ import annotations

import hashlib
import re
from functools import cache
from pathlib import Path

_IMPORT = re.compile(
    r"^\s*(?:from\s+(goldenset(?:_dagster)?(?:\.\w+)*)\s+import\s+([\w, ()]+)|import\s+(goldenset(?:_dagster)?(?:\.\w+)*))",
    re.M,
)


@cache
def _roots() -> tuple[tuple[str, Path], ...]:
    """Each package name and its folder, the longest names first (the Dagster subpackages live apart)."""
    import goldenset
    import goldenset_dagster
    import goldenset_dagster.assets
    import goldenset_dagster.resources

    packages = [goldenset, goldenset_dagster, goldenset_dagster.assets, goldenset_dagster.resources]
    found = [(p.__name__, Path(p.__file__).parent) for p in packages if p.__file__]
    return tuple(sorted(found, key=lambda item: -len(item[0])))


def source_file(module: str) -> Path | None:
    """The file of `module` (a module or a package) of goldenset or goldenset_dagster, if it exists."""
    for name, folder in _roots():
        if module == name or module.startswith(name + "."):
            rest = module[len(name) :].lstrip(".").split(".") if module != name else []
            for candidate in (
                folder.joinpath(*rest).with_suffix(".py") if rest else None,
                folder.joinpath(*rest, "__init__.py"),
            ):
                if candidate is not None and candidate.is_file():
                    return candidate
            return None
    return None


def _imports(text: str) -> set[str]:
    """The goldenset modules a source text imports (`from P import name` may name a module of P)."""
    out: set[str] = set()
    for match in _IMPORT.finditer(text):
        package, names, plain = match.groups()
        if plain:
            out.add(plain)
            continue
        out.add(package)
        for name in re.findall(r"\w+", names):
            out.add(f"{package}.{name}")  # kept only when such a module exists
    return out


@cache
def module_closure(module: str) -> tuple[Path, ...]:
    """The files of `module` and of every goldenset module it imports, transitively, sorted."""
    seen: dict[str, Path] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = source_file(name)
        if path is None:
            continue
        seen[name] = path
        # The library, followed transitively; of the Dagster package only the module itself
        # (its wiring, the resources and the program, does not change what an asset computes).
        todo.extend(
            m for m in _imports(path.read_text(encoding="utf-8")) - seen.keys() if m.split(".")[0] == "goldenset"
        )
    return tuple(sorted(set(seen.values())))


@cache
def code_version(module: str) -> str:
    """The first 12 hex digits of the sha256 of the source of `module` and of everything it imports."""
    # Each file's digest, in the order of the digests: where the package is installed (a
    # checkout's pipelines/, an installed goldenset_dagster/) does not change the version.
    files = sorted(hashlib.sha256(path.read_bytes()).digest() for path in module_closure(module))
    return hashlib.sha256(b"".join(files)).hexdigest()[:12]
