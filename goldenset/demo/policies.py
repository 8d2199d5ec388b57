"""The support-policies section of the corpus (`policies/`, `legal/`): the pages the support project asks about.

It holds the case a similarity floor cannot handle. The refund policy changed on
1 July 2026, but the index the logs were served from only held the 2022 page, and
the agents marked it helped all month. The reindex adds the page in force and sets
the old one's `superseded_by`, yet leaves it active: a stale page still in the
index. Its wording is closer to how people ask ("request a refund within 30 days")
than the new page's, so the packaged MiniLM model scores it above the page in force
for the same question (tests/test_demo_data.py checks that with the real model);
only a reader who checks which version is in force (the rubric's `recency` test)
can tell them apart.

The reindex also revises the cancellation page, so the labels judged on its first
version go stale (`version_changed`).
"""

from __future__ import annotations

from dataclasses import dataclass

from goldenset.demo.corpus import CorpusRow, Doc

MODULE = "policies"  # one neighbourhood for near misses: policies/ and legal/ alike

STALE_PAGE = "policies/refunds-2022.md"
PAGE_IN_FORCE = "policies/refunds-current.md"
REVISED_PAGE = "policies/cancellations.md"
SERVICE_CREDITS = "policies/service-credits.md"
INVOICES = "policies/invoices.md"
DATA_RETENTION = "legal/data-retention.md"
TERMS = "legal/terms-of-service.md"


@dataclass(frozen=True)
class Revision:
    """A version of a page the reindex brings in."""

    version: str
    updated_at: str
    text: str


@dataclass(frozen=True)
class PolicyPage:
    """One page of the section and what the reindex does to it."""

    doc_id: str
    title: str
    updated_at: str
    text: str
    added_by_reindex: bool = False
    superseded_by: str | None = None
    revision: Revision | None = None

    def doc(self) -> Doc:
        """The page as a document the toy ranker can serve."""
        return Doc(self.doc_id, MODULE, self.title, self.text)

    def before(self) -> CorpusRow | None:
        """Its row in the index the logs were served from (None: not indexed yet)."""
        if self.added_by_reindex:
            return None
        return CorpusRow(self.doc_id, "v1", "active", self.title, self.text, None, self.updated_at)

    def after(self, reindexed_at: str) -> CorpusRow:
        """Its row after the reindex: revised, superseded (still active) or as it was."""
        if self.revision is not None:
            r = self.revision
            return CorpusRow(self.doc_id, r.version, "active", self.title, r.text, None, r.updated_at)
        if self.superseded_by is not None:
            return CorpusRow(self.doc_id, "v1", "active", self.title, self.text, self.superseded_by, reindexed_at)
        return CorpusRow(self.doc_id, "v1", "active", self.title, self.text, None, self.updated_at)


PAGES = (
    PolicyPage(
        STALE_PAGE,
        "Refund policy (2022)",
        "2022-01-10",
        "A customer can request a refund within 30 days of purchase. To request a refund, the customer "
        "contacts support with the order number, and the full amount is refunded to the original payment "
        "method. Refunds are available on monthly and annual plans.",
        superseded_by=PAGE_IN_FORCE,
    ),
    PolicyPage(
        PAGE_IN_FORCE,
        "Refunds",
        "2026-07-01",
        "Refunds are granted for 14 days after each payment. Customers ask through the billing form and the "
        "money is returned to the card or account that paid; later requests are declined unless local law "
        "requires otherwise. This version is in force from 1 July 2026.",
        added_by_reindex=True,
    ),
    PolicyPage(
        REVISED_PAGE,
        "Cancelling a subscription",
        "2025-02-01",
        "A subscription can be cancelled at any time under Settings > Billing. The cancellation takes effect "
        "at the end of the current billing period: the plan stays active until then and is not renewed. "
        "Cancelling an annual plan does not refund the rest of the year.",
        revision=Revision(
            "v2",
            "2026-10-15",
            "A subscription can be cancelled at any time under Settings > Billing or in the mobile app. The "
            "cancellation takes effect at the end of the current billing period: the plan stays active until "
            "then and is not renewed. Cancelling an annual plan does not refund the rest of the year.",
        ),
    ),
    PolicyPage(
        SERVICE_CREDITS,
        "Service credits for downtime",
        "2025-05-20",
        "When monthly uptime falls below 99.9%, customers on paid plans receive service credits: 10% of the "
        "monthly fee below 99.9% and 25% below 99.0%. Credits must be claimed within 30 days of the incident, "
        "are applied to the next invoice and are never paid out in cash.",
    ),
    PolicyPage(
        INVOICES,
        "Invoices and VAT",
        "2024-11-04",
        "Every payment produces an invoice, kept for seven years under Settings > Billing > Invoices. Business "
        "customers can add a VAT number, and their invoices then show it with the reverse charge where it "
        "applies. An invoice for a past payment can be issued again with a corrected address, but not with "
        "another VAT number.",
    ),
    PolicyPage(
        "policies/disputed-payments.md",
        "Disputed payments",
        "2025-01-15",
        "When a customer disputes a charge with their bank, the account is suspended until the dispute is "
        "resolved. Support answers the bank with the invoice and the usage records. A customer who withdraws "
        "the dispute is reactivated at once.",
    ),
    PolicyPage(
        DATA_RETENTION,
        "Data retention after an account is closed",
        "2025-09-01",
        "When an account is closed, customer content is kept for 30 days so that it can be restored on "
        "request, and is then deleted from production systems; backups are overwritten within a further "
        "60 days. Billing records are kept for seven years, as tax law requires.",
    ),
    PolicyPage(
        TERMS,
        "Terms of service",
        "2024-03-01",
        "These terms govern the use of the service. Fees are charged in advance for each billing period and "
        "are not refundable except under the refund policy in force on the day of the payment. Either party "
        "may end the agreement with notice; the customer's data is then handled as the data retention policy "
        "says.",
    ),
)


@dataclass(frozen=True)
class PolicySection:
    """The section's rows before and after the reindex, and the pages the logs could serve."""

    before: tuple[CorpusRow, ...]
    after: tuple[CorpusRow, ...]
    docs: tuple[Doc, ...]
    added_by_reindex: tuple[str, ...]
    revised: tuple[str, ...]


def policy_section(reindexed_at: str) -> PolicySection:
    """The section, with the reindex dated `reindexed_at` (an ISO date)."""
    return PolicySection(
        before=tuple(row for p in PAGES if (row := p.before()) is not None),
        after=tuple(p.after(reindexed_at) for p in PAGES),
        docs=tuple(p.doc() for p in PAGES),
        added_by_reindex=tuple(p.doc_id for p in PAGES if p.added_by_reindex),
        revised=tuple(p.doc_id for p in PAGES if p.revision is not None),
    )
