"""What the report of every fitted synthesizer gives, whichever synthesizer fitted it."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class FitReport(Protocol):
    """The report of a fit: a :class:`~vertimrf.VerticalModel`'s ``report`` (a
    :class:`~vertimrf.protocol.ProtocolReport`) and a :class:`~vertimrf.PrivMRF`'s (a
    :class:`~vertimrf.synth.privmrf.PrivMRFReport`) both have these; ``str()`` prints either.

    ``epsilon`` and ``delta`` are the budget asked for; ``total_epsilon`` is what the
    releases spent at ``delta`` (a true upper bound), or None when ``dp_guarantee`` is False
    (a seeded run, or the FM method); ``to_dict()`` is JSON-ready and holds these keys and
    ``total_rho`` and ``releases``.
    """

    @property
    def epsilon(self) -> float: ...

    @property
    def delta(self) -> float: ...

    @property
    def seeded(self) -> bool: ...

    @property
    def dp_guarantee(self) -> bool: ...

    @property
    def total_epsilon(self) -> float | None: ...

    def to_dict(self) -> dict[str, Any]: ...
