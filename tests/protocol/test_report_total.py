"""A protocol report opens with one line: the ledger's total epsilon at the run's delta, its
total rho and its number of releases (the FO ledger below it runs to dozens of rows), or why
no total holds."""

from __future__ import annotations

import re

import pytest

from tests.runs import correlated_table
from vertimrf import simulate
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.privacy.zcdp import rho_to_epsilon, round_up

PARTIES = [["c0", "c1", "c2"], ["c3", "c4"]]
TOTAL = re.compile(
    r"^total: epsilon = (\S+) at delta = (\S+); rho = (\S+); ([\d,]+) releases "
    r"\((\d+) ledger rows\)$"
)


def test_a_ledger_line_states_its_total():
    ledger = PrivacyLedger()
    ledger.charge_gaussian("discrete_gaussian", sensitivity=1, sigma=10, count=3)
    ledger.charge_pure("discrete_laplace", epsilon=0.1)
    rho = 3 / 200 + 0.01 / 2
    epsilon = rho_to_epsilon(rho, 1e-6)
    assert ledger.total_line(1e-6) == (
        f"total: epsilon = {round_up(epsilon)} at delta = 1e-06; rho = 0.02; 4 releases "
        "(2 ledger rows)"
    )
    assert 0.5 < epsilon < 1.0
    assert ledger.total_line(1e-6, no_total="seeded run") == (
        "no total (epsilon, delta): seeded run; rho = 0.02; 4 releases (2 ledger rows)"
    )
    ledger.charge_pure("fm_sketch", epsilon=0.1, count=2)
    assert ledger.total_line(1e-6).startswith(
        "no total (epsilon, delta): NOT differentially private (FM sketches); rho = 0.03; 6 "
    )


def test_the_fo_report_opens_with_the_ledgers_total():
    df, spec = correlated_table(300)
    _, report = simulate(df, spec, PARTIES, 1.0, 1e-6, method="fo")
    assert report.method == "fo" and report.dp_guarantee
    text = str(report)
    first = TOTAL.match(text.splitlines()[0])
    assert first, text.splitlines()[0]
    epsilon, delta, rho, count, rows = first.groups()
    ledger = report.ledger
    assert float(epsilon) == pytest.approx(report.total_epsilon, rel=1e-3)
    assert epsilon == round_up(report.total_epsilon) == round_up(ledger.total_epsilon(1e-6))
    assert float(epsilon) >= report.total_epsilon and report.total_epsilon <= 1 + 1e-9
    assert delta == "1e-06" and rho == round_up(ledger.total_rho)
    assert int(count.replace(",", "")) == sum(r.count for r in ledger.releases) > 10
    assert int(rows) == len(ledger.releases) > 5
    # the same total as the ledger's own last lines, at the bottom of the report
    assert f"total rho charged = {rho}" in text
    assert f"total (epsilon, delta) = ({epsilon}, 1e-06)" in text


def test_a_seeded_run_says_why_it_has_no_total():
    df, spec = correlated_table(300)
    _, report = simulate(df, spec, PARTIES, 1.0, 1e-6, method="fo", seed=3)
    first = str(report).splitlines()[0]
    assert first.startswith("no total (epsilon, delta): seeded run (the noise of party0, party1")
    assert f"rho = {round_up(report.ledger.total_rho)};" in first
