"""``vertimrf.PrivMRF(epsilon, delta)`` is the best centralized synthesizer the project has:
the select-measure-fit engine (at or below AIM at all 8 measured points). The paper's
PrivMRF stays a named preset, ``selection="privmrf"``, for reproduction."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.runs import correlated_table
from vertimrf import PrivMRF
from vertimrf.errors import ConfigError


def _mechanisms(fit: PrivMRF) -> set[str]:
    return {r.mechanism for r in fit.ledger.releases}


def test_the_default_is_the_engine():
    df, spec = correlated_table(300)
    default = PrivMRF(1.0, 1e-6, seed=4, progress=False)
    assert default.selection == "engine"
    fit = default.fit(df, spec)
    assert _mechanisms(fit) == {"engine.count", "engine.marginals"}
    engine = PrivMRF(1.0, 1e-6, seed=4, selection="engine", progress=False).fit(df, spec)
    pd.testing.assert_frame_equal(fit.sample(seed=1), engine.sample(seed=1))
    assert fit.ledger.total_rho == pytest.approx(engine.ledger.total_rho, rel=1e-12)


def test_the_paper_preset_is_the_papers_selection():
    df, spec = correlated_table(300)
    fit = PrivMRF(1.0, 1e-6, seed=4, selection="privmrf", progress=False).fit(df, spec)
    assert fit.selection == "privmrf"
    # the paper's noisy R-scores, initial marginal set and count, nothing of the engine
    assert _mechanisms(fit) == {"privmrf.count", "privmrf.marginals", "privmrf.r_scores"}
    # a released count is the paper's alone: the engine refuses it and names the preset
    fit = PrivMRF(1.0, 1e-6, seed=4, selection="privmrf", noisy_count=300.0, progress=False)
    assert fit.fit(df, spec).n_hat == 300.0
    with pytest.raises(ConfigError, match="selection='privmrf'"):
        PrivMRF(1.0, 1e-6, noisy_count=300.0)
    with pytest.raises(ConfigError, match="selection='privmrf'"):
        PrivMRF(1.0, 1e-6, max_total_cells=1e5)
