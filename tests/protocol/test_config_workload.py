"""A config's workload (method secure): checked against the spec before anything runs,
stored by column names, in the hash only when given (a default config keeps its bytes),
and written by `vertimrf config --workload`."""

import json

import pytest

from tests.protocol.test_config_options import PARTIES, SPEC, _cfg
from vertimrf.cli import main
from vertimrf.errors import ConfigError
from vertimrf.protocol import load_config
from vertimrf.protocol.options import SecureOptions


def test_a_default_config_has_no_workload_in_its_file_or_hash():
    cfg = _cfg()
    assert cfg.options.workload is None and "workload" not in cfg.options.to_dict()
    given = _cfg(secure_workload=None, run_nonce=cfg.run_nonce)
    assert given.to_dict() == cfg.to_dict() and given.config_hash() == cfg.config_hash()


def test_a_workload_is_kept_by_name_with_its_weights_and_survives_a_file(tmp_path):
    cfg = _cfg(secure_workload=[["a", "b"], [["b", "c"], 2]])
    assert cfg.options.workload == ((("a", "b"), 1.0), (("b", "c"), 2.0))
    assert cfg.options.to_dict()["workload"] == [(("a", "b"), 1.0), (("b", "c"), 2.0)]
    cfg.save(tmp_path / "c.json")
    again = load_config(tmp_path / "c.json")
    assert again.options.workload == cfg.options.workload
    assert again.config_hash() == cfg.config_hash()
    assert json.loads((tmp_path / "c.json").read_text())["options"]["workload"] == [
        [["a", "b"], 1.0],
        [["b", "c"], 2.0],
    ]


@pytest.mark.parametrize(
    "workload, message",
    [
        ([["a", "zz"]], "'zz'"),
        ([[0, 1]], "by name"),
        ([[["a"], -1]], "positive"),
        ([], "empty"),
        ("a,b", "a list of marginals"),
        ([["a", "a"]], "distinct"),
    ],
)
def test_a_bad_workload_is_one_line_before_any_run(workload, message):
    with pytest.raises(ConfigError, match=message) as caught:
        _cfg(secure_workload=workload)
    assert "\n" not in str(caught.value)


def test_only_the_select_pipeline_reads_a_workload():
    with pytest.raises(ConfigError, match="secure_workload"):
        _cfg(method="fo", secure_workload=[["a", "b"]])
    assert SecureOptions(workload=(("a", "b"),)).workload == ((("a", "b"), 1.0),)


def test_the_config_command_reads_a_workload_file(tmp_path, capsys):
    SPEC.to_json(tmp_path / "spec.json")
    (tmp_path / "w.json").write_text('[["a", "c"], [["b", "c"], 3]]')
    base = ["config", "--spec", str(tmp_path / "spec.json"), "--epsilon", "1", "--delta",
            "1e-6", "--max-rows", "1000"]  # fmt: skip
    parties = [x for name, cols in PARTIES for x in ("--party", f"{name}={','.join(cols)}")]
    out = tmp_path / "c.json"
    assert main([*base, *parties, "--workload", str(tmp_path / "w.json"), "--out", str(out)]) == 0
    assert load_config(out).options.workload == ((("a", "c"), 1.0), (("b", "c"), 3.0))
    capsys.readouterr()
    (tmp_path / "bad.json").write_text("[[")
    bad = tmp_path / "c2.json"
    assert main([*base, *parties, "--workload", str(tmp_path / "bad.json"), "--out", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not JSON" in err[0] and not bad.exists()
    (tmp_path / "cols.json").write_text('[["a", "zz"]]')
    assert (
        main([*base, *parties, "--workload", str(tmp_path / "cols.json"), "--out", str(bad)]) == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'zz'" in err[0] and not bad.exists()
    fo = [*base, *parties, "--method", "fo", "--workload", str(tmp_path / "w.json")]
    assert main([*fo, "--out", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["vertimrf: error: --workload is not an option of method 'fo'."]
    assert not bad.exists()


def test_the_plan_says_what_a_workload_changes():
    from vertimrf.protocol.plan import run_plan

    lines = run_plan(_cfg(secure_workload=[["a", "b"]])).describe().splitlines()
    assert (
        "workload: the first release is the 1 pair the workload's marginals hold and the 1-way "
        "marginals of the 1 other column (not every pair); the selection favours the "
        "workload's pairs"
    ) in lines
    assert not any(line.startswith("workload") for line in run_plan(_cfg()).describe().splitlines())
