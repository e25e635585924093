"""The keyed permutation: a bijection of [0, n) (exhaustive on small domains, powers of
two or not, n = 1, 2, 3 included), the same for the same key, another for another key,
and values outside the domain refused."""

from __future__ import annotations

import numpy as np
import pytest

from vertimrf.crypto.prp import KeyedPermutation
from vertimrf.errors import ConfigError

KEY, OTHER = bytes(range(32)), bytes(range(1, 33))


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 100, 255, 1000, 4097])
def test_it_is_a_bijection_of_the_domain(size):
    image = KeyedPermutation(KEY, size)(np.arange(size))
    assert image.dtype == np.int64
    np.testing.assert_array_equal(np.sort(image), np.arange(size))


def test_the_same_key_gives_the_same_permutation_and_another_key_another():
    x = np.arange(5000)
    first, again = KeyedPermutation(KEY, 5000)(x), KeyedPermutation(KEY, 5000)(x)
    np.testing.assert_array_equal(first, again)
    other = KeyedPermutation(OTHER, 5000)(x)
    assert np.count_nonzero(first == other) < 20  # about 1 fixed agreement expected
    # evaluated by parts, in any order: the same images
    parts = np.concatenate(
        [KeyedPermutation(KEY, 5000)(x[i : i + 700]) for i in range(0, 5000, 700)]
    )
    np.testing.assert_array_equal(parts, first)
    np.testing.assert_array_equal(KeyedPermutation(KEY, 5000)(x[::-1]), first[::-1])


def test_values_outside_the_domain_and_empty_domains_are_refused():
    perm = KeyedPermutation(KEY, 10)
    assert perm(np.empty(0, np.int64)).size == 0
    for bad in ([10], [-1]):
        with pytest.raises(ConfigError, match="outside"):
            perm(np.array(bad))
    with pytest.raises(ConfigError, match="at least 1"):
        KeyedPermutation(KEY, 0)
