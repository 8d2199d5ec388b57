# Everyday commands. PYTHON picks the interpreter (e.g. `make test-fast PYTHON=.venv/bin/python`).
PYTHON ?= python
# What test-fast leaves out: tests marked slow, or needing a browser, PostgreSQL or Phoenix
# (markers registered in pyproject.toml; `make test` and CI run them all).
FAST := not slow and not browser and not postgres and not phoenix

.PHONY: test-fast test test-thorough lint docs

test-fast:
	$(PYTHON) -m pytest -q -m "$(FAST)" --durations=10

test:
	$(PYTHON) -m pytest

# Ten times the Hypothesis examples (tests/conftest.py): for a scheduled or local run.
test-thorough:
	HYPOTHESIS_PROFILE=thorough $(PYTHON) -m pytest

lint:
	ruff check .
	ruff format --check .
	mypy

docs:
	NO_MKDOCS_2_WARNING=1 mkdocs build --strict --site-dir site
