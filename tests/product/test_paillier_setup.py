"""The encrypter's randomisers made before the data: the file holds exactly the stream's
randomisers, resumes from its last whole block after a stop, and refuses other inputs."""

from __future__ import annotations

import random

import pytest

from vertimrf.crypto import paillier as pl
from vertimrf.crypto.paillier_slots import SlotLayout
from vertimrf.errors import ConfigError
from vertimrf.product import paillier as pp
from vertimrf.product.paillier_setup import setup_randomisers, stored, stored_randomisers

BITS, COUNT, BLOCK = 512, 37, 8
KEY = bytes(range(32))


@pytest.fixture(scope="module")
def key() -> pl.PrivateKey:
    return pl.generate(BITS, random.Random(21).getrandbits)


def test_the_file_holds_the_streams_randomisers(key, tmp_path):
    table, seen = pl.randomiser_table(key), []
    path = setup_randomisers(tmp_path / "r.bin", table, key.public, KEY, COUNT, block=BLOCK,
                             progress=lambda made, total: seen.append((made, total)))  # fmt: skip
    assert seen == [(8, 37), (16, 37), (24, 37), (32, 37), (37, 37)]
    want = pl.randomisers(table, KEY, 0, COUNT)
    assert stored_randomisers(path, key.public, KEY, COUNT, 0, COUNT) == want
    assert stored_randomisers(path, key.public, KEY, COUNT, 5, 9) == want[5:14]
    assert not (tmp_path / "r.bin.part").exists()
    with pytest.raises(ConfigError, match="past the 37"):
        stored_randomisers(path, key.public, KEY, COUNT, 30, 8)


def test_a_stopped_setup_resumes_to_the_same_bytes(key, tmp_path):
    table = pl.randomiser_table(key)
    whole = setup_randomisers(tmp_path / "whole.bin", table, key.public, KEY, COUNT, block=BLOCK)

    def stop_after_two(made: int, total: int) -> None:
        if made == 2 * BLOCK:
            raise KeyboardInterrupt

    path = tmp_path / "r.bin"
    with pytest.raises(KeyboardInterrupt):
        setup_randomisers(path, table, key.public, KEY, COUNT, block=BLOCK, progress=stop_after_two)
    part = tmp_path / "r.bin.part"
    assert part.exists() and not path.exists()
    with open(part, "ab") as f:  # a torn write past the last whole block
        f.write(b"\x01" * 10)
    seen: list[int] = []
    setup_randomisers(path, table, key.public, KEY, COUNT, block=BLOCK,
                      progress=lambda made, total: seen.append(made))  # fmt: skip
    assert seen == [24, 32, 37]  # the first two blocks were not made again
    assert path.read_bytes() == whole.read_bytes()
    again: list[int] = []
    setup_randomisers(path, table, key.public, KEY, COUNT, block=BLOCK,
                      progress=lambda made, total: again.append(made))  # fmt: skip
    assert again == []  # the same inputs: nothing made again


def test_a_file_of_other_inputs_is_refused_and_kept(key, tmp_path):
    table = pl.randomiser_table(key)
    path = setup_randomisers(tmp_path / "r.bin", table, key.public, KEY, COUNT, block=BLOCK)
    before = path.read_bytes()
    for other_key, count in ((bytes(32), COUNT), (KEY, COUNT + 1)):
        with pytest.raises(ConfigError, match="another key, run or count; remove"):
            setup_randomisers(path, table, key.public, other_key, count, block=BLOCK)
        with pytest.raises(ConfigError, match="run the setup again"):
            stored_randomisers(path, key.public, other_key, count, 0, 1)
    assert path.read_bytes() == before


def test_rows_encrypted_from_the_setup_file_are_those_made_on_the_fly(key, tmp_path):
    """E sets up its rows' randomisers before the data, then encrypts from the file."""
    layout = SlotLayout.for_rows(64, BITS)
    width, rows = 40, 12
    count = rows * layout.per_row(width)
    table = pl.randomiser_table(key)
    path = setup_randomisers(tmp_path / "r.bin", table, key.public, KEY, count, block=BLOCK)
    cols = [[c % width] for c in range(rows)]
    made = pp.encrypted_rows(key.public, pp.computed(table, KEY), layout, cols, width, 0)
    read = pp.encrypted_rows(
        key.public, stored(path, key.public, KEY, count), layout, cols, width, 0
    )
    assert read == made
