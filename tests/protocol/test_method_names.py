"""Each Method names its schedule and its party's and server's strategies by name (the
protocol imports neither side): every name it gives is a class of its layer, and a name
that is none is refused with one line."""

from __future__ import annotations

import pytest

from vertimrf.errors import ConfigError
from vertimrf.party.methods import PartyMethod
from vertimrf.protocol.methods import METHODS, strategy
from vertimrf.protocol.schedule import Schedule
from vertimrf.server.methods import ServerMethod


@pytest.mark.parametrize("method", list(METHODS.values()), ids=lambda m: m.label)
def test_every_name_a_method_gives_is_a_class_of_its_layer(method):
    assert strategy(Schedule, method.label, "method").method == method.label
    assert strategy(ServerMethod, method.server).__name__ == method.server
    if method.party:
        assert strategy(PartyMethod, method.party).__name__ == method.party
    assert method.local_message == bool(method.party)  # a local message has a party strategy


def test_a_name_that_is_no_class_is_refused():
    with pytest.raises(ConfigError, match="no ServerMethod 'Nowhere'"):
        strategy(ServerMethod, "Nowhere")
