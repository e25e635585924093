"""Fixtures of the service tests: a running service of a pinned run."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.https_roles import pinned_files, start_server, stop_server
from tests.runs import correlated_table
from vertimrf.protocol.config import ProtocolConfig


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., tuple[Path, str, ProtocolConfig]]]:
    """``serve(*server_args, **config_fields)`` starts the service of a pinned run of 40
    rows in ``tmp_path``: its folder, URL and config. At the end each service started is
    stopped by SIGTERM and must exit 143 with no traceback."""
    servers = []

    def start(*extra: str, **fields) -> tuple[Path, str, ProtocolConfig]:
        df, spec = correlated_table(40)
        cfg = pinned_files(tmp_path, df, spec, **fields)
        server, url = start_server(tmp_path, *extra)
        servers.append(server)
        return tmp_path, url, cfg

    yield start
    for server in servers:
        err = stop_server(server)
        assert server.returncode == 128 + signal.SIGTERM, err[-3000:]
