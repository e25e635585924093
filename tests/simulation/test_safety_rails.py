"""Safety rails: no false guarantee under collusion, no data-derived public value, each
release once by construction (keyed noise), seeds kept apart, failed steps change nothing."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from tests.helpers import ROOT
from tests.secure_runs import split
from vertimrf import simulate
from vertimrf.crypto.keys import KeyPair, pairwise_key
from vertimrf.crypto.prg import expand
from vertimrf.domain import DomainSpec
from vertimrf.errors import MessageError, RunChangedError
from vertimrf.party import LocalParty as Party
from vertimrf.party.secure import SecureParty
from vertimrf.party.secure.release import sampler
from vertimrf.privacy.samplers import KeyedSampler, SecureSampler
from vertimrf.privacy.zcdp import round_up
from vertimrf.product.dealer import DealerProduct
from vertimrf.protocol import from_preset
from vertimrf.protocol.methods import secure_plan
from vertimrf.protocol.secure.features import open_features
from vertimrf.protocol.secure.marginals import Request
from vertimrf.protocol.secure.plan import SELECT
from vertimrf.protocol.secure.release import SecureRelease
from vertimrf.server.secure import SecureServer
from vertimrf.server.secure.session import randomness

SECRET = bytes(range(32))


def _secure_run(sizes_by_party, n, *, seed=None, rows=64, data_seed=0):
    """A random table split over parties; unseeded SecureParty objects with their keys, the
    server with its key, and the plain frame."""
    cfg, _, table, parties = split(sizes_by_party, n, data_seed, rows=rows, run_nonce="ab" * 16)
    frame = table.assign(id=np.arange(n))
    keys = {name: KeyPair.generate(name) for name, _ in parties}
    return cfg, frame, parties, keys, KeyPair.generate("server")


def _party(cfg, frame, parties, keys, name, seed=None):
    cols = dict(parties)[name]
    public = {q: k.public() for q, k in keys.items() if q != name}
    return SecureParty(name, frame[["id", *cols]], cfg, SECRET, keys[name], public, seed=seed)


def _deal(server, cfg, frame, parties, keys):
    """The server's deal on every party's public key and data commitment."""
    public = {n: k.public() for n, k in keys.items()}
    commitments = {n: _party(cfg, frame, parties, keys, n).commitment() for n, _ in parties}
    return server.deal(public, commitments)


# ------------------------------------------------------------------ 1. collusion


@pytest.mark.parametrize("sizes", [[[3, 2], [4]], [[3, 2], [4], [2, 3]]])
def test_server_and_one_party_recover_a_masked_table_exactly(monkeypatch, sizes):
    """The server dealt every mask U_p, so the server with any party that receives p's
    masked features X_p - U_p (under their pairwise key) recovers X_p exactly: every row of
    the one-hot table, hence every record. No finite epsilon holds against that coalition."""
    cfg, frame, parties, keys, server_key = _secure_run(sizes, 40)
    dealt = {}
    real = DealerProduct.deal

    def spy(self, plan, seeds_u, seeds_w):  # what the server knows: the seeds it drew
        dealt["u"] = list(seeds_u)
        return real(self, plan, seeds_u, seeds_w)

    monkeypatch.setattr(DealerProduct, "deal", spy)
    server = SecureServer(cfg, keypair=server_key)
    deals = _deal(server, cfg, frame, parties, keys)
    owner = _party(cfg, frame, parties, keys, "P0")
    blobs = owner.features(deals["P0"])
    plan, ctx = server.plan, cfg.run_context()
    for receiver in [q for q, _ in parties if q != "P0"]:
        # The receiving party opens the blob with its pairwise key; the server adds U_0.
        key = pairwise_key(keys[receiver], keys["P0"].public(), ctx)
        masked, _ = open_features(
            key, blobs[receiver], ctx, "P0", receiver, (plan.rows, plan.widths[0]),
            word=plan.word, word_bytes=plan.word_bytes,
        )  # fmt: skip
        words = plan.rows * plan.widths[0]
        u = expand(dealt["u"][0], b"U", words, word=plan.word).reshape(masked.shape)
        x = (masked + u) & plan.word(plan.ring_mask)
        assert set(np.unique(x)) <= {0, 1}
        real_rows = x[: len(frame)]
        assert not x[len(frame) :].any()  # padding rows
        # Decode each row's codes from the single-attribute groups of P0.
        decoded = []
        for g, off in zip(plan.groups[0], plan.offsets[0], strict=True):
            if len(g) == 1:
                size = plan.sizes[g[0]]
                block = real_rows[:, off : off + size]
                assert (block.sum(1) == 1).all()
                decoded.append(block.argmax(1))
        got = sorted(map(tuple, np.stack(decoded, 1).tolist()))
        want = sorted(map(tuple, frame[dict(parties)["P0"]].to_numpy().tolist()))
        assert got == want  # 100% of the records, exactly


def test_report_and_readme_claim_nothing_for_a_coalition():
    cfg, frame, parties, keys, server_key = _secure_run([[3, 2], [4]], 40)
    _, report = simulate(frame.drop(columns="id"), config=cfg)  # unseeded: it claims a bound
    text = str(report)
    assert "server+" not in text and "server+" not in str(report.to_dict())
    assert "under collusion there is no guarantee" in text
    for doc in ("README.md", "docs/privacy.md"):
        assert not re.search(r"server\+\w+[^\n]{0,20}\d", (ROOT / doc).read_text()), doc
    privacy = (ROOT / "docs" / "privacy.md").read_text()
    collusion = privacy[privacy.index("## Collusion") :]
    assert "colludes with no party" in collusion and "no guarantee" in collusion


# ------------------------------------------------------------------ 2. public values


def test_no_public_value_is_read_off_the_data(tmp_path):
    """Two tables that differ in one row, at n = 2^k and 2^k + 1, give the same config and
    the same message sizes: the feature blobs byte for byte, the first release's arrays in
    shape (its compressed file size is a function of DP and uniform values only)."""
    rng = np.random.default_rng(3)
    spec = DomainSpec.from_dict({"a": 3, "b": 2, "c": 4, "d": 2})
    big = pd.DataFrame(
        {c: rng.integers(0, u, 2**9 + 1) for c, u in zip("abcd", (3, 2, 4, 2), strict=True)}
    )
    plan = _plan(spec)
    sizes, hashes = [], []
    for i, df in enumerate((big.iloc[: 2**9], big)):
        out = tmp_path / str(i)
        out.mkdir()
        _, report = simulate(df, spec, [["a", "b"], ["c", "d"]], 1.0, 1e-6, seed=5,
                             message_dir=out)  # fmt: skip
        selects = {
            p: (out / "server" / f"{p}.release").stat().st_size for p in ("party0", "party1")
        }
        measures = {p: (out / "server" / f"{p}.measure").stat().st_size for p in selects}
        blobs = {p: report.message_bytes[p] - selects[p] - measures[p] for p in selects}
        loaded = [SecureRelease.load(out / "server" / f"{p}.release", plan) for p in selects]
        shapes = [
            sorted((str(k), v.shape) for k, v in [*r.within.items(), *r.cross.items()])
            for r in loaded
        ]
        sizes.append((shapes, blobs))
        hashes.append({r.config_hash for r in loaded})
    assert sizes[0] == sizes[1]
    assert hashes[0] == hashes[1] and len(hashes[0]) == 1


def _plan(spec):
    from vertimrf.simulation import _build_config

    cfg = _build_config(spec, [["a", "b"], ["c", "d"]], 1.0, 1e-6, "secure", 5, False,
                        "default", {})  # fmt: skip
    return _plan_of(cfg)


def test_no_delta_of_one_over_n_anywhere():
    """delta = 1/len(df) puts n into the public config: not in the README, the docs, the demo,
    the benchmarks or the library."""
    pattern = re.compile(r"1(\.0)?\s*/\s*len\(")
    files = [ROOT / "README.md", *ROOT.glob("docs/*.md"), *ROOT.glob("benchmarks/*.py")]
    files += ROOT.glob("vertimrf/**/*.py")
    offenders = [str(f) for f in files if pattern.search(f.read_text())]
    assert not offenders
    assert not [str(f) for f in files if "delta=1/n" in f.read_text()]


@pytest.mark.parametrize(
    ("x", "digits", "text"),
    [(1.23444, 4, "1.235"), (2.2113e-5, 2, "2.3e-05"), (0.8, 4, "0.8"), (1e-6, 2, "1e-06")],
)
def test_printed_privacy_numbers_are_rounded_up(x, digits, text):
    assert round_up(x, digits) == text
    assert float(round_up(x, digits)) >= x


# ------------------------------------------------------------------ 3. keyed noise


def _release_bytes(tmp_path, cfg, frame, parties, keys, deals, tag):
    """Features then the first release of every party, from fresh objects (as from a fresh
    folder); the bytes of each blob and each release."""
    members = {n: _party(cfg, frame, parties, keys, n) for n, _ in parties}
    blobs = {n: m.features(deals[n]) for n, m in members.items()}
    inbox = {n: {q: blobs[q][n] for q in members if q != n} for n in members}
    out = {}
    for n, m in members.items():
        path = tmp_path / f"{tag}-{n}.vmrf"
        m.release(inbox[n]).save(path)
        out[n] = (tuple(bytes(b) for b in blobs[n].values()), path.read_bytes())
    return out, members, inbox


def test_rerunning_features_and_release_writes_identical_bytes(tmp_path):
    """Unseeded: the deal, the feature blobs and the release are the same bytes when a step
    runs again on the same inputs (fresh objects, as from a fresh folder), so nothing new is
    spent; other data gives other noise."""
    cfg, frame, parties, keys, server_key = _secure_run([[3, 2], [4]], 50)
    deals = _deal(SecureServer(cfg, keypair=server_key), cfg, frame, parties, keys)
    assert deals == _deal(SecureServer(cfg, keypair=server_key), cfg, frame, parties, keys)
    first, members, inbox = _release_bytes(tmp_path, cfg, frame, parties, keys, deals, "a")
    again, _, _ = _release_bytes(tmp_path, cfg, frame, parties, keys, deals, "b")
    assert first == again
    p0 = members["P0"]
    assert isinstance(sampler(p0.session, p0._step, SELECT, Request(())), KeyedSampler)
    changed = frame.copy()
    changed.loc[0, "p0c0"] = (changed.loc[0, "p0c0"] + 1) % 3
    with pytest.raises(RunChangedError, match="a corrected table needs a new config"):
        _release_bytes(tmp_path, cfg, changed, parties, keys, deals, "c")  # the old deal
    fresh = _deal(SecureServer(cfg, keypair=server_key), cfg, changed, parties, keys)
    assert fresh != deals  # another commitment, another deal: no mask is used twice
    other, _, _ = _release_bytes(tmp_path, cfg, changed, parties, keys, fresh, "c")
    assert other["P0"][1] != first["P0"][1] and other["P1"][1] != first["P1"][1]
    # The server: the same releases give the same request and the same state.
    releases = [SecureRelease.load(tmp_path / f"a-{n}.vmrf", _plan_of(cfg)) for n in keys]
    states = []
    for i in range(2):
        server = SecureServer(cfg, keypair=server_key)
        request = server.select(releases)
        server.save_state(tmp_path / f"server{i}.state")
        states.append((request.digest(), (tmp_path / f"server{i}.state").read_bytes()))
    assert states[0] == states[1]


def _plan_of(cfg):

    return secure_plan(cfg)


def test_fo_release_twice_gives_identical_bytes(tmp_path):
    """FO: the party's noise (count, bins, local model, GRR) derives from its local secret,
    the run, the step and its data, so a second release on the same inputs is the same."""
    rng = np.random.default_rng(0)
    spec = DomainSpec.from_dict({"a": 3, "b": 5, "c": 2, "d": 6})
    df = pd.DataFrame(
        {c: rng.integers(0, u, 300) for c, u in zip("abcd", (3, 5, 2, 6), strict=True)}
    )
    cfg = from_preset(
        "paper", epsilon=1.0, delta=1e-6, spec=spec, parties=[["a", "b"], ["c", "d"]],
        run_nonce="cd" * 16,
    )  # fmt: skip
    frame = df.assign(id=np.arange(len(df)))
    local = KeyPair.generate("party0").local_secret()
    out = []
    for i in range(2):
        party = Party("party0", frame[["id", "a", "b"]], cfg, SECRET, local_secret=local,
                      progress=False)  # fmt: skip
        party.release().save(tmp_path / f"m{i}.vmrf")
        out.append((tmp_path / f"m{i}.vmrf").read_bytes())
    assert out[0] == out[1]
    other = Party("party0", frame[["id", "a", "b"]], cfg, SECRET, progress=False)
    other.release().save(tmp_path / "fresh.vmrf")
    assert (tmp_path / "fresh.vmrf").read_bytes() != out[0]  # another secret, other noise


def test_keyed_sampler_is_exact_discrete_gaussian():
    """Chi-square of 200,000 keyed draws against the exact pmf of N_Z(0, 3^2) (cells |x| <=
    9, tails pooled); fixed key, so deterministic; a correct sampler fails with probability
    below 1e-6 (the threshold)."""
    sigma = 3.0
    draws = KeyedSampler(b"k" * 32, "party-noise", "test").discrete_gaussian(sigma, 200_000)
    support = np.arange(-60, 61)
    pmf = np.exp(-(support**2) / (2 * sigma**2))
    pmf /= pmf.sum()
    edges = list(range(-9, 10))
    observed = [np.sum(draws < -9)] + [np.sum(draws == v) for v in edges] + [np.sum(draws > 9)]
    expected = [pmf[support < -9].sum()] + [pmf[support == v].sum() for v in edges]
    expected = np.array([*expected, pmf[support > 9].sum()]) * len(draws)
    assert stats.chisquare(observed, expected).pvalue > 1e-6
    again = KeyedSampler(b"k" * 32, "party-noise", "test").discrete_gaussian(sigma, 200_000)
    other = KeyedSampler(b"k" * 32, "party-noise", "other").discrete_gaussian(sigma, 100)
    assert np.array_equal(draws, again)
    assert not np.array_equal(draws[:100], other)


# ------------------------------------------------------------------ 4. seeds


def test_sample_seed_touches_the_sampling_only(tmp_path):
    """``sample_seed`` fixes the synthetic rows, not the DP noise: unseeded servers with the
    same key fit the same model (the same noisy measurements) whatever the sample seed, and
    the report says the run is unseeded."""
    cfg, frame, parties, keys, server_key = _secure_run([[3, 2], [4]], 60)
    deals = _deal(SecureServer(cfg, keypair=server_key), cfg, frame, parties, keys)
    _, _, inbox = _release_bytes(tmp_path, cfg, frame, parties, keys, deals, "s")
    releases = [SecureRelease.load(tmp_path / f"s-{n}.vmrf", _plan_of(cfg)) for n in keys]
    out = []
    for sample_seed in (1, 1, 2):
        server = SecureServer(cfg, keypair=server_key)
        request = server.select(releases)
        measured = []
        for n in keys:
            member = _party(cfg, frame, parties, keys, n)
            member.open_deal(deals[n])
            measured.append(member.measure(request, blobs=inbox[n]))
        synth = server.synthesize(measured, sample_seed=sample_seed)
        clique = tuple(server.data.tree.cliques[0])
        out.append((synth.to_csv(index=False), server.data.model.marginal(clique)))
        assert not server.report().seeded
    assert out[0][0] == out[1][0] and out[0][0] != out[2][0]
    assert np.array_equal(out[0][1], out[2][1])  # the same noise and fit


# ------------------------------------------------------------------ 6. atomic steps


def test_a_failed_select_leaves_the_ledger_and_state_unchanged(tmp_path):
    cfg, frame, parties, keys, server_key = _secure_run([[3, 2], [4]], 50)
    deals = _deal(SecureServer(cfg, keypair=server_key), cfg, frame, parties, keys)
    _release_bytes(tmp_path, cfg, frame, parties, keys, deals, "f")
    releases = [SecureRelease.load(tmp_path / f"f-{n}.vmrf", _plan_of(cfg)) for n in keys]
    server = SecureServer(cfg, keypair=server_key)
    with pytest.raises(MessageError, match="two releases from party P0"):
        server.select([releases[0], releases[0]])
    broken = SecureRelease(**{**releases[1].__dict__, "cross": {}})
    with pytest.raises(MessageError, match="lacks the shares"):
        server.select([releases[0], broken])
    assert server.ledger.releases == () and server.data.first is None
    server.select(releases)  # a retry works: no PrivacyBudgetError
    before = server.ledger.releases
    with pytest.raises(MessageError):
        server.synthesize(releases)  # first releases where the second are due
    assert server.ledger.releases == before


def test_a_failed_party_release_leaves_its_ledger_unchanged(monkeypatch):
    rng = np.random.default_rng(1)
    spec = DomainSpec.from_dict({"a": 3, "b": 5, "c": 2, "d": 6})
    df = pd.DataFrame(
        {c: rng.integers(0, u, 200) for c, u in zip("abcd", (3, 5, 2, 6), strict=True)}
    )
    cfg = from_preset("paper", epsilon=1.0, delta=1e-6, spec=spec, parties=[["a", "b"], ["c", "d"]])
    party = Party("party0", df.assign(id=np.arange(200))[["id", "a", "b"]], cfg, SECRET,
                  progress=False)  # fmt: skip

    def boom(*args, **kwargs):
        raise MessageError("simulated failure after the local model")

    monkeypatch.setattr(type(party.method), "release", boom)  # FO's cross release
    with pytest.raises(MessageError, match="simulated failure"):
        party.release()
    assert party.ledger.releases == () and party._noisy_count is None
    monkeypatch.undo()
    assert party.release().party == "party0"  # the retry runs: nothing was spent


def test_unseeded_noise_is_never_the_os_sampler_for_a_release():
    """Releases use keyed noise (reproducible per inputs); the OS sampler stays for other
    uses."""
    cfg, frame, parties, keys, server_key = _secure_run([[3], [4]], 20)
    server = SecureServer(cfg, keypair=server_key)
    noise, _ = randomness(server.session, SELECT, [])
    assert isinstance(noise, KeyedSampler) and not isinstance(noise, SecureSampler)
