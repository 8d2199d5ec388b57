"""One error hierarchy; the CLI turns each class into its exit code in one place."""

from __future__ import annotations


class GoldensetError(Exception):
    """Base of every error the library raises on purpose; exit code 1."""

    exit_code = 1


class UsageError(GoldensetError):
    """The command was called wrongly (bad option value, unknown build); exit code 2."""

    exit_code = 2


class UnknownWarehouse(UsageError):
    """A warehouse path that does not exist while the home has other warehouses (a typo); exit code 2.

    Refused before anything is made (contract 17.1): a build creates a second warehouse only
    with --new-warehouse, and no other command creates one.
    """


class InputError(GoldensetError):
    """An input file (corpus, run, qrels) is missing, unreadable or breaks the contract."""


class CorpusError(InputError):
    """The corpus snapshot cannot be used; the last good snapshot stays current."""


class DatabaseBusy(GoldensetError):
    """Another process holds the DuckDB file."""


class SpoolBusy(GoldensetError):
    """Another `goldenset traces serve` holds the spool folder."""


class SpoolFull(GoldensetError):
    """The receiver's spool holds as many bytes as it may, or the disk refused a write: answered 503."""


class RequestRefused(GoldensetError):
    """An OTLP request the receiver refuses: the HTTP status it answers, and why (contract 14.8)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class BuildBlocked(GoldensetError):
    """A blocking check failed, so the build was not published."""

    def __init__(self, message: str, checks: list | None = None):
        super().__init__(message)
        self.checks = checks or []


class NoBuild(GoldensetError):
    """No golden set has been built yet (or the requested build does not exist)."""


class GoldenSetTooOld(GoldensetError):
    """The benchmark refuses: the golden set is older than allowed; exit code 3."""

    exit_code = 3


class ComponentDown(GoldensetError):
    """The benchmark refuses: a retrieval component is down; exit code 4."""

    exit_code = 4


class ComparisonBiased(GoldensetError):
    """`bench compare --fail-on-bias`: the verdict rests on unjudged documents; exit code 5."""

    exit_code = 5


class JudgeRunIncomplete(GoldensetError):
    """`judge label`: most answers were unusable (invalid or transport errors); exit code 6.

    Raised after the run's usable lines are written and its figures recorded: it refuses
    on policy (the share), never for want of evaluator data.
    """

    exit_code = 6


class InputMoved(GoldensetError):
    """A build refused: an input changed in a way that would change the published set silently; exit code 1.

    Raised before anything is written (a LOGS or LABELS root other than the one recorded,
    a rubric edit that invalidates label lines or changes a grade); the message names
    the flag that lets the build go on.
    """
