"""Partial record sets: the sizes of the messages a party sends and receives say nothing of
its peers' records, nor of its own beyond public settings. Two runs differ only in whether
party B holds one record of A's; A's files are compared by size. Every file has the same
size in both runs but those made from DP outputs, whose length varies with their values, as
in any run: A's releases (noisy marginals and the noisy count) and the round-2 messages,
whose sizes follow the server's request, which it selects from the noisy first releases.
A's tokens message is padded to the plan's public max_tokens (its count of tokens,
n_A + sum_T d_T, travels inside it, where the server sees it anyway), and its slot map holds
that many slots: the plan's public size of a slot map, whatever A holds."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from tests.folder_roles import THREE
from tests.helpers import SECRET
from tests.https_roles import pinned_files
from tests.runs import SEED, correlated_table
from vertimrf.crypto.keys import KeyPair
from vertimrf.driver import local_run
from vertimrf.party.records.tokens import TokenKeys, dummy_counts
from vertimrf.protocol.methods import secure_plan
from vertimrf.protocol.secure.commit import read_admit
from vertimrf.protocol.secure.slot_map import slot_map_bytes
from vertimrf.protocol.secure.tokens import TokenList, tokens_head, tokens_size


def _run(root: Path, b_holds_x: bool) -> dict[str, int]:
    """One seeded run over the message folders: A holds records 0..199, B records 100..299
    (and record 0 when ``b_holds_x``), C every record. The sizes of A's files, by name."""
    df, spec = correlated_table()
    cfg = pinned_files(root, df, spec, record_sets="partial", max_rows=4096)
    held = {"A": range(200), "B": [*([0] if b_holds_x else []), *range(100, 300)],
            "C": range(len(df))}  # fmt: skip
    data = {}
    for n in THREE:
        frame = pd.read_csv(root / f"{n}.csv")
        data[n] = frame[frame["rid"].isin(list(held[n]))]
    keys = {n: KeyPair.load(root / f"{n}.key") for n in THREE}
    run = local_run(data, cfg, SECRET, seed=SEED, id_column="rid", keys=keys,
                    server_key=KeyPair.load(root / "server.key"),
                    message_dir=root / "mail")  # fmt: skip
    run.run()
    sizes = {f"to {p.parent.name}: {p.name}": p.stat().st_size
             for p in (root / "mail").glob("*/*") if p.is_file()}  # fmt: skip
    plan = secure_plan(cfg)
    assert plan.regions is not None
    admit = read_admit((root / "mail" / "A" / "server.admit").read_bytes(), cfg.config_hash())
    own = TokenKeys(SECRET, keys["A"].local_secret(), cfg.run_context())
    dummies = dummy_counts(own, admit.digest, plan.regions, 0)
    head = tokens_head(cfg.config_hash(), "A")
    assert sizes["to server: A.tokens"] == tokens_size(head, plan.max_tokens)
    data = (root / "mail" / "server" / "A.tokens").read_bytes()
    server = KeyPair.load(root / "server.key")
    listed = TokenList(data, cfg.config_hash(), "A", plan.max_tokens, server)
    assert listed.count == 200 + sum(dummies.values())
    assert sizes["to A: server.deal-slots"] == slot_map_bytes(plan.max_tokens)
    return {k: v for k, v in sizes.items() if k.startswith("to A:") or ": A." in k}


def test_a_partys_message_sizes_do_not_depend_on_a_peers_records(tmp_path):
    (tmp_path / "without").mkdir()
    (tmp_path / "with").mkdir()
    without, with_x = _run(tmp_path / "without", False), _run(tmp_path / "with", True)
    assert set(without) == set(with_x) and len(without) > 5
    varying = {k for k in without if without[k] != with_x[k]}
    from_dp = {"to server: A.release", "to server: A.measure", "to A: server.select",
               "to A: server.select-deal", "to B: A.groups", "to A: B.groups"}  # fmt: skip
    assert varying <= from_dp
    fixed = {"to server: A.tokens", "to A: server.deal", "to A: server.deal-slots",
             "to B: A.features", "to A: B.features", "to server: A.commit",
             "to A: server.admit"}  # fmt: skip
    assert fixed <= set(without) - varying
