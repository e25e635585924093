"""A kept message file is sent to a folder outbox as a hard link, not a copy, when the two
folders share a file system; elsewhere (no link possible) it is copied. Either way the
receiver reads the same bytes, and a second send of them changes nothing."""

from __future__ import annotations

import errno
import os

from vertimrf.driver.transport import DirectoryTransport, Stored, file_sha256
from vertimrf.protocol.schedule import Message

DEAL = Message("server", "A", "deal-slots")


def _stored(tmp_path) -> Stored:
    kept = tmp_path / "state" / "kept"
    kept.parent.mkdir()
    kept.write_bytes(os.urandom(1 << 16))
    return Stored(kept, file_sha256(kept), kept.stat().st_size)


def test_a_kept_file_is_linked_into_the_outbox_on_one_file_system(tmp_path):
    data = _stored(tmp_path)
    transport = DirectoryTransport(tmp_path / "in", tmp_path / "out")
    transport.send(DEAL, data)
    sent = tmp_path / "out" / "A" / DEAL.file_name
    assert os.path.samefile(sent, data.path)  # one inode: nothing copied
    assert sent.read_bytes() == data.path.read_bytes()
    transport.send(DEAL, data)  # resent: the same bytes are there already
    assert sorted(p.name for p in sent.parent.iterdir()) == [DEAL.file_name]


def test_where_no_link_can_be_made_the_kept_file_is_copied(tmp_path, monkeypatch):
    data = _stored(tmp_path)

    def cross_device(source, target):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", cross_device)
    DirectoryTransport(tmp_path / "in", tmp_path / "out").send(DEAL, data)
    sent = tmp_path / "out" / "A" / DEAL.file_name
    assert not os.path.samefile(sent, data.path)
    assert sent.read_bytes() == data.path.read_bytes()
    assert sorted(p.name for p in sent.parent.iterdir()) == [DEAL.file_name]  # no temporary
