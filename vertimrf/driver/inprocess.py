"""Every role of a run in one process: each step runs as soon as its inputs have been sent."""

from __future__ import annotations

from collections.abc import Sequence

from vertimrf.driver.role import RoleDriver
from vertimrf.driver.transport import MissingMessageError
from vertimrf.errors import MessageError
from vertimrf.logs import progress_bar


def run_in_process(roles: Sequence[RoleDriver], *, progress: bool = False) -> dict[str, float]:
    """Run the roles' steps in turns until every role is done; return each phase's seconds
    (a step's, summed over the roles, or the sub-phases a step timed itself). ``progress``
    shows a bar over the steps. MessageError if no role can move (a missing message)."""
    total = sum(len(role.steps()) for role in roles)
    bar = progress_bar(total=total, desc="vertimrf fit", progress=progress)
    try:
        while True:
            moved, waiting = False, []
            for role in roles:
                step = role.next_step()
                if step is None:
                    continue
                try:
                    inputs = role.gather(step)
                except MissingMessageError as exc:
                    waiting.append(exc)
                    continue
                role.execute(step, inputs)
                bar.set_postfix_str(step.name, refresh=False)
                bar.update()
                moved = True
            if all(role.next_step() is None for role in roles):
                break
            if not moved:
                raise MessageError(f"the run cannot go on: {waiting[0]}")
    finally:
        bar.close()
    seconds: dict[str, float] = {}
    for role in roles:
        for name, s in role.seconds.items():
            if name not in role.timed_inside:
                seconds[name] = seconds.get(name, 0.0) + s
        seconds.update(role.phase_seconds)
    return seconds
