"""The public arithmetic of partial record sets: regions as bit masks, and the region
noise's offset and margin checked against the tail bounds they are set by (each the least
integer that meets its bound)."""

from __future__ import annotations

import math

import pytest

from vertimrf.errors import ConfigError
from vertimrf.protocol.regions import RegionNoise, members, region_mask, regions_of

NAMES = ("A", "B", "C")


def test_regions_are_every_non_empty_set_of_parties_once():
    assert regions_of(3) == (1, 2, 3, 4, 5, 6, 7)
    assert regions_of(3, 1) == (2, 3, 6, 7)
    assert [members(t, NAMES) for t in regions_of(2)] == [("A",), ("B",), ("A", "B")]
    assert all(region_mask(members(t, NAMES), NAMES) == t for t in regions_of(3))
    with pytest.raises(ConfigError, match="non-empty set"):
        region_mask(("D",), NAMES)
    with pytest.raises(ConfigError, match="1 to 16 parties"):
        regions_of(0)


@pytest.mark.parametrize("m", [2, 3, 4])
@pytest.mark.parametrize("rho", [1e-4, 0.01, 2.0])
def test_offset_and_margin_are_the_least_integers_meeting_their_tail_bounds(m, rho):
    noise = RegionNoise(m, rho, 1e-7, 1e-8)
    r, s = noise.regions, noise.sigma
    assert r == 2**m - 1 and s == pytest.approx(math.sqrt(1 / (2 * rho)))

    def clip(o):  # union over the regions of P(|Z| > o) <= 2 exp(-o^2 / 2 sigma^2)
        return r * 2 * math.exp(-(o**2) / (2 * s**2))

    def stop(a):  # P(sum of r noises < -r a) <= exp(-(r a)^2 / (2 r sigma^2))
        return math.exp(-((r * a) ** 2) / (2 * r * s**2))

    assert clip(noise.offset) <= 1e-7 < clip(noise.offset - 1)
    assert stop(noise.margin) <= 1e-8 < stop(noise.margin - 1)
    assert noise.dummy_rows == 2 * noise.offset * r
    released = {t: 100 for t in regions_of(m)}
    room = 100 * r + r * (noise.offset + noise.margin)
    assert noise.goes_on(released, room) and not noise.goes_on(released, room - 1)


def test_bad_noise_settings_are_one_line_errors():
    for args, word in [((2, 0, 1e-6, 1e-6), "rho"), ((2, 1.0, 0, 1e-6), "delta_clip"),
                       ((2, 1.0, 1e-6, 1.5), "delta_stop")]:  # fmt: skip
        with pytest.raises(ConfigError, match=word) as caught:
            RegionNoise(*args)
        assert "\n" not in str(caught.value)
