"""Seeded roles are visible: a party run with a seed says so in every release it makes, and
a run in which any role's noise came from a seed reports no guarantee and names those roles
(the noise of a seeded role is the same on neighbouring tables, so no DP guarantee holds)."""

from __future__ import annotations

import dataclasses
import io

import numpy as np
import pandas as pd
import pytest

import vertimrf
from vertimrf.container import read_container, write_container
from vertimrf.errors import MessageError
from vertimrf.protocol.message import KIND, PartyMessage
from vertimrf.protocol.methods import secure_plan
from vertimrf.protocol.report import ProtocolReport
from vertimrf.protocol.report_file import report_from_meta, report_meta
from vertimrf.protocol.secure.release import RELEASE_KIND, SecureRelease
from vertimrf.server.secure import SecureServer

NAMES = ("p", "q")
NOTE = "seeded run: reproducible noise, not for release"


def _frame(n: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame(
        {"id": np.arange(n), **{c: rng.integers(0, 3, n).astype(str) for c in "abcd"}}
    )


def _config(**settings: object) -> vertimrf.ProtocolConfig:
    spec = vertimrf.DomainSpec(
        [vertimrf.ColumnSpec(c, "categorical", tuple("012")) for c in "abcd"]
    )
    return vertimrf.from_preset(
        "default", record_sets="equal", epsilon=2.0, delta=1e-6, spec=spec,
        parties=[("p", ["a", "b"]), ("q", ["c", "d"])], max_rows=512, **settings,
    )  # fmt: skip


def _parties(
    cfg: vertimrf.ProtocolConfig, seeds: dict[str, int | None], secure: bool
) -> tuple[dict[str, vertimrf.Party], dict]:
    df = _frame()
    keys = {name: vertimrf.KeyPair.generate(name) for name in NAMES}
    public = {name: k.public() for name, k in keys.items()}
    parties = {
        name: vertimrf.Party(
            name, df[["id", *cfg.party(name).columns]], cfg, bytes(range(32)), seed=seeds[name],
            **({"keypair": keys[name], "peers": public} if secure else {}),
        )
        for name in NAMES
    }  # fmt: skip
    return parties, public


def _secure_select_run(
    seeds: dict[str, int | None], server_seed: int | None, tmp_path
) -> tuple[ProtocolReport, list[SecureRelease], SecureServer]:
    """A secure select run; returns its report, the first releases and the server state
    saved after select, loaded by a new server."""
    cfg = _config(secure_iters=30)
    parties, public = _parties(cfg, seeds, secure=True)
    server = vertimrf.Server(cfg, seed=server_seed)
    deals = server.deal(public, {name: p.commit() for name, p in parties.items()})
    blobs = {name: p.features(deals[name]) for name, p in parties.items()}
    first = [
        p.secure_release({q: blobs[q][name] for q in NAMES if q != name})
        for name, p in parties.items()
    ]
    request = server.select(first)
    assert server.secure is not None
    server.secure.save_state(tmp_path / "server.state")
    loaded = SecureServer.load_state(cfg, tmp_path / "server.state", seed=server_seed)
    _, report = server.synthesize([p.measure(request) for p in parties.values()], n=50)
    return report, first, loaded


def _assert_no_guarantee(report: ProtocolReport, roles: tuple[str, ...]) -> None:
    assert report.seeded and report.seeded_roles == roles
    assert not report.dp_guarantee and report.total_epsilon is None
    d = report.to_dict()
    assert d["seeded"] is True and d["seeded_roles"] == list(roles)
    assert d["dp_guarantee"] is False and d["total_epsilon"] is None
    assert all(v["epsilon"] is None for v in d["viewers"].values())
    text = str(report)
    assert NOTE in text and all(role in text.splitlines()[0] for role in roles)
    for claim in ("spent epsilon", "total (epsilon, delta) =", "guarantee per viewer"):
        assert claim not in text


@pytest.mark.parametrize(
    ("seeds", "server_seed", "roles"),
    [({"p": 1, "q": None}, None, ("p",)), ({"p": None, "q": None}, 5, ("server",))],
)
def test_a_seeded_role_of_the_secure_select_run_is_named_and_voids_the_guarantee(
    tmp_path, seeds, server_seed, roles
):
    """One seeded party (or only the seeded server): the report names it, says the run is
    seeded and gives no epsilon, in its dict and its text; the server state keeps the
    seeded parties, and so does a saved model's report."""
    report, first, loaded = _secure_select_run(seeds, server_seed, tmp_path)
    assert [r.seeded for r in first] == [seeds[name] is not None for name in NAMES]
    _assert_no_guarantee(report, roles)
    assert loaded.seeded_roles == roles
    assert report_from_meta(report_meta(report), "model").seeded_roles == roles


def test_an_unseeded_secure_select_run_reports_its_guarantee(tmp_path):
    report, first, loaded = _secure_select_run({"p": None, "q": None}, None, tmp_path)
    assert not any(r.seeded for r in first) and loaded.seeded_roles == ()
    assert not report.seeded and report.seeded_roles == () and report.dp_guarantee
    assert 0 < report.total_epsilon <= 2.0 * (1 + 1e-9)
    d = report.to_dict()
    assert d["dp_guarantee"] is True and d["seeded_roles"] == [] and d["total_epsilon"] > 0
    assert NOTE not in str(report) and "spent epsilon" in str(report)


def _paper_run(
    pipeline: str, seeds: dict[str, int | None], server_seed: int | None
) -> tuple[ProtocolReport, list[PartyMessage], vertimrf.ProtocolConfig]:
    secure = pipeline == "secure-paper"
    settings = {"secure_pipeline": "paper"} if secure else {"method": pipeline}
    cfg = _config(server_iters=20, **settings)
    parties, public = _parties(cfg, seeds, secure)
    server = vertimrf.Server(cfg, seed=server_seed)
    count = parties["p"].release_count()
    messages = [p.release(noisy_count=count) for p in parties.values()]
    releases = None
    if secure:
        deals = server.deal(public, {name: p.commit() for name, p in parties.items()})
        blobs = {name: p.features(deals[name]) for name, p in parties.items()}
        releases = [
            p.secure_release({q: blobs[q][name] for q in NAMES if q != name})
            for name, p in parties.items()
        ]
    _, report = server.synthesize(messages, 50, secure_releases=releases)
    return report, messages, cfg


@pytest.mark.parametrize("pipeline", ["fo", "secure-paper"])
def test_a_seeded_party_of_the_paper_pipeline_is_named_and_voids_the_guarantee(pipeline):
    """FO and the secure paper pipeline: the seeded party's local message says so and the
    report names it, with no epsilon."""
    report, messages, cfg = _paper_run(pipeline, {"p": None, "q": 4}, None)
    assert [m.seeded for m in messages] == [False, True]
    _assert_no_guarantee(report, ("q",))
    buf = io.BytesIO()
    messages[1].save(buf)
    assert PartyMessage.load(io.BytesIO(buf.getvalue()), cfg).seeded


@pytest.mark.parametrize("pipeline", ["fo", "secure-paper"])
def test_an_unseeded_paper_pipeline_run_reports_its_guarantee(pipeline):
    """No party seeded: a DP guarantee; the server's seed counts only where it draws noise
    (the secure paper pipeline), in FO it fixes the sampling alone."""
    report, _, _ = _paper_run(pipeline, {"p": None, "q": None}, None)
    assert report.seeded_roles == () and report.dp_guarantee
    assert 0 < report.total_epsilon <= 2.0 * (1 + 1e-9)
    assert "spent epsilon" in str(report) and NOTE not in str(report)
    report, _, _ = _paper_run(pipeline, {"p": None, "q": None}, 6)
    assert report.seeded_roles == (("server",) if pipeline == "secure-paper" else ())
    assert report.dp_guarantee == (pipeline == "fo")


def _without(data: bytes, kind: str, key: str) -> bytes:
    meta, arrays = read_container(io.BytesIO(data), kind, array_bytes=lambda _: 1 << 30)
    del meta[key]
    out = io.BytesIO()
    write_container(out, kind, meta, arrays)
    return out.getvalue()


def test_a_saved_release_keeps_its_seeded_flag_and_one_without_it_is_refused(tmp_path):
    """The flag survives save and load and is part of the fingerprint; a release or a
    message that does not say whether it was seeded is refused."""
    _, first, _ = _secure_select_run({"p": 1, "q": None}, None, tmp_path)
    plan = secure_plan(_config(secure_iters=30))
    for release in first:
        release.save(tmp_path / f"{release.party}.vmrf")
        back = SecureRelease.load(tmp_path / f"{release.party}.vmrf", plan)
        assert back.seeded == release.seeded and back.fingerprint() == release.fingerprint()
        flipped = dataclasses.replace(release, seeded=not release.seeded)
        assert flipped.fingerprint() != release.fingerprint()
    data = (tmp_path / "p.vmrf").read_bytes()
    with pytest.raises(MessageError, match="whether its noise was seeded") as err:
        SecureRelease.load(io.BytesIO(_without(data, RELEASE_KIND, "seeded")), plan)
    assert "\n" not in str(err.value)

    _, messages, cfg = _paper_run("fo", {"p": 2, "q": None}, None)
    buf = io.BytesIO()
    messages[0].save(buf)
    with pytest.raises(MessageError, match="lacks the field 'seeded'"):
        PartyMessage.load(io.BytesIO(_without(buf.getvalue(), KIND, "seeded")), cfg)
