"""FitNoise.select: the fit's selections are charged, recorded and drawn by its sampler."""

from __future__ import annotations

import numpy as np
import pytest

from vertimrf.errors import PrivacyBudgetError
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.privacy.samplers import SeededSampler
from vertimrf.synth.privmrf.noise import FitNoise


def test_select_charges_records_and_draws_the_seeded_index():
    noise = FitNoise(PrivacyLedger(), SeededSampler(3), "alice")
    scores = np.array([4, 10**6, 0], dtype=np.int64)
    assert noise.select("select_marginal", scores, 2, 0.5, "round 1") == 1
    (release,) = noise.charged
    assert noise.ledger.releases == (release,)
    assert (release.rho, release.party, release.description) == (0.5**2 / 8, "alice", "round 1")
    replay = FitNoise(PrivacyLedger(), SeededSampler(7), None)
    again = FitNoise(PrivacyLedger(), SeededSampler(7), None)
    picks = [replay.select("m", [1, 2, 3], 1, 1.0, "r") for _ in range(20)]
    assert picks == [again.select("m", [1, 2, 3], 1, 1.0, "r") for _ in range(20)]


def test_select_over_budget_records_nothing():
    noise = FitNoise(PrivacyLedger(rho=1e-3), SeededSampler(0), None)
    with pytest.raises(PrivacyBudgetError):
        noise.select("select_marginal", [1, 2], 1, 1.0, "round 1")
    assert noise.charged == [] and noise.ledger.releases == ()
