"""PartyMessage: content (only DP outputs and public metadata), file format, and errors."""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile

import numpy as np
import pytest

from tests.helpers import SECRET, make_config, release_all, small_adult, string_ids
from vertimrf.container import write_container
from vertimrf.errors import MessageError
from vertimrf.mrf.model import MarkovRandomField
from vertimrf.privacy.ledger import Release
from vertimrf.protocol import PartyMessage
from vertimrf.protocol.bins import frequency_bins
from vertimrf.server import PaperServer as Server

PARTIES = [["0", "2", "4", "6"], ["1", "3", "5", "7"]]
ALLOWED_ARRAYS = re.compile(r"^(sketch|grr|bin_map_\d+|bin_counts_\d+|potential_\d+|target_\d+)$")
ALLOWED_META = {
    "party",
    "config_hash",
    "columns",
    "method",
    "hash",
    "key_fingerprint",
    "releases",
    "bins",
    "noisy_count",
    "grr_epsilon",
    "seeded",
    "sketch",
    "local",
}
# Named mechanisms; fm_sketch is the paper's (NOT DP, present only with allow_non_dp).
MECHANISMS = {
    "discrete_laplace",
    "discrete_laplace_hist",
    "fm_sketch",
    "grr",
    "privmrf.r_scores",
    "privmrf.marginals",
    "privmrf.error_queries",
}
# Mechanisms whose noisy values are released (directly or as the local model's data) and
# must come from an exact discrete sampler.
DISCRETE = {"discrete_laplace", "discrete_laplace_hist", "privmrf.marginals"}


@pytest.fixture(scope="module")
def run():
    df, spec = small_adult(2500, 8)
    return df, spec, *release_all(df, spec, PARTIES, seed=5)


def _zip_parts(path):
    with zipfile.ZipFile(path) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        arrays = {
            n[:-4]: np.load(io.BytesIO(zf.read(n)), allow_pickle=False)
            for n in zf.namelist()
            if n.endswith(".npy")
        }
        raw = b"".join(zf.read(n) for n in zf.namelist())
    return manifest, arrays, raw


@pytest.mark.parametrize("method", ["fm", "fo"])
def test_message_holds_only_dp_outputs_and_public_metadata(tmp_path, method):
    df, spec = small_adult(2500, 8)
    cfg, members, messages = release_all(df, spec, PARTIES, seed=5, method=method)
    _, _, again = release_all(df, spec, PARTIES, seed=6, method=method)  # other noise
    n = len(df)
    for party, msg, other in zip(members, messages, again, strict=True):
        path = tmp_path / f"{msg.party}.vmrf"
        msg.save(path)
        manifest, arrays, raw = _zip_parts(path)
        meta = manifest["meta"]
        # 1. Only known fields and arrays.
        assert set(meta) <= ALLOWED_META
        assert all(ALLOWED_ARRAYS.match(k) for k in arrays), sorted(arrays)
        # 2. No raw values, IDs, keys or the secret anywhere in the file.
        assert SECRET.hex().encode() not in raw and SECRET not in raw
        for rid in string_ids(n)[:50]:
            assert rid.encode() not in raw
        for w in party._keys.k0[:20] if party._keys is not None else []:
            assert int(w).to_bytes(8, "little") not in raw
        # 3. Every release is a named mechanism; counts and marginals use exact discrete
        #    samplers (discrete Laplace and discrete Gaussian), and the run says it was seeded.
        assert {r["mechanism"] for r in meta["releases"]} <= MECHANISMS
        for r in meta["releases"]:
            if r["mechanism"] == "privmrf.marginals":
                assert r["params"]["sampler"] == "discrete_gaussian"
            elif r["mechanism"] in DISCRETE:
                assert r["params"]["scale"] == pytest.approx(1 / r["params"]["epsilon"])
        assert meta["seeded"] is True
        # 4. The count is noisy (the exact n is not released), an integer, and only the count
        #    party has it.
        if msg.party == cfg.count_party:
            assert isinstance(meta["noisy_count"], int) and not isinstance(
                meta["noisy_count"], bool
            )
            assert meta["noisy_count"] != n and abs(meta["noisy_count"] - n) < 2000
        else:
            assert meta["noisy_count"] is None
        # 5. Bin counts are Laplace-noised over every domain value; the bin map is a
        #    function of them (post-processing); with other noise they change.
        for i, name in enumerate(meta["bins"]):
            counts = arrays[f"bin_counts_{i}"]
            assert counts.dtype == np.int64  # integers from the discrete Laplace sampler
            exact = np.bincount(df[name].to_numpy(), minlength=spec[name].size)
            assert counts.shape == exact.shape and not np.array_equal(counts, exact)
            np.testing.assert_array_equal(
                arrays[f"bin_map_{i}"], frequency_bins(counts, cfg.options.bins)
            )
            assert not np.array_equal(counts, other.bins[name].noisy_counts)
        # 6. LocEnc output: sketches floored at alpha_min and re-randomised by the noise, or
        #    GRR rows whose count is the noisy count (not n).
        if method == "fm":
            assert arrays["sketch"].dtype == np.uint8
            assert arrays["sketch"].min() >= meta["sketch"]["noise"]["alpha_min"]
            assert not np.array_equal(arrays["sketch"], other.sketch.values)
        else:
            assert np.issubdtype(arrays["grr"].dtype, np.integer)
            assert arrays["grr"].shape[0] == messages[0].noisy_count != n
        # 7. The local targets are marginals of the sent local model (post-processing of its
        #    DP fit), not raw marginals; the potentials change with the noise.
        loc = PartyMessage.load(path, cfg).local
        local_dom = spec.subset(list(msg.columns)).domain
        idx = {c: i for i, c in enumerate(msg.columns)}
        model = MarkovRandomField(
            local_dom, [tuple(idx[a] for a in c) for c in loc.cliques], total=loc.total
        )
        model.set_potentials(
            {tuple(idx[a] for a in c): p for c, p in zip(loc.cliques, loc.potentials, strict=True)}
        )
        for attrs, target in zip(loc.measured, loc.targets, strict=True):
            np.testing.assert_allclose(
                model.marginal([idx[a] for a in attrs]), target, rtol=1e-4, atol=1e-3
            )
        assert not np.array_equal(loc.potentials[0], other.local.potentials[0])


