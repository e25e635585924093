"""What a role says while it waits: :class:`WaitNotices` calls ``say`` with a line that names
what is awaited and for how long, :data:`FIRST_NOTICE` seconds into a wait and every
:data:`NOTICE_EVERY` seconds after, so that a waiting role is never silent for long."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

FIRST_NOTICE = 5.0
NOTICE_EVERY = 10.0


class WaitNotices:
    """Notices of one role's waits, each line from ``describe(seconds waited)``, said by
    ``say`` from a helper thread (so a blocked request does not silence it)."""

    def __init__(
        self,
        say: Callable[[str], None],
        *,
        first: float = FIRST_NOTICE,
        every: float = NOTICE_EVERY,
    ) -> None:
        self.say, self.first, self.every = say, first, every
        self._active = False

    @contextlib.contextmanager
    def waiting(
        self, describe: Callable[[float], str], first: float | None = None
    ) -> Iterator[None]:
        """Notices while the block runs, the first after ``first`` seconds (default: the
        notices'); a wait inside a wait adds none."""
        if self._active:
            yield
            return
        done, start = threading.Event(), time.monotonic()

        def tick() -> None:
            pause = self.first if first is None else first
            while not done.wait(pause):
                self.say(describe(time.monotonic() - start))
                pause = self.every

        self._active = True
        thread = threading.Thread(target=tick, name="vertimrf-wait-notices", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()  # a notice being said ends before the wait does, never after
            self._active = False
