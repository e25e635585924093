"""Wait notices: nothing is said after the wait ends."""

from __future__ import annotations

import threading
import time

from vertimrf.driver.waits import WaitNotices


def test_a_notice_being_said_ends_before_the_wait_does():
    """The wait ends while a notice is being said (``say`` holds for 0.2 s after it starts);
    that notice must be done when the block exits, so an error printed next comes after it.
    Without the join at the wait's end, the notice landed after the error (a flaky CI run)."""
    said, saying = [], threading.Event()

    def say(line: str) -> None:
        saying.set()
        time.sleep(0.2)
        said.append(line)

    notices = WaitNotices(say, first=0.0, every=10.0)
    with notices.waiting(lambda seconds: "waiting"):
        assert saying.wait(5)
    count = len(said)
    time.sleep(0.3)
    assert count == 1 and len(said) == 1
