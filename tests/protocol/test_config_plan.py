"""The factories (``from_preset``, ``load_config``) and every role refuse a config whose run
would fail later, and ``run_plan`` states its cost: every release and the worst-case ledger
total, each role's bytes and its estimated peak memory (``vertimrf.protocol.plan``)."""

from __future__ import annotations

import math
import re
import tracemalloc

import pytest

import vertimrf
from tests.helpers import SECRET, small_adult
from vertimrf.cli import main
from vertimrf.cli.config import machine_memory_gb
from vertimrf.crypto.keys import KeyPair
from vertimrf.domain import DomainSpec
from vertimrf.errors import ConfigError
from vertimrf.party.secure import SecureParty
from vertimrf.product import dealer
from vertimrf.protocol import ProtocolConfig, costs, from_preset, load_config
from vertimrf.protocol import plan as plan_module
from vertimrf.protocol.methods import secure_plan
from vertimrf.protocol.plan import run_plan
from vertimrf.protocol.schedule import Message, schedule
from vertimrf.protocol.secure import wire
from vertimrf.protocol.secure.plan import MEASURE
from vertimrf.server.secure import SecureServer

SMALL = [("A", ["0", "2", "5"]), ("B", ["1", "3", "4"])]
NONCE = "ab" * 16


def _small(epsilon: float, **fields) -> ProtocolConfig:
    """Adult's first 6 columns over two parties, padded to 1024 rows."""
    fields.setdefault("max_rows", 1024)
    return from_preset(
        "default", record_sets="equal",
        epsilon=epsilon, delta=1e-6, spec=small_adult(10, 6)[1], parties=SMALL,
        run_nonce=NONCE, **fields,
    )  # fmt: skip


def _adult(epsilon: float, spec: DomainSpec | None = None, **fields) -> ProtocolConfig:
    """Bundled Adult (or ``spec``: Adult plus columns) over two parties, max_rows 65,536."""
    spec = spec or vertimrf.load_dataset("adult")[1]
    names = list(spec.names)
    return from_preset(
        "default", record_sets="equal",
        epsilon=epsilon, delta=1e-6, spec=spec, max_rows=65536, run_nonce=NONCE,
        parties=[("A", names[:7] + names[15:]), ("B", names[7:15])], **fields,
    )  # fmt: skip


def _wide_adult() -> DomainSpec:
    """Adult plus a 65,536-value column (owned by party A)."""
    spec = vertimrf.load_dataset("adult")[1]
    return DomainSpec.from_dict({**{c.name: c.size for c in spec.columns}, "big": 65536})


def _one_line(message: str) -> str:
    assert "\n" not in message.strip()
    return message


REFUSED = {
    # Each of these was accepted before and failed in the run: at the parties' release (KLS
    # needs noise components s >= 1/2, so the first release could not spend its share), or
    # in the config file (non-standard JSON).
    "epsilon 1e4": (lambda: _small(1e4), r"epsilon 10000 cannot run: .*use epsilon at most 1390"),
    "epsilon 1e6": (lambda: _small(1e6), r"below the 1/2 .* use epsilon at most 1390"),
    "epsilon 1e6 paper": (lambda: _small(1e6, secure_pipeline="paper"), r"at most \d"),
    "epsilon inf": (lambda: _small(math.inf), r"need a finite epsilon > 0"),
    "share nan": (
        lambda: _small(1.0, secure_pipeline="paper").with_changes(
            shares={**_small(1.0, secure_pipeline="paper").options.shares, "binning": math.nan}
        ),
        r"shares must be >= 0",
    ),
    "max_memory_gb inf": (lambda: _small(1.0, max_memory_gb=math.inf), r"max_memory_gb must"),
    "65,536 values": (
        lambda: _adult(1.6, _wide_adult(), max_memory_gb=1),
        r"(party \w|the server) would need about [\d.]+ GB of memory .* more than "
        r"max_memory_gb = 1 \(`vertimrf config --memory`\): "
        r"attribute 'big' has 65,536 values .* bin it to at most [\d,]+ values",
    ),
}


@pytest.mark.parametrize("case", REFUSED)
def test_a_config_that_cannot_run_is_refused_with_one_line(case):
    make, pattern = REFUSED[case]
    with pytest.raises(ConfigError, match=pattern) as err:
        make()
    _one_line(str(err.value))


