"""How wide a party's one-hot features are toward one peer, in round 1 and round 2, and
the block of masks a deal expands at once: pure functions of the public config."""

from __future__ import annotations

from collections.abc import Sequence

from vertimrf.protocol.config import ProtocolConfig

# Words of masks expanded at once in a block-wise deal (32 MiB): what bounds the server's
# mask memory whatever max_rows is (server.secure and the plan's model; a party streams its
# blobs and masks by the row blocks of wire.ROW_BLOCK_WORDS).
MASK_BLOCK_WORDS = 1 << 22
AUTO_WIDTH_WORDS = 1 << 26  # "auto": max_rows x width words per party (512 MiB of uint64)
# 576 holds every single, pair and triple of 8 binary attributes (NLTCS's parties: 568).
MAX_AUTO_WIDTH = 576


def feature_width(config: ProtocolConfig, sizes: Sequence[int] | None = None) -> int:
    """The cap on each party's one-hot width toward one peer, over both rounds:
    ``config.options.feature_width`` when it is an integer; for "auto", min(576,
    floor(2^26 / max_rows) rounded down to a power of two), but never below the widest
    single attribute's domain. ``sizes`` replaces the domain's sizes (to cost a binned
    domain). A party's singles always fit (:func:`group_width` may be 0).

    A party's time, memory and bytes sent are linear in max_rows x its width (and its
    products in k_p x k_q), so "auto" bounds them at any size: 576 up to max_rows 65,536
    (Adult, NLTCS), 512 at 131,072, 256 at 262,144, 64 at 1,048,576. Public: a pure function
    of the config, which every role re-derives."""
    width = config.secure_options().feature_width
    if width != "auto":
        return int(width)
    rows = max(1, int(config.max_rows or 1))
    cap = AUTO_WIDTH_WORDS // rows
    cap = min(MAX_AUTO_WIDTH, 1 << (cap.bit_length() - 1) if cap >= 1 else 0)
    sizes = config.spec.domain.sizes if sizes is None else sizes
    return max(cap, max((int(s) for s in sizes), default=1))


# Round 2 toward one peer carries at most GROUP_FACTOR times the party's singles, and never
# less than GROUP_FLOOR columns (within the feature width): where the singles are wide, a
# peer receives at most 3 times round 1's bytes. Measured (bench_two_rounds_tables): Adult's
# first party sent 32% of the one-round bytes without it, 19-22% with it, at the same 3-way
# TVD; NLTCS (16 binary singles) needs the floor, at 2 x 16 columns its TVD rose by 20%.
GROUP_FACTOR, GROUP_FLOOR = 2, 128


def group_width(width: int, singles: int) -> int:
    """A party's cap on round-2 columns toward one peer: what its ``singles`` (its round-1
    width) leave of the feature ``width`` (:func:`feature_width`), at most
    :data:`GROUP_FACTOR` times the singles or :data:`GROUP_FLOOR`, whichever is larger."""
    room = int(width) - int(singles)
    return max(0, min(room, max(GROUP_FACTOR * int(singles), GROUP_FLOOR)))
