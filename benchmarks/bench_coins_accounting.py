"""What coins cost in privacy: the ledger's charge for a cross cell with coins against the
discrete Gaussian's at the same viewer variance, and both against dp-accounting's
privacy-loss distributions.

Run from the repository root: ``python benchmarks/bench_coins_accounting.py [--json OUT]``.
It prints a Markdown table. One process, no data: a few seconds a row (2 cores).
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np
from dp_accounting.pld import privacy_loss_distribution as pld
from scipy.special import gammaln

from vertimrf.privacy import PrivacyLedger, rho_to_epsilon
from vertimrf.privacy.coins import CoinNoise, cell_cost, coin_release

DELTA = 1e-6
FAILURE = 1e-12
COUNT = 100  # marginals in the batch: each moves one of its cells by 1


def _coins_pld(noise: CoinNoise) -> pld.PrivacyLossDistribution:
    """dp-accounting's PLD of the whole (unconditioned) law at w = 1: the centred coins."""
    n = noise.coins
    k = np.arange(n + 1, dtype=np.float64)
    log_pmf = gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1) - n * math.log(2.0)
    keep = log_pmf > -690.0
    values = (np.arange(n + 1) - n // 2)[keep]
    lower = {int(v): float(x) for v, x in zip(values, log_pmf[keep], strict=True)}
    upper = {v + 1: x for v, x in lower.items()}
    return pld.from_two_probability_mass_functions(lower, upper)


def row(sigma: float, weight: float) -> dict[str, float]:
    noise = CoinNoise.for_sigma(sigma, weight)
    start = time.perf_counter()
    cost = cell_cost(noise, FAILURE)
    seconds = time.perf_counter() - start
    ledger = PrivacyLedger()
    ledger.charge(coin_release("x", noise, FAILURE, count=COUNT))
    out = {
        "sigma": sigma,
        "weight": weight,
        "coins": noise.coins,
        "release_variance_over_sigma2": noise.release_variance / sigma**2,
        "rho_over_gaussian": cost.rho * 2 * sigma**2,
        "failure_per_cell": cost.failure,
        "epsilon_coins": ledger.total_epsilon(DELTA),
        "epsilon_gaussian": rho_to_epsilon(COUNT / (2 * sigma**2), DELTA),
        "seconds": seconds,
    }
    if weight == 1.0:
        gauss = pld.from_discrete_gaussian_mechanism(sigma, sensitivity=1)
        out["pld_epsilon_coins"] = (
            _coins_pld(noise).self_compose(COUNT).get_epsilon_for_delta(DELTA)
        )
        out["pld_epsilon_gaussian"] = gauss.self_compose(COUNT).get_epsilon_for_delta(DELTA)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()
    rows = [row(s, w) for s in (5, 10, 20, 44, 66, 150, 300) for w in (1.0, 0.5)]
    print(
        "| sigma | w | coins | release var / sigma^2 | rho / Gaussian's | failure a cell | "
        "ledger eps, coins | ledger eps, Gaussian | PLD eps, coins | PLD eps, Gaussian | "
        "s |"
    )
    print("|" + "---:|" * 11)
    for r in rows:
        pld_c = f"{r['pld_epsilon_coins']:.4f}" if "pld_epsilon_coins" in r else ""
        pld_g = f"{r['pld_epsilon_gaussian']:.4f}" if "pld_epsilon_gaussian" in r else ""
        print(
            f"| {r['sigma']:g} | {r['weight']:g} | {r['coins']} | "
            f"{r['release_variance_over_sigma2']:.3g} | {r['rho_over_gaussian']:.5f} | "
            f"{r['failure_per_cell']:.2g} | {r['epsilon_coins']:.4f} | "
            f"{r['epsilon_gaussian']:.4f} | {pld_c} | {pld_g} | {r['seconds']:.2f} |"
        )
    if args.json:
        with open(args.json, "x", encoding="utf-8") as f:
            meta = {"delta": DELTA, "failure": FAILURE, "count": COUNT}
            json.dump({**meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
