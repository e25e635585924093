"""vertimrf.Party and vertimrf.Server serve the paper-pipeline methods too (FO and the secure
paper pipeline), behind the same constructors as the default method."""

import numpy as np
import pandas as pd
import pytest

import vertimrf
from vertimrf.errors import ConfigError


@pytest.mark.parametrize("pipeline", ["fo", "secure-paper"])
def test_party_and_server_serve_the_paper_pipeline_methods(pipeline):
    """The same two classes run FO and the secure paper pipeline; a step the method does not
    have is a ConfigError."""
    rng = np.random.default_rng(1)
    n = 400
    df = pd.DataFrame(
        {"id": np.arange(n), **{c: rng.integers(0, 5, n).astype(str) for c in "abcd"}}
    )
    spec = vertimrf.DomainSpec(
        [vertimrf.ColumnSpec(c, "categorical", tuple("01234")) for c in "abcd"]
    )
    settings = {"method": "fo"} if pipeline == "fo" else {"secure_pipeline": "paper"}
    cfg = vertimrf.from_preset(
        "default", epsilon=4.0, delta=1e-6, spec=spec,
        parties=[("p", ["a", "b"]), ("q", ["c", "d"])], max_rows=512, server_iters=20, **settings,
    )  # fmt: skip
    keys = {name: vertimrf.KeyPair.generate(name) for name in ("p", "q")}
    public = {name: k.public() for name, k in keys.items()}
    secure = pipeline != "fo"
    parties = [
        vertimrf.Party(
            name, df[["id", *cfg.party(name).columns]], cfg, bytes(range(32)), seed=2,
            **({"keypair": keys[name], "peers": public} if secure else {}),
        )
        for name in ("p", "q")
    ]  # fmt: skip
    server = vertimrf.Server(cfg, seed=2)
    with pytest.raises(ConfigError, match="select pipeline"):
        server.select([])
    with pytest.raises(ConfigError, match="select pipeline"):
        parties[0].measure([])
    count = parties[0].release_count()
    messages = [p.release(noisy_count=count) for p in parties]
    releases = None
    if secure:
        deals = server.deal(public, {p.name: p.commit() for p in parties})
        blobs = {p.name: p.features(deals[p.name]) for p in parties}
        releases = [p.secure_release({q: blobs[q][p.name] for q in blobs if q != p.name})
                    for p in parties]  # fmt: skip
    else:
        with pytest.raises(ConfigError, match="'secure'"):
            server.deal(public, {})
    frame, report = server.synthesize(messages, 100, secure_releases=releases)
    assert list(frame.columns) == list("abcd") and len(frame) == 100
    roles = ("p", "q", "server") if secure else ("p", "q")  # FO: the server draws no noise
    assert report.method == cfg.method and report.seeded_roles == roles
    assert 0 < report.ledger.total_epsilon(report.delta) <= 4.0 * (1 + 1e-9)
