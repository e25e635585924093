"""Figure: the privacy audit, an attacker testing whether one record is in
the table; design notes in docs/design/report.md."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from vertimrf.domain import Domain, DomainSpec, EncodedTable
from vertimrf.logs import progress_bar
from vertimrf.party.keys import HashKeys
from vertimrf.party.locenc import locenc
from vertimrf.party.records.ids import record_fingerprints
from vertimrf.privacy.calibration import sketch_epsilon
from vertimrf.privacy.fm import fm_noise
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.privacy.samplers import noise_sampler
from vertimrf.privacy.zcdp import epsilon_to_rho
from vertimrf.report.context import ReportContext
from vertimrf.report.registry import FigureData, Panel, register

PARTIES, COLUMNS, U = 2, 4, 4
SEED = 20240611


def _table(rng: np.random.Generator, n: int, with_x: bool) -> np.ndarray:
    """n - 1 other records (values 0..U-2), then x (value U-1 everywhere) when ``with_x``."""
    others = rng.integers(0, U - 1, size=(n - 1, PARTIES * COLUMNS), dtype=np.uint8)
    x = np.full((1, PARTIES * COLUMNS), U - 1, dtype=np.uint8)
    return np.vstack([others, x]) if with_x else others


def fm_fires(run: int, with_x: bool, *, n: int, t: int, eps_prime: float) -> bool:
    """One run of both parties' LocEnc (fresh keys); True when the attack fires."""
    rng = np.random.default_rng([SEED, run])
    codes = _table(rng, n, with_x)
    words = rng.integers(0, 2**64, size=(2, t), dtype=np.uint64, endpoint=False)
    keys = HashKeys(words[0], words[1])
    ids = record_fingerprints(np.arange(codes.shape[0]))
    domain = Domain.from_sizes([U] * COLUMNS)
    x_slots = domain.offsets + (U - 1)
    released = []
    for p in range(PARTIES):
        part = EncodedTable(codes[:, p * COLUMNS : (p + 1) * COLUMNS], domain)
        sketch = locenc(
            part, ids, keys, eps_prime=eps_prime, rng=rng, ledger=PrivacyLedger(), party=f"p{p}"
        )
        released.append(sketch.values[:, x_slots])
    values = np.concatenate(released, axis=1)
    threshold = math.log2(fm_noise(eps_prime).k_p) + 4
    same = np.all(values == values[:, :1], axis=1) & (values[:, 0] >= threshold)
    return bool(same.any())


def secure_sigma(epsilon: float, delta: float) -> float:
    """The noise scale of the secure method's first release of every 2-way marginal, for
    this setting's table (the plan the roles derive from the config)."""
    from vertimrf.protocol.factory import from_preset
    from vertimrf.protocol.methods import rules
    from vertimrf.protocol.secure.plan import SELECT

    names = [str(i) for i in range(PARTIES * COLUMNS)]
    spec = DomainSpec.from_dict({c: U for c in names})
    parties = [names[p * COLUMNS : (p + 1) * COLUMNS] for p in range(PARTIES)]
    config = from_preset(
        "default", epsilon=epsilon, delta=delta, spec=spec, parties=parties, max_rows=65536
    )
    plan = rules(config).secure_plan(config)
    assert plan is not None
    return plan.sigma(SELECT, plan.first_release())


def secure_fires(run: int, with_x: bool, *, sigma: float) -> bool:
    """x's cell in the first release of every 2-way marginal, summed; True above half of
    what x adds to the sum. Only x has value U-1, so each exact cell is 1 with x, else 0."""
    pairs = math.comb(PARTIES * COLUMNS, 2)
    noise = noise_sampler(np.random.default_rng([SEED, run, 1])).discrete_gaussian(sigma, pairs)
    return float(int(with_x) * pairs + noise.sum()) > pairs / 2


@register(
    "audit",
    "How often a membership attack on one record fires with the record in the table and "
    "without it: FM's sketches let it fire far more often with the record than DP allows, "
    "the secure method's releases do not.",
    tiny={"epsilon": 1.0, "runs": 10, "n": 500, "t": 500},
    quick={"epsilon": 1.0, "runs": 200, "n": 2000, "t": 2000},
    full={"epsilon": 1.0, "runs": 500, "n": 2000, "t": 2000},
)
def audit_figure(ctx: ReportContext, params: Mapping[str, Any]) -> FigureData:
    """Hit rates of both attacks over ``runs`` independent runs per table."""
    epsilon, runs = params["epsilon"], params["runs"]
    rho = epsilon_to_rho(epsilon, ctx.delta)
    # The FM split of the paper preset on this table: LocEnc's share plus the unused binning
    # share (u = 4 = bins), over the 8 columns (as tests/privacy/test_fm_attack.py derives).
    eps_prime = sketch_epsilon(params["t"], PARTIES * COLUMNS, rho=0.56 * rho)
    sigma = secure_sigma(epsilon, ctx.delta)
    hits = {("fm", True): 0, ("fm", False): 0, ("secure", True): 0, ("secure", False): 0}
    for run in progress_bar(range(runs), desc="audit: runs", progress=ctx.progress):
        for with_x in (True, False):
            hits[("fm", with_x)] += fm_fires(
                run, with_x, n=params["n"], t=params["t"], eps_prime=eps_prime
            )
            hits[("secure", with_x)] += secure_fires(run, with_x, sigma=sigma)
    rate = {k: v / runs for k, v in hits.items()}
    series = [
        {
            "label": label,
            "x": ["FM (NOT DP)", "Secure"],
            "mean": [rate[("fm", with_x)], rate[("secure", with_x)]],
            "err": [
                _binomial_sd(rate[("fm", with_x)], runs),
                _binomial_sd(rate[("secure", with_x)], runs),
            ],
            "dashed": False,
        }
        for label, with_x in (("with the record (D)", True), ("without it (D')", False))
    ]
    # A hit rate is a probability, so DP's bound on it is min(1, e^epsilon x rate' + delta).
    bound = {
        m: min(1.0, math.exp(epsilon) * rate[(m, False)] + ctx.delta) for m in ("fm", "secure")
    }
    notes = [
        f"epsilon = {epsilon}, delta = {ctx.delta:g}, {runs} runs per table, n = {params['n']}, "
        f"FM t = {params['t']}, secure noise scale {sigma:.2f}.",
        "DP bounds the hit rate with the record by min(1, e^epsilon x the rate without it "
        "+ delta). "
        + "; ".join(
            _bound_text(METHOD_LABEL[m], rate[(m, True)], rate[(m, False)], bound[m])
            for m in ("fm", "secure")
        )
        + " (measured rates, not confidence bounds: tests/privacy/test_fm_attack.py makes the "
        "statistical test).",
    ]
    panel = Panel("membership attack on one record", "method", "attack hit rate", series, "bar")
    return FigureData(panels=[panel], notes=notes)


METHOD_LABEL = {"fm": "FM", "secure": "secure"}


def _bound_text(label: str, with_x: float, without_x: float, bound: float) -> str:
    """One method's rates against DP's bound, saying whether they break it."""
    verdict = "breaks the bound" if with_x > bound else "within it"
    return (
        f"{label}: {with_x:.3f} with the record, {without_x:.3f} without, bound "
        f"{bound:.3f} ({verdict})"
    )


def _binomial_sd(p: float, runs: int) -> float:
    """The standard error of a rate p over ``runs`` runs."""
    return math.sqrt(p * (1 - p) / runs)
