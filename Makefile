# Everyday commands. PYTHON picks the interpreter (e.g. `make test-fast PYTHON=.venv/bin/python`).
PYTHON ?= python
# What test-fast leaves out: tests marked slow, or needing a browser, PostgreSQL or Phoenix
# (markers registered in pyproject.toml; `make test` and CI run them all).
FAST := not slow and not browser and not postgres and not phoenix

.PHONY: test-fast test test-thorough lint docs constraints mutants mutants-check

test-fast:
	$(PYTHON) -m pytest -n 2 --dist loadfile -q -m "$(FAST)" --durations=10

test:
	$(PYTHON) -m pytest -n 2 --dist loadfile

# Ten times the Hypothesis examples (tests/conftest.py): for a scheduled or local run.
test-thorough:
	HYPOTHESIS_PROFILE=thorough $(PYTHON) -m pytest

# The mutation check (not in CI; docs/contributing.md): each one-line change of mutants/*.toml
# applied in place, its tests run, the file restored; exit 1 when one survives.
# ONLY=<id>[,<id>], SECTION=<s> or FILE=<name>.toml picks entries; ALLOW_DIRTY=1 runs on uncommitted files.
mutants:
	$(PYTHON) mutants/run.py $(if $(ONLY),--only $(ONLY)) $(if $(SECTION),--section $(SECTION)) $(if $(FILE),--file $(FILE)) $(if $(ALLOW_DIRTY),--allow-dirty)

# The list alone, no test run (seconds): every find text once, every test id found.
mutants-check:
	$(PYTHON) mutants/run.py --check

lint:
	ruff check .
	ruff format --check .
	mypy

docs:
	NO_MKDOCS_2_WARNING=1 mkdocs build --strict --site-dir site

# constraints.txt: the exact versions the Quick start and CI install, resolved once in a fresh
# venv (pip backtracked for minutes without it). Run after changing a dependency in pyproject.toml.
constraints:
	rm -rf .constraints-venv && $(PYTHON) -m venv .constraints-venv
	.constraints-venv/bin/pip install -q torch==2.13.0
	.constraints-venv/bin/pip install -q -e '.[test]'
	{ sed -n '1,/^# make constraints/p' constraints.txt; \
	  .constraints-venv/bin/pip freeze --exclude-editable | grep -v '^goldenset' | sed 's/^torch==\(.*\)+cpu$$/torch==\1/'; \
	} > constraints.txt.new && mv constraints.txt.new constraints.txt && rm -rf .constraints-venv
