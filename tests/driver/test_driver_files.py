"""The step commands' transport: input messages read from the given files, outputs staged
and renamed into place together only on commit, never over a file with other bytes unless
forced; files routed by the sender they name, two of one party refused."""

from __future__ import annotations

import pytest

from vertimrf.driver.files import FileTransport
from vertimrf.errors import ConfigError, MessageError, MissingMessageError
from vertimrf.protocol.schedule import Message

A_TO_B = Message("A", "B", "features")
A_TO_C = Message("A", "C", "features")
DEAL = Message("server", "A", "deal")


def test_outputs_land_together_on_commit_and_none_on_error(tmp_path):
    outputs = {A_TO_B: tmp_path / "b", A_TO_C: tmp_path / "c"}
    with FileTransport({}, outputs) as transport:
        transport.send(A_TO_B, b"to b")
        transport.send(A_TO_C, b"to c")
        assert not (tmp_path / "b").exists()  # staged only
        assert transport.commit() == [tmp_path / "b", tmp_path / "c"]
    assert (tmp_path / "b").read_bytes() == b"to b" and (tmp_path / "c").read_bytes() == b"to c"
    with pytest.raises(RuntimeError), FileTransport({}, {A_TO_B: tmp_path / "d"}) as transport:
        transport.send(A_TO_B, b"half a step")
        raise RuntimeError("the step failed before its commit")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b", "c"]  # no temporary left


def test_other_bytes_are_refused_without_force_and_the_same_bytes_are_not_rewritten(tmp_path):
    (tmp_path / "b").write_bytes(b"earlier")
    with FileTransport({}, {A_TO_B: tmp_path / "b"}) as transport:
        with pytest.raises(MessageError, match="give --force"):
            transport.send(A_TO_B, b"other")
        transport.send(A_TO_B, b"earlier")  # a resent step: the same bytes are fine
        transport.commit()
    assert (tmp_path / "b").read_bytes() == b"earlier"
    with FileTransport({}, {A_TO_B: tmp_path / "b"}, force=True) as transport:
        transport.send(A_TO_B, b"other")
        transport.commit()
    assert (tmp_path / "b").read_bytes() == b"other"
    both = {A_TO_B: tmp_path / "same", A_TO_C: tmp_path / "same"}  # one file for two messages
    with FileTransport({}, both) as transport:
        transport.send(A_TO_B, b"x")
        with pytest.raises(MessageError, match="two messages of this step differ"):
            transport.send(A_TO_C, b"y")


def test_inputs_are_read_from_their_files_bounded_and_named_when_missing(tmp_path):
    (tmp_path / "deal").write_bytes(b"12345")
    transport = FileTransport({DEAL: tmp_path / "deal", A_TO_B: b"given"}, {}, limits=lambda m: 4)
    assert transport.receive(A_TO_B) == b"given"
    with pytest.raises(MessageError, match="5 bytes is more than any deal of this run"):
        transport.receive(DEAL)
    with pytest.raises(MissingMessageError, match="no file for the features from A to C"):
        transport.receive(A_TO_C)
    with pytest.raises(MissingMessageError, match="no such file"):
        FileTransport({DEAL: tmp_path / "none"}, {}).receive(DEAL)
    with pytest.raises(ConfigError, match="no output file for the features from A to B"):
        FileTransport({}, {}).send(A_TO_B, b"")
