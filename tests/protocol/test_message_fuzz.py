"""Fuzzing PartyMessage.load over real FM and FO messages: random byte mutations of the file
and random manifests (written with valid checksums, so the parser itself is exercised).
Only VertimrfError may escape, and loading writes nothing. The runs are bounded
(derandomized, 200 examples each) so that CI time stays fixed."""

from __future__ import annotations

import contextlib
import copy
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import release_all, small_adult
from tests.zip_bombs import BOMB_ITEMS, bomb, crc_of_zeros, measure, npy
from vertimrf.container import read_container, write_container
from vertimrf.errors import VertimrfError
from vertimrf.protocol import PartyMessage
from vertimrf.protocol.message import KIND
from vertimrf.protocol.schema import array_bounds
from vertimrf.server import PaperServer as Server

PARTIES = [["0", "2", "4", "6"], ["1", "3", "5", "7"]]
FUZZ = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)


@pytest.fixture(scope="module", params=["fo", "fm"])
def saved(request, tmp_path_factory):
    df, spec = small_adult(800, 8)
    cfg, _, messages = release_all(df, spec, PARTIES, seed=3, method=request.param)
    folder = tmp_path_factory.mktemp(f"fuzz-{request.param}")
    paths = []
    for m in messages:
        path = folder / f"{m.party}.vmrf"
        m.save(path)
        paths.append(path)
    Server(cfg, progress=False).receive([PartyMessage.load(p, cfg) for p in paths])
    return cfg, paths, folder


def _load_or_refuse(path, cfg, folder):
    before = sorted(os.listdir(folder))
    with contextlib.suppress(VertimrfError):
        PartyMessage.load(path, cfg)
    assert sorted(os.listdir(folder)) == before  # nothing written, nothing left behind


@FUZZ
@given(data=st.data())
def test_random_byte_mutations(saved, data):
    cfg, paths, folder = saved
    raw = bytearray(paths[0].read_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        if not raw:
            break
        op = data.draw(st.sampled_from(["flip", "truncate", "insert", "delete"]))
        at = data.draw(st.integers(0, len(raw) - 1))
        if op == "flip":
            raw[at] ^= data.draw(st.integers(1, 255))
        elif op == "truncate":
            del raw[at:]
        elif op == "insert":
            raw[at:at] = data.draw(st.binary(min_size=1, max_size=16))
        else:
            del raw[at : at + data.draw(st.integers(1, 64))]
    target = folder / "mutant.vmrf"
    target.write_bytes(bytes(raw))
    try:
        _load_or_refuse(target, cfg, folder)
    finally:
        target.unlink()


def _paths_into(tree):
    """Every (key path) of nested dicts and lists."""
    out = [()]
    if isinstance(tree, dict):
        for k, v in tree.items():
            out += [(k, *p) for p in _paths_into(v)]
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            out += [(i, *p) for p in _paths_into(v)]
    return out


@pytest.mark.slow
@FUZZ
@given(data=st.data())
def test_random_manifests(saved, data):
    cfg, paths, folder = saved
    path = data.draw(st.sampled_from(paths))
    meta, arrays = read_container(path, KIND, array_bytes=array_bounds(cfg))
    meta = copy.deepcopy(meta)
    for _ in range(data.draw(st.integers(1, 3))):
        where = data.draw(st.sampled_from(_paths_into(meta)[1:]))
        node = meta
        for key in where[:-1]:
            node = node[key]
        if data.draw(st.booleans()):
            node[where[-1]] = data.draw(JSON)
        elif isinstance(node, dict):
            del node[where[-1]]
        else:
            node.pop(where[-1])
    target = folder / "forged.vmrf"
    write_container(target, KIND, meta, arrays)
    try:
        _load_or_refuse(target, cfg, folder)
    finally:
        target.unlink()


@pytest.mark.parametrize("declared", ["honest", "lying"])
def test_a_message_bomb_is_refused_by_the_config_bound(saved, tmp_path, declared):
    """A ~1 MB party message whose "sketch" / "grr" array inflates to 1 GiB: the bound that
    the config gives (t x slots bytes, or max rows x width x 8) stops it before inflating,
    in well under a second and with little memory (measured as in test_container)."""
    cfg, _, _ = saved
    name = "sketch" if cfg.method == "fm" else "grr"
    header = npy("|u1", (BOMB_ITEMS,), b"")
    size = len(header) + BOMB_ITEMS if declared == "honest" else 1128
    crc = crc_of_zeros(header, BOMB_ITEMS // (1 << 20)) if declared == "honest" else 0
    path = bomb(tmp_path / "bomb.vmrf", BOMB_ITEMS, size, crc, "0" * 64, name=name)
    assert path.stat().st_size < 1_200_000 and array_bounds(cfg)(name) < BOMB_ITEMS
    seconds, peak, rss_growth, outcome = measure(lambda: PartyMessage.load(path, cfg))
    assert isinstance(outcome, VertimrfError), outcome
    assert seconds < 1.0 and peak < 100 * (1 << 20) and rss_growth < 100 * (1 << 20)
