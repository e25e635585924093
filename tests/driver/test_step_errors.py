"""An exception vertimrf does not raise on purpose, in any step of a role, reaches the user
as one line naming the role and the step (a StepError, which the commands send to the other
roles as they do every error), never as a traceback."""

from __future__ import annotations

import warnings

import pytest

from tests.runs import correlated_table, two_party_config
from vertimrf.domain import SmallTableWarning
from vertimrf.driver import local_run
from vertimrf.errors import StepError
from vertimrf.party.roles import Party


def test_an_unexpected_exception_in_a_step_is_one_line_naming_the_role_and_step(monkeypatch):
    df, spec = correlated_table()
    cfg = two_party_config(spec, method="secure")
    data = {p.name: df[list(p.columns)].assign(id=range(len(df))) for p in cfg.parties}

    def broken(self, *args, **kwargs):
        raise IndexError("index 1048448 is out of bounds for axis 0 with size 1048446")

    monkeypatch.setattr(Party, "features", broken)
    with warnings.catch_warnings(), pytest.raises(StepError) as caught:
        warnings.simplefilter("ignore", SmallTableWarning)
        local_run(data, cfg, bytes(range(32))).run()
    line = str(caught.value)
    assert "\n" not in line
    assert "step features" in line and "IndexError" in line and "1048448" in line
    assert line.split(",")[0] in {p.name for p in cfg.parties}
    assert isinstance(caught.value.__cause__, IndexError)
