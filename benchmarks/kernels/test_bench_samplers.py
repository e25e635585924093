"""The keyed exact samplers (draws/s): discrete Gaussian and discrete Laplace noise from
``KeyedSampler`` (exact algorithms on an AES-256-CTR keystream) against OpenDP's exact samplers
(``SecureSampler``, the centralized path). The draws cannot be equal (different randomness),
so the check is that both samples' variance is within 6 standard errors of the theoretical
variance, and that the keyed sampler replays its draws from the same secret and label."""

import math

import numpy as np
import pytest

from vertimrf.privacy.samplers import KeyedSampler, SecureSampler

SECRET = bytes(range(32))
SIGMA, SCALE = 30.0, 10.0
# Variance of the discrete Gaussian of sigma 30 (below sigma^2 by far less than 1e-100) and
# of the discrete Laplace exp(-|x|/s): 2 e^(-1/s) / (1 - e^(-1/s))^2.
_Q = math.exp(-1 / SCALE)
KINDS = {
    "gaussian": (lambda s, n: s.discrete_gaussian(SIGMA, n), SIGMA**2),
    "laplace": (lambda s, n: s.discrete_laplace(SCALE, n), 2 * _Q / (1 - _Q) ** 2),
}


def _near_variance(draws: np.ndarray, variance: float) -> None:
    """The sample variance within 6 standard errors, sqrt((kurtosis - 1) / n) * variance, with
    the kurtosis taken as 7 (the discrete Laplace of scale 10 has 6.005, the Gaussian 3)."""
    assert draws.dtype.kind == "i"
    bound = 6 * math.sqrt(6 / draws.size) * variance
    assert abs(float(np.var(draws)) - variance) <= bound


@pytest.mark.benchmark(group="keyed exact samplers")
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize(
    ("n", "reference_n"),
    [
        pytest.param(10_000, 10_000, id="10k"),
        pytest.param(1_000_000, 50_000, marks=pytest.mark.large, id="1M"),
    ],
)
def test_keyed_sampler(pair, kind: str, n: int, reference_n: int) -> None:
    draw, variance = KINDS[kind]
    opendp = SecureSampler()

    def keyed() -> np.ndarray:
        return draw(KeyedSampler(SECRET, "party-noise", "bench", kind), n)

    def check(got: np.ndarray, want: np.ndarray) -> None:
        np.testing.assert_array_equal(got, keyed())
        _near_variance(got, variance)
        _near_variance(want, variance)

    pair(
        kernel=keyed,
        reference=lambda: draw(opendp, reference_n),
        check=check,
        items=n,
        unit="draws/s",
        reference_name="OpenDP (SecureSampler)",
        reference_fraction=reference_n / n,
    )
