"""The record-set variation (equal or partial) has one home per side: the protocol's
strategies (vertimrf/protocol/record_sets.py), which the config and the plans hold and
which the party's records layout and the server's record sets are chosen by. No other
module tests which record sets a run has."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import vertimrf
from vertimrf.errors import ConfigError
from vertimrf.protocol.record_sets import EqualSets, PartialSets
from vertimrf.protocol.regions import RegionNoise

BRANCHES = re.compile(
    r"\bregions\s+is\s+(?:not\s+)?None"  # the plan's noise tested for None
    r"|\brecord_sets\s*[!=]=|[!=]=\s*self\.config\.record_sets"  # the config's name compared
    r"|[!=]=\s*\"(?:partial|equal)\"|\"(?:partial|equal)\"\s*[!=]="  # either name compared
    r"|\.noise\s+is\s+(?:not\s+)?None"
)


def test_no_module_but_the_strategies_branches_on_the_record_sets():
    root = Path(vertimrf.__file__).parent
    home = root / "protocol" / "record_sets.py"
    found = [
        f"{path.relative_to(root)}:{i}"
        for path in sorted(root.rglob("*.py"))
        if path != home
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if BRANCHES.search(line)
    ]
    assert found == []
    assert not BRANCHES.search("sets.choose(equal, partial)")
    assert BRANCHES.search('if config.record_sets == "partial":')  # the pattern can fail


def test_each_strategy_answers_for_its_record_sets():
    noise = RegionNoise(2, 0.01, 1e-8, 1e-8)
    partial, equal = PartialSets(noise), EqualSets()
    assert partial.choose(lambda: "equal", lambda n: n) is noise
    assert equal.choose(lambda: "equal", lambda n: n) == "equal"
    assert partial.max_tokens(100) == 100 + noise.dummy_rows and equal.max_tokens(100) == 0
    assert [r.count for r in partial.releases()] == [3] and equal.releases() == []
    assert partial.lone_attributes([(0,), (1, 2)]) == [0] and equal.lone_attributes([(0,)]) == []
    with pytest.raises(ConfigError, match="no room for any record"):
        partial.check_rows(noise.reserve)
    with pytest.raises(ConfigError, match="no region counts"):
        equal.region_noise()
    assert PartialSets.smallest_model([2, 3, 4], [[2, 3], [4]]) == 3 * 4 + 3 * 5
    assert EqualSets.smallest_model([2, 3, 4], [[2, 3], [4]]) == 9
