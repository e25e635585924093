"""MST and AIM (McKenna et al. 2021, 2022) as OpenDP's ``opendp.extras.mbi`` releases them
(``pip install "vertimrf[baselines]"``): a contingency table over every column, keyed by
its codes, fitted by Private-PGM and synthesized. Both run at OpenDP's defaults (AIM's fits:
mbi's mirror descent, 1000 iterations). Fewer iterations are no shortcut: with 100, AIM's fit
on Adult at epsilon 1.6 stayed far from its own measurements (a 3-way marginal's L1 residual
18,800 where its noise accounts for about 1,100), so AIM judged its rounds insignificant, spent
its budget in 8 of them, and its 3-way TVD was 0.16, twice MST's.

The budget is zCDP rho from (epsilon, delta) by :func:`vertimrf.privacy.zcdp.epsilon_to_rho`,
as for our methods, with add/remove neighbours (one row per person). OpenDP draws its noise
from the operating system's secure source: a run is not seeded and not reproducible.

OpenDP gives every column one more category, null (values outside its keys); its model can put
noise there, so a synthetic row can hold a null. Each null is replaced by a value of its
column drawn uniformly by a generator seeded from the run's seed (post-processing), so it
counts as error, as a wrong value would.

OpenDP 0.16's MST refuses its own inner queries by a rounding error in its budget split
 ("insufficient budget for query: x > x - 1e-18", opendp/opendp#2789): MST gives each of
its k selection rounds ``prior(b / k)`` of a budget b (the next float below b / k), and k such
floats can sum past b. With 16 columns (k = 15) it failed at every epsilon tried. So
:func:`_leave_slack` makes ``prior`` in OpenDP's MST module return its argument lowered by a
relative :data:`SLACK`: each of MST's splits then spends slightly less than it may, never more,
and OpenDP's compositors still check every query against what is left. AIM's splits are by
what its odometer reports spent and do not fail; its ``prior`` is left alone (AIM stops when
``prior`` of what is left is not positive, which a relative slack would never reach).

The synthetic rows are drawn i.i.d. from the fitted model (``synthesize(method="sample")``).
The default, ``"round"``, of mbi 1.1.0 (which OpenDP 0.16 pins) assigns each column's values
within a group of rows sharing its parents' values in the rows' order, so two columns with the
same parents come out sorted together: a correlation that is in no measurement. On Adult at
epsilon 1.6 MST's 3-way TVD was 0.25 with it and 0.080 with ``"sample"``.

Run it as a child process (:mod:`vertimrf.report.baselines`), killed at the cap.
"""

from __future__ import annotations

from typing import Any

import numpy as np

MECHANISMS = ("mst", "aim")
SLACK = 1e-9  # the relative amount each of MST's budget splits leaves unspent


def column(j: int) -> str:
    """Column j's name in the OpenDP frame."""
    return f"c{j:04d}"


def synthesize(
    method: str, codes: np.ndarray, sizes: list[int], rho: float, rng: np.random.Generator
) -> np.ndarray:
    """``method``'s synthetic codes (as many rows as ``codes``) at zCDP ``rho``; ``rng``
    draws the values of its null cells."""
    import opendp.prelude as dp
    import polars as pl

    if method not in MECHANISMS:
        raise ValueError(f"method must be one of {MECHANISMS}")
    names = [column(j) for j in range(len(sizes))]
    frame = pl.LazyFrame({c: codes[:, j].astype(np.int64) for j, c in enumerate(names)})
    keys = {c: list(range(s)) for c, s in zip(names, sizes, strict=True)}
    dp.enable_features("contrib")  # this child process's own OpenDP state
    _leave_slack()
    context = dp.Context.compositor(
        data=frame,
        privacy_unit=dp.unit_of(contributions=1),
        privacy_loss=dp.loss_of(rho=rho),
        split_evenly_over=1,
    )
    algorithm = dp.mbi.MST() if method == "mst" else dp.mbi.AIM()
    query = context.query().select(*names)
    table = query.contingency_table(keys=keys, algorithm=algorithm).release()
    synth = table.synthesize(rows=len(codes), method="sample")
    return np.stack([_filled(synth[c], s, rng) for c, s in zip(names, sizes, strict=True)], axis=1)


def _leave_slack() -> None:
    """Make MST's budget splits (``prior`` in OpenDP's MST module) leave a relative
    :data:`SLACK` unspent instead of one float, in this process."""
    from opendp.extras.mbi import _mst

    def lowered(x: float) -> float:
        return float(x) * (1 - SLACK)

    _mst.prior = lowered


def _filled(values: Any, size: int, rng: np.random.Generator) -> np.ndarray:
    """A synthetic column's codes (a polars Series), each null replaced by a uniform code."""
    nulls = values.is_null().to_numpy()
    out = values.fill_null(0).to_numpy().astype(np.int64)
    out[nulls] = rng.integers(0, size, int(nulls.sum()))
    return out


def main(argv: list[str]) -> None:
    """``python -m vertimrf.report.opendp_mechanisms DIR METHOD RHO SEED``: read
    ``DIR/codes.npy`` and ``DIR/sizes.npy``, write ``DIR/synth.npy``."""
    folder, method, rho, seed = argv
    codes = np.load(f"{folder}/codes.npy", allow_pickle=False)
    sizes = [int(s) for s in np.load(f"{folder}/sizes.npy", allow_pickle=False)]
    synth = synthesize(method, codes, sizes, float(rho), np.random.default_rng(int(seed)))
    np.save(f"{folder}/synth.npy", synth, allow_pickle=False)


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