@pytest.mark.parametrize(
    ("epsilon", "extra", "pattern"),
    [
        ("1e4", [], r"use epsilon at most 1390"),
        ("1e6", [], r"use epsilon at most 1390"),
        ("inf", [], r"need a finite epsilon"),
        (
            "1.6",
            ["--max-rows", "65536", "--spec", "wide.json", "--max-memory-gb", "1"],
            r"bin it to at most",
        ),
    ],
)
def test_the_config_command_refuses_with_one_line_and_no_file(
    tmp_path, capsys, epsilon, extra, pattern
):
    small_adult(10, 6)[1].to_json(tmp_path / "small.json")
    _wide_adult().to_json(tmp_path / "wide.json")
    wide = "--spec" in extra
    parties = (
        ["--party", f"A={','.join(map(str, range(7)))},big", "--party",
         f"B={','.join(map(str, range(7, 15)))}"]
        if wide
        else [f"--party={n}={','.join(c)}" for n, c in SMALL]
    )  # fmt: skip
    spec = [] if wide else ["--spec", str(tmp_path / "small.json"), "--max-rows", "1024"]
    extra = [str(tmp_path / x) if x.endswith(".json") else x for x in extra]
    out = tmp_path / "config.json"
    code = main(
        ["config", *spec, *extra, *parties, "--epsilon", epsilon, "--delta", "1e-6",
         "--method", "secure", "--record-sets", "equal", "--out", str(out)]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code != 0 and not out.exists()
    assert err.startswith("vertimrf: error: ") and err.count("\n") == 1
    assert re.search(pattern, err), err


def test_a_config_made_without_a_factory_is_refused_by_every_role(tmp_path):
    """The config core does not check the plan (with_changes, from_dict); the roles, the
    in-process run and load_config do, before anything runs."""
    cfg = _small(1.0).with_changes(epsilon=1e4)  # accepted by the core: no plan check
    assert ProtocolConfig.from_dict(cfg.to_dict()) == cfg
    refused = r"epsilon 10000 cannot run: .*use epsilon at most 1390"
    with pytest.raises(ConfigError, match=refused):
        vertimrf.Server(cfg)
    with pytest.raises(ConfigError, match=refused):
        vertimrf.Party("A", small_adult(10, 6)[0], cfg, SECRET)
    with pytest.raises(ConfigError, match=refused):
        vertimrf.simulate(small_adult(10, 6)[0], config=cfg, seed=0)
    cfg.save(tmp_path / "c.json")
    with pytest.raises(ConfigError, match=refused):
        load_config(tmp_path / "c.json")


def test_the_largest_accepted_epsilon_runs_and_the_next_is_refused():
    """The refusal's boundary (1390 on this table: the first release's noise components at
    1/2 spend its share) is a config that runs through simulate; one step of its last digit
    above is refused. The run spends its budget and never more."""
    df, _ = small_adult(1000, 6)
    cfg = _small(1390.0)
    synth, report = vertimrf.simulate(df, config=cfg, seed=0)
    spent, rho = report.ledger.total_rho, report.ledger.budget_rho
    assert len(synth) > 0 and spent <= rho * (1 + 1e-15)
    with pytest.raises(ConfigError, match="at most 1390"):
        _small(1400.0)


def test_every_re_measurement_spends_its_share_and_never_more():
    """Brute force over requests on Adult at epsilon 50: for k = 1..60, the k cross marginals
    with the most cells (where the KLS tau term is largest), alone and with k within ones:
    the release's ledger entries at its sigma cost its share to 1e-12 relative (the
    bisection stops at adjacent floats) and never more. A noise floor did this before by
    spending less: 8 cross marginals on NLTCS at epsilon 60 spent 5% of the share."""
    plan = secure_plan(_adult(50.0))
    blocks = sorted(
        (g + h for g in plan.groups[0] for h in plan.groups[1]), key=plan.cells, reverse=True
    )
    within = [g + h for i, g in enumerate(plan.groups[0]) for h in plan.groups[0][i + 1 :]]
    for k in range(1, 61):
        for request in (blocks[:k], blocks[:k] + within[:k]):
            spent = math.fsum(r.rho for r in plan.releases(MEASURE, request))
            assert spent <= plan.rho_measure, k
            assert spent == pytest.approx(plan.rho_measure, rel=1e-12, abs=0.0), k
    # Within one party the charge is exactly Gaussian: sigma is sqrt(K / (2 share)).
    low = secure_plan(_adult(1.6))
    assert low.sigma(MEASURE, within[:1]) == math.sqrt(1 / (2 * low.rho_measure))


@pytest.mark.parametrize(
    ("noise", "cross"),
    [("split", "distributed_discrete_gaussian"), ("coins", "coins_and_discrete_gaussian")],
)
def test_the_plan_holds_the_ledger_within_the_budget_as_the_ledger_checks_it(noise, cross):
    plan = run_plan(_adult(50.0, cross_noise=noise))
    assert plan.ledger_total <= plan.budget_rho * (1 + 1e-9)
    kinds = {r.mechanism for r in plan.releases}
    assert kinds == {"discrete_laplace", "discrete_gaussian", cross}
    assert [b.description for b in plan.bounds] == ["re-measurement (any request)"]
    fo = run_plan(_adult(1e6, method="fo"))  # fo's releases are pure: any finite epsilon runs
    assert len(fo.bounds) == 2 and fo.ledger_total <= fo.budget_rho * (1 + 1e-9)


def _secure_roles(cfg: ProtocolConfig) -> tuple[dict, SecureServer, dict, dict]:
    """Keys, the parties (data: the first 900 rows of Adult), the server and the deals."""
    df = vertimrf.load_dataset("adult")[0].iloc[:900].assign(rid=range(900))
    keys = {p.name: KeyPair.generate(p.name) for p in cfg.parties}
    public = {n: k.public() for n, k in keys.items()}
    parties = {
        p.name: SecureParty(
            p.name, df[["rid", *p.columns]], cfg, SECRET, keys[p.name],
            {q: k for q, k in public.items() if q != p.name}, id_column="rid", seed=0,
        )
        for p in cfg.parties
    }  # fmt: skip
    server = SecureServer(cfg, seed=0)
    commitments = {n: p.commitment() for n, p in parties.items()}
    return parties, server, public, server.deal(public, commitments)


def test_the_plans_bytes_are_the_real_sizes(tmp_path):
    """Three parties: each feature blob is exactly the plan's size; each deal holds its Z
    words and is at most the plan's bound (archive headers of a few hundred bytes apart);
    each party's state file is at most the plan's bound and within 1% of it."""
    spec = vertimrf.load_dataset("adult")[1]
    names = list(spec.names)
    cfg = from_preset(
        "default", record_sets="equal",
        epsilon=1.0, delta=1e-6, spec=spec, max_rows=1024, run_nonce=NONCE,
        parties=[("A", names[:5]), ("B", names[5:10]), ("C", names[10:])],
    )  # fmt: skip
    plan, layout = run_plan(cfg), secure_plan(cfg)
    parties, _, _, deals = _secure_roles(cfg)
    blobs = {n: p.features(deals[n]) for n, p in parties.items()}
    for p, name in enumerate(layout.names):
        assert {len(b) for b in blobs[name].values()} == {plan.blob_bytes[name]}
        assert plan.blob_bytes[name] == layout.word_bytes * 1024 * layout.widths[p] + 60
        z = 8 * sum(layout.widths[a] * layout.widths[p] for a, q in layout.pairs() if q == p)
        assert z < len(deals[name]) <= plan.deal_bytes[name] <= len(deals[name]) + 2048
    for name, party in parties.items():
        party.release({q: blobs[q][name] for q in parties if q != name})
        party.save_state(tmp_path / f"{name}.state")
        size = (tmp_path / f"{name}.state").stat().st_size
        # ring words (below 2^32) in 8-byte cells deflate a little: within 10% of the bound
        assert 0.9 * plan.role(name).keeps <= size <= plan.role(name).keeps


def test_the_memory_model_bounds_the_large_arrays():
    """tracemalloc counts numpy's and Python's allocations: the peak of `features` (each
    peer's blob read, and dropped, in turn) and of the server's `deal` stays below the
    model's estimate without its idle-process base, and above half of it.
    (Measured with GNU time on the command-line roles, Adult at max_rows 65,536, two
    parties: features 846 / 869 MB, release 857 / 854 MB, measure 213 / 215 MB; server deal
    320 MB, select 204 MB, synthesize 286 MB; the model said 869 / 897, 955 / 956, 283 /
    285; 351, 277 and 372 MB.)"""
    cfg = _adult(1.0).with_changes(max_rows=8192)
    roles = {r.role: r.steps for r in run_plan(cfg).roles}
    base = costs.BASE_BYTES
    tracemalloc.start()
    try:
        parties, server, public, _ = _secure_roles(cfg)
        tracemalloc.reset_peak()
        deals = server.deal(public, {n: p.commitment() for n, p in parties.items()})
        assert tracemalloc.get_traced_memory()[1] <= roles["server"]["deal"] - base
        for name, party in parties.items():
            tracemalloc.reset_peak()
            before = tracemalloc.get_traced_memory()[0]
            blobs = party.features(deals[name])
            sizes = [len(blobs[q]) for q in blobs]  # each sealed when read, one at a time
            peak = tracemalloc.get_traced_memory()[1] - before
            assert sizes == [run_plan(cfg).blob_bytes[name]] * len(sizes)
            assert 0.5 * (roles[name]["features"] - base) <= peak, name  # not loose either
            assert peak <= roles[name]["features"] - base, name
            del blobs
    finally:
        tracemalloc.stop()


def test_the_models_block_sizes_are_the_codes():
    from vertimrf.mrf.sampling import SAMPLE_CHUNK

    assert costs.OUTPUT_CHUNK_ROWS == SAMPLE_CHUNK
    assert costs.ROW_BLOCK_WORDS == wire.ROW_BLOCK_WORDS
    assert costs.MASK_BLOCK_WORDS == dealer.DEAL_BLOCK_WORDS


def test_binning_the_wide_attribute_as_the_message_says_is_accepted():
    with pytest.raises(ConfigError) as err:
        _adult(1.6, _wide_adult(), max_memory_gb=1)
    most = int(re.search(r"at most ([\d,]+) values", str(err.value)).group(1).replace(",", ""))
    spec = _wide_adult()
    binned = DomainSpec.from_dict({**{c.name: c.size for c in spec.columns}, "big": most})
    peak = max(r.peak for r in run_plan(_adult(1.6, binned, max_memory_gb=1)).roles)
    assert peak <= 1e9
    # Or keep the column and raise the limit: accepted, and the plan says what it needs.
    plan = run_plan(_adult(1.6, _wide_adult(), max_memory_gb=1e4))
    assert max(r.peak for r in plan.roles) > 1e9


def test_max_memory_gb_keeps_old_configs_hashes_and_round_trips(tmp_path):
    cfg = _small(1.0)
    assert "max_memory_gb" not in cfg.to_dict()  # a config without it hashes as before
    raised = cfg.with_changes(max_memory_gb=32.0)
    raised.save(tmp_path / "c.json")
    loaded = load_config(tmp_path / "c.json")
    assert loaded.max_memory_gb == 32.0 and loaded.config_hash() == raised.config_hash()
    assert loaded.config_hash() != cfg.config_hash()


def _config_command(tmp_path, *extra: str):
    """`vertimrf config` of the small table's secure run (``extra``: more options): its
    exit code and the config file."""
    small_adult(10, 6)[1].to_json(tmp_path / "small.json")
    parties = [f"--party={n}={','.join(c)}" for n, c in SMALL]
    out = tmp_path / "config.json"
    code = main(
        ["config", "--spec", str(tmp_path / "small.json"), *parties, "--epsilon", "1",
         "--delta", "1e-6", "--method", "secure", "--record-sets", "equal", "--max-rows", "1024",
         *extra, "--out", str(out)]
    )  # fmt: skip
    return code, out


def test_the_config_command_prints_the_cost(tmp_path, capsys):
    code, out = _config_command(tmp_path)
    lines = capsys.readouterr().out.splitlines()
    assert code == 0 and out.exists()
    plan = run_plan(load_config(out))
    blob = plan_module.size(plan.blob_bytes["A"])
    assert lines[1].startswith("privacy: ") and "of the budget rho" in lines[1]
    assert lines[2].startswith("ring: Z_2^16 (masked values in 2-byte words")
    assert lines[3].startswith("cross noise: split, three discrete Gaussians of sigma^2 / 2")
    assert lines[3].endswith("every viewer faces sigma^2, a cross count carries 1.5 sigma^2")
    assert lines[4].startswith("cross noise auto: split; coins when every party's coin bytes")
    del lines[3:5]
    assert lines[3].startswith("budget split: count 0.1%, first release ")
    # The config states the memory each role may use: by default this machine's.
    assert plan.max_memory == int(machine_memory_gb() * 1e9) > 0
    assert lines[4] == (
        f"memory: each role may use {plan_module.size(plan.max_memory)} (max_memory_gb); the "
        "server's model holds at most 4,000,000 cells (256 MB to fit)"
    )
    group = plan_module.size(plan.group_blob_bytes["A"])
    assert lines[5].startswith(
        f"party A: sends {blob} to each peer, then at most {group} of groups, receives a "
    )
    assert re.search(
        r"needs about [\d.]+ MB of memory \((features|release|groups|measure)\)", lines[5]
    )
    assert lines[7].startswith("server: sends ") and len(lines) == 8


def test_a_workloads_plan_counts_only_its_first_release(tmp_path):
    """With a workload the plan charges, costs and sizes only the workload's first release
    (its pairs, then 1-ways): each party's sends fall by 8 bytes per cell it no longer
    releases (counted on the real releases), the server's state holds the real first
    tables' cells, and its select step 32 bytes less per cell."""
    spec = vertimrf.load_dataset("adult")[1]
    names = list(spec.names)
    workload = [[names[0], names[1], names[6]], [names[2], names[12]]]

    def config(**fields):
        return from_preset(
            "default", record_sets="equal",
            epsilon=1.0, delta=1e-6, spec=spec, max_rows=1024, run_nonce=NONCE,
            parties=[("A", names[:5]), ("B", names[5:10]), ("C", names[10:])], **fields,
        )  # fmt: skip

    def released(cfg):
        """Each party's released cells (within and cross) and the first tables' cells."""
        parties, _, _, deals = _secure_roles(cfg)
        blobs = {n: p.features(deals[n]) for n, p in parties.items()}
        out = {}
        for name, party in parties.items():
            r = party.release({q: blobs[q][name] for q in parties if q != name})
            out[name] = (
                sum(v.size for v in r.within.values()),
                sum(v.size for v in r.cross.values()),
            )
        tables = sum(w for w, _ in out.values()) + sum(c for _, c in out.values()) // 2
        return {n: w + c for n, (w, c) in out.items()}, tables

    default, given = config(), config(secure_workload=workload)
    layout = secure_plan(given)
    first = layout.first_release()
    assert first[:4] == [(0, 1), (0, 6), (1, 6), (2, 12)] and len(first) == 4 + 10
    assert first[4:] == [(a,) for a in range(len(names)) if a not in {0, 1, 2, 6, 12}]
    (cells_d, tables_d), (cells_w, tables_w) = released(default), released(given)
    plan_d, plan_w = run_plan(default), run_plan(given)
    for name in cells_d:
        assert cells_w[name] < cells_d[name]
        drop = plan_d.role(name).sends - plan_w.role(name).sends
        assert drop == 8 * (cells_d[name] - cells_w[name])
    assert tables_w == sum(layout.cells(m) for m in first)
    keeps = costs.state_bytes(tables_w) + 64 * len(first)
    assert plan_w.role("server").keeps == keeps
    select = plan_d.role("server").steps["select"] - plan_w.role("server").steps["select"]
    assert select == 32 * (tables_d - tables_w)
    charged = [r for r in plan_w.releases if r.description.startswith("select:")]
    assert sum(r.count for r in charged) == len(first)
    assert f"{len(plan_w.releases)} releases fixed by the config" in plan_w.describe()
    assert plan_w.ledger_total == pytest.approx(plan_w.budget_rho, rel=1e-9)


def test_the_config_command_prints_the_rule(tmp_path, capsys):
    """cross_noise "auto" (test_noise_rule.py): the rule's line, as the plan states it."""
    code, out = _config_command(tmp_path)
    text = capsys.readouterr().out
    assert code == 0 and load_config(out).cross_noise == "auto"
    line = secure_plan(load_config(out)).cross_rule
    assert line.startswith("cross noise auto: split;") and line in text
    assert line in run_plan(load_config(out)).describe()


def test_the_config_command_takes_coins_and_prints_them_per_release_and_pair(tmp_path, capsys):
    """`vertimrf config --cross-noise coins --coin-weight 0.5`: the file holds both, and
    the plan prints what a count carries, each release's coins a cell and the bytes each
    way per pair (the first release's exactly as the schedule limits its message)."""
    code, out = _config_command(tmp_path, "--cross-noise", "coins", "--coin-weight", "0.5")
    text = capsys.readouterr().out
    cfg = load_config(out)
    assert code == 0 and (cfg.cross_noise, cfg.coin_weight) == ("coins", 0.5)
    assert "coins that no viewer knows carry 0.5 of sigma^2" in text
    assert "a cross count carries 1.25 sigma^2" in text
    plan = secure_plan(cfg)
    sigma = plan.sigma("select", plan.first_release())
    assert f"coins, first release: {plan.cross_noise.coins(sigma):,} a cell" in text
    limit = schedule(cfg).limit(Message("A", "B", "features-coins"))
    assert limit is not None and limit.exact
    assert f"A+B {plan.coin_shapes('select', plan.first_release())[0, 1][0]:,} cells, " in text
    assert plan_module.size(limit.limit) in text and "coins, re-measurement: " in text
