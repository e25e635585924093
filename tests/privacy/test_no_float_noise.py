"""No mechanism draws floating-point noise: every noisy value is an integer from the exact
discrete samplers (Mironov 2012: float noise leaks through its low bits)."""

import pathlib
import re

import pytest

import vertimrf
from vertimrf.privacy.samplers import NoiseSampler, SecureSampler, SeededSampler

ROOT = pathlib.Path(vertimrf.__file__).parent
# The code that releases anything: privacy, the synthesizers, the parties and the server.
RELEASING = ("privacy", "synth", "party", "server", "protocol")
# Float draws of numpy Generators, the random module and scipy: normal, Gaussian, Laplace,
# exponential, Gumbel, logistic, Student t, uniform reals; ``discrete_laplace(`` and
# OpenDP's integer ``make_laplace(`` do not match (word boundary).
FLOAT_DRAW = re.compile(
    r"\.normal\(|standard_normal|standard_cauchy|\bgauss\(|normalvariate|\blaplace\(|"
    r"\bexponential\(|standard_exponential|\bgumbel\(|\blogistic\(|standard_t\(|\.uniform\(|"
    r"\.rvs\("
)


def test_samplers_have_no_float_noise() -> None:
    for cls in (NoiseSampler, SecureSampler, SeededSampler):
        assert not hasattr(cls, "normal")


def _sources() -> list[pathlib.Path]:
    return sorted(p for d in RELEASING for p in (ROOT / d).rglob("*.py"))


def test_the_pattern_finds_float_draws() -> None:
    # The check below can fail: it catches the float draws the old code made.
    for line in (
        "noise = rng.normal(0.0, sigma, size=len(pairs))",
        "return counts + self.sampler.normal(0.0, sigma, np.shape(counts))",
        "z = np.random.default_rng().standard_normal(5)",
        "z = rng.laplace(0, 1 / eps)",
    ):
        assert FLOAT_DRAW.search(line), line
    for line in ("noise.discrete_laplace(1.0 / epsilon, 1)", "dp.m.make_laplace(domain)"):
        assert not FLOAT_DRAW.search(line), line


@pytest.mark.parametrize("folder", RELEASING)
def test_no_float_draw_in_releasing_code(folder: str) -> None:
    hits = [
        f"{path.relative_to(ROOT)}:{k}: {line.strip()}"
        for path in _sources()
        if path.relative_to(ROOT).parts[0] == folder
        for k, line in enumerate(path.read_text().splitlines(), 1)
        if FLOAT_DRAW.search(line)
    ]
    assert hits == []
