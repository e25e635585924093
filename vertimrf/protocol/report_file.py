"""A :class:`ProtocolReport` as JSON-ready metadata and back, for saved models.

Unlike :meth:`ProtocolReport.to_dict` (a readable summary with derived totals), this holds
exactly the report's fields and its ledger (budget and releases), so
``report_from_meta(report_meta(r))`` equals ``r`` field by field.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from vertimrf.errors import MessageError, PrivacyBudgetError
from vertimrf.privacy.ledger import PrivacyLedger, Release
from vertimrf.protocol.report import FMBound, ProtocolReport

_PAIRS = ("cross_edges", "cross_measured", "binned")


def report_meta(report: ProtocolReport) -> dict[str, Any]:
    """The report's fields as JSON-ready values (the ledger as its budget and releases)."""
    meta = {f.name: getattr(report, f.name) for f in dataclasses.fields(report)}
    ledger = report.ledger
    meta["ledger"] = {
        "epsilon": ledger.epsilon_budget,
        "delta": ledger.delta,
        "rho": ledger.budget_rho,
        "releases": ledger.to_records(),
    }
    meta["fm_bound"] = None if report.fm_bound is None else dataclasses.asdict(report.fm_bound)
    for key in (*_PAIRS, "iterations", "seeded_roles", "refits"):
        meta[key] = [list(x) if isinstance(x, tuple) else x for x in meta[key]]
    return meta


def report_from_meta(meta: Any, where: str | os.PathLike) -> ProtocolReport:
    """The report :func:`report_meta` described; :class:`MessageError` naming ``where`` if
    it is malformed."""
    try:
        fields = dict(meta)
        fields["ledger"] = _ledger(fields["ledger"])
        bound = fields["fm_bound"]
        fields["fm_bound"] = None if bound is None else FMBound(**bound)
        for key in _PAIRS:
            fields[key] = tuple(tuple(str(a) for a in x) for x in fields[key])
        fields["iterations"] = tuple(int(i) for i in fields["iterations"])
        fields["seeded_roles"] = tuple(str(r) for r in fields["seeded_roles"])
        fields["refits"] = tuple(str(r) for r in fields.get("refits", ()))  # older: none
        for key in ("seconds", "message_bytes", "viewers"):
            fields[key] = dict(fields[key])
        return ProtocolReport(**fields)
    except (KeyError, TypeError, ValueError, PrivacyBudgetError) as exc:
        raise MessageError(f"{where}: malformed report ({exc}).") from None


def _ledger(meta: dict[str, Any]) -> PrivacyLedger:
    if meta["epsilon"] is not None:
        ledger = PrivacyLedger(meta["epsilon"], meta["delta"])
    elif meta["rho"] is not None:
        ledger = PrivacyLedger(rho=meta["rho"], delta=meta["delta"])
    else:
        ledger = PrivacyLedger()
        ledger.delta = meta["delta"]
    ledger.extend([Release(**r) for r in meta["releases"]])
    return ledger
