"""The default method (secure, select pipeline) end to end through the public API alone:
only top-level ``vertimrf`` names, two parties, one server."""

import numpy as np
import pandas as pd

import vertimrf


def test_default_method_runs_through_the_public_party_and_server():
    rng = np.random.default_rng(0)
    n = 300
    df = pd.DataFrame(
        {
            "id": np.arange(n),
            "a": rng.choice(["x", "y", "z"], n),
            "b": rng.choice(["p", "q"], n),
            "c": rng.choice(["u", "v", "w", "s"], n),
        }
    )
    spec = vertimrf.DomainSpec(
        [
            vertimrf.ColumnSpec("a", "categorical", ("x", "y", "z")),
            vertimrf.ColumnSpec("b", "categorical", ("p", "q")),
            vertimrf.ColumnSpec("c", "categorical", ("s", "u", "v", "w")),
        ]
    )
    cfg = vertimrf.from_preset(
        "default",
        record_sets="equal",
        epsilon=2.0,
        delta=1e-6,
        spec=spec,
        parties=[("alice", ["a", "b"]), ("bob", ["c"])],
        max_rows=1024,
        secure_iters=50,
    )
    assert isinstance(cfg.options, vertimrf.SecureOptions) and cfg.method == "secure"
    secret = bytes(range(32))
    keys = {name: vertimrf.KeyPair.generate(name) for name in ("alice", "bob")}
    public = {name: k.public() for name, k in keys.items()}
    parties = {
        name: vertimrf.Party(
            name,
            df[["id", *cfg.party(name).columns]],
            cfg,
            secret,
            keypair=keys[name],
            peers={q: k for q, k in public.items() if q != name},
            seed=1,
        )
        for name in keys
    }
    server = vertimrf.Server(cfg, seed=1)
    deals = server.deal(public, {name: p.commit() for name, p in parties.items()})
    blobs = {name: p.features(deals[name]) for name, p in parties.items()}
    inbox = {name: {q: blobs[q][name] for q in parties if q != name} for name in parties}
    request = server.select([p.secure_release(inbox[name]) for name, p in parties.items()])
    frame, report = server.synthesize([p.measure(request) for p in parties.values()], n=200)

    assert list(frame.columns) == ["a", "b", "c"] and len(frame) == 200
    for col in frame.columns:
        assert set(frame[col]) <= set(df[col])
    # The report's privacy numbers: the plan's releases fit the budget; seeded, it claims no
    # guarantee and names the seeded roles.
    assert report.method == "secure" and not report.dp_guarantee
    assert report.seeded_roles == ("alice", "bob", "server")
    assert (report.epsilon, report.delta) == (2.0, 1e-6)
    assert report.ledger.total_rho > 0
    assert 0 < report.ledger.total_epsilon(report.delta) <= 2.0 * (1 + 1e-9)
