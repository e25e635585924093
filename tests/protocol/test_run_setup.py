"""A run's setup is made once: the config checked and its secure plan derived once for
every role of an in-process run (they were derived 22 times: four times in each role's
check, and again by each role and each driver), and a role given a setup checks nothing
again."""

from __future__ import annotations

import numpy as np
import pytest

from tests.secure_runs import SECRET, split
from vertimrf.driver.inprocess import local_run
from vertimrf.errors import ConfigError
from vertimrf.protocol import methods, setup
from vertimrf.protocol.setup import run_setup


def _count(monkeypatch, module, name):
    calls = []
    real = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_a_run_derives_its_plan_once(monkeypatch):
    cfg, spec, frame, parties = split([[3, 2], [4, 2]], 200, 3, rows=256)
    data = {n: frame[c].assign(id=np.arange(200)) for n, c in parties}
    derived = _count(monkeypatch, methods.SecureSelectRules, "secure_plan")
    checked = _count(monkeypatch, setup, "check_plan")  # as the setup calls it
    run = local_run(data, cfg, SECRET, seed=3)
    run.run()
    assert len(run.fitted({}).sample(n=10)) == 10
    assert len(checked) == 1 and len(derived) == 1


def test_a_setup_is_made_from_a_config_only_and_checks_it():
    cfg, *_ = split([[3], [2]], 10, 0)
    made = run_setup(cfg)
    assert run_setup(made) is made and made.plan is not None and made.config is cfg
    with pytest.raises(ConfigError, match="must be a ProtocolConfig"):
        run_setup({"epsilon": 1.0})