def test_save_load_round_trip(tmp_path, run):
    _, _, cfg, _, messages = run
    path = tmp_path / "m.vmrf"
    messages[0].save(path)
    back = PartyMessage.load(path, cfg)
    back.check(cfg)
    np.testing.assert_array_equal(back.sketch.values, messages[0].sketch.values)
    assert back.releases == messages[0].releases
    assert back.noisy_count == messages[0].noisy_count


def _rewrite(path, out, edit_manifest=None, edit_array=None):
    with zipfile.ZipFile(path) as zf:
        items = {n: zf.read(n) for n in zf.namelist()}
    if edit_manifest:
        manifest = json.loads(items["manifest.json"])
        edit_manifest(manifest)
        items["manifest.json"] = json.dumps(manifest).encode()
        items["manifest.sha256"] = hashlib.sha256(items["manifest.json"]).hexdigest().encode()
    if edit_array:
        name = edit_array
        blob = bytearray(items[name])
        blob[-1] ^= 0xFF
        items[name] = bytes(blob)
    with zipfile.ZipFile(out, "w") as zf:
        for n, b in items.items():
            zf.writestr(n, b)


def test_tampered_truncated_and_unknown_version_files_are_rejected(tmp_path, run):
    _, _, cfg, _, messages = run
    good = tmp_path / "good.vmrf"
    messages[0].save(good)
    tampered = tmp_path / "tampered.vmrf"
    _rewrite(good, tampered, edit_array="sketch.npy")
    with pytest.raises(MessageError, match="checksum"):
        PartyMessage.load(tampered, cfg)
    truncated = tmp_path / "truncated.vmrf"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(MessageError, match="truncated|unreadable"):
        PartyMessage.load(truncated, cfg)
    future = tmp_path / "future.vmrf"
    _rewrite(good, future, edit_manifest=lambda m: m.update(version=99))
    with pytest.raises(MessageError, match="version 99"):
        PartyMessage.load(future, cfg)


def test_config_mismatch_is_rejected(run):
    _, spec, cfg, _, messages = run
    other = make_config(spec, PARTIES, epsilon=cfg.epsilon * 2)
    with pytest.raises(MessageError, match="different protocol config"):
        messages[0].check(other)
    with pytest.raises(MessageError, match="different protocol config"):
        Server(other, progress=False).synthesize(messages)


def test_key_fingerprint_mismatch_is_rejected(run):
    df, spec, cfg, _, messages = run
    _, _, foreign = release_all(df, spec, PARTIES, seed=5, secret=bytes(range(1, 33)))
    with pytest.raises(MessageError, match="fingerprints differ"):
        Server(cfg, progress=False).receive([messages[0], foreign[1]])


def test_inconsistent_shapes_are_rejected(run):
    import dataclasses

    _, _, cfg, _, messages = run
    m = messages[0]
    bad_local = dataclasses.replace(
        m.local, potentials=(np.zeros((2, 2)),) + m.local.potentials[1:]
    )
    with pytest.raises(MessageError, match="shape"):
        dataclasses.replace(m, local=bad_local).check(cfg)
    with pytest.raises(MessageError, match="columns"):
        dataclasses.replace(m, columns=m.columns[:-1]).check(cfg)
    bins = dict(m.bins)
    bins.popitem()
    with pytest.raises(MessageError, match="bins"):
        dataclasses.replace(m, bins=bins).check(cfg)


def test_duplicate_and_missing_parties_are_rejected(run):
    _, _, cfg, _, messages = run
    server = Server(cfg, progress=False)
    with pytest.raises(MessageError, match="two messages"):
        server.receive([messages[0], messages[0]])
    with pytest.raises(MessageError, match="no message"):
        server.receive([messages[0]])


def test_overspending_messages_are_refused(run):
    import dataclasses

    _, _, cfg, _, messages = run
    extra = Release("discrete_laplace", "forged extra", rho=1.0, party=messages[1].party)
    greedy = dataclasses.replace(messages[1], releases=messages[1].releases + (extra,))
    with pytest.raises(MessageError, match="releases"):
        Server(cfg, progress=False).receive([messages[0], greedy])


def test_failed_write_leaves_no_file(tmp_path):
    path = tmp_path / "x.vmrf"
    with pytest.raises(MessageError, match="object dtype"):
        write_container(path, "party-message", {}, {"a": np.array([object()])})
    assert list(tmp_path.iterdir()) == []
