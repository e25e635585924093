"""The slot map: a party's slots padded with -1 to the run's max_tokens, sealed under the key
its deal carries and bound to the run, the party and the assignment. It reads back by blocks
of any size, its length is public (the same whatever the count), and a slot map altered,
cut, of another party or assignment, or whose digest is not the deal's is refused with one
line; the deal carries the key, digest, count and assignment."""

from __future__ import annotations

import io

import numpy as np
import pytest

from vertimrf.crypto.keys import KeyPair
from vertimrf.errors import ChannelError, MessageError
from vertimrf.protocol.secure.deal import Deal
from vertimrf.protocol.secure.slot_map import open_slot_map, slot_map_bytes, write_slot_map

KEY, RUN, ASSIGNMENT, NONCE = bytes(range(32)), b"run-1", bytes(range(2, 34)), bytes(12)


def _map(slots, most, party="A", assignment=ASSIGNMENT, step=3):
    out = io.BytesIO()
    blocks = [slots[i : i + step] for i in range(0, slots.size, step)]
    digest = write_slot_map(out, KEY, blocks, slots.size, most, RUN, party, assignment, NONCE)
    deal = Deal(bytes(32), slot_key=KEY, slot_digest=digest, slot_count=int(slots.size),
                assignment=assignment)  # fmt: skip
    return out.getvalue(), deal


def _read(blob, deal, most, party="A", step=4):
    blocks = open_slot_map(KEY, blob, RUN, party, deal, most, step)
    return np.concatenate([np.empty(0, np.int64), *map(np.copy, blocks)])


@pytest.mark.parametrize("count", [0, 1, 7, 20])
@pytest.mark.parametrize("step", [1, 4, 64])
def test_a_slot_map_reads_back_by_blocks_and_has_one_length(count, step):
    slots = np.random.default_rng(count).permutation(100)[:count].astype(np.int64)
    blob, deal = _map(slots, 20)
    assert len(blob) == slot_map_bytes(20) == len(_map(slots[:0], 20)[0])
    np.testing.assert_array_equal(_read(blob, deal, 20, step=step), slots)


def _one_line(kind, call, match=None):
    with pytest.raises(kind, match=match) as caught:
        call()
    assert "\n" not in str(caught.value)


def test_altered_cut_foreign_or_mismatched_slot_maps_are_refused():
    slots = np.array([5, 0, 9], np.int64)
    blob, deal = _map(slots, 8)
    flipped = bytearray(blob)
    flipped[len(blob) // 2] ^= 1
    _one_line(ChannelError, lambda: _read(bytes(flipped), deal, 8), "not from this peer")
    _one_line(MessageError, lambda: _read(blob[:-8], deal, 8), "holds")  # cut: another length
    _one_line(MessageError, lambda: _read(blob, deal, 9), "holds")  # another run's max_tokens
    _one_line(ChannelError, lambda: _read(blob, deal, 8, party="B"))  # another party's
    other, _ = _map(slots, 8, assignment=bytes(32))
    _one_line(MessageError, lambda: _read(other, deal, 8), "not the one its deal opens")
    changed, _ = _map(np.array([5, 0, 8], np.int64), 8)  # same key, other slots
    _one_line(MessageError, lambda: _read(changed, deal, 8), "does not match its deal")
    with pytest.raises(MessageError, match="slots for a slot map"):
        write_slot_map(io.BytesIO(), KEY, [slots], 2, 8, RUN, "A", ASSIGNMENT, NONCE)


def test_the_deal_carries_the_slot_maps_key_digest_count_and_assignment():
    keypair = KeyPair.generate("A")
    deal = Deal(bytes(32), {}, {}, bytes(32), bytes(range(32)), KEY, bytes(range(3, 35)), 12,
                ASSIGNMENT)  # fmt: skip
    opened = Deal.open(deal.seal(keypair.public(), RUN), keypair, RUN)
    assert (opened.slot_key, opened.slot_digest, opened.slot_count, opened.assignment) == (
        KEY, bytes(range(3, 35)), 12, ASSIGNMENT,
    )  # fmt: skip
    plain = Deal(bytes(32), {}, {}, bytes(32), bytes(range(32)))
    assert Deal.open(plain.seal(keypair.public(), RUN), keypair, RUN).slot_key == b""
