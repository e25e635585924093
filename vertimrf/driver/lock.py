"""One server per state folder: :func:`state_lock` holds ``server.lock`` while
the server runs; design notes in docs/design/service.md."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from vertimrf.errors import ConfigError

LOCK_FILE = "server.lock"


@contextlib.contextmanager
def state_lock(folder: str | os.PathLike, say: Callable[[str], None]) -> Iterator[None]:
    """Hold ``folder``'s lock; ConfigError naming the holder's PID if another process holds
    it. A stale lock (its holder dead) is taken over: ``say`` tells."""
    path = Path(folder) / LOCK_FILE
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "unknown"
            raise ConfigError(
                f"{folder} is in use by another server (PID {holder}, see {path}): stop it, "
                "or give another --state-dir."
            ) from None
        fh.seek(0)
        stale = fh.read().strip()
        if stale:  # its holder died without emptying it (the kernel freed its flock)
            say(f"took over the stale lock of PID {stale}, which no longer runs ({path})")
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        try:
            yield
        finally:
            fh.seek(0)
            fh.truncate()
            fh.flush()
