"""MST and AIM through OpenDP's ``opendp.extras.mbi``, fitted by Private-PGM and
synthesized; design notes in docs/design/report.md."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from vertimrf.mrf import MarkovRandomField

MECHANISMS = ("mst", "aim")
SLACK = 1e-9  # the relative amount each of MST's budget splits leaves unspent
AIM_ONEWAY_SHARE = 0.9 / 16  # AIM's one-way marginals: d rounds' measurements of T = 16 d
OUTSIDE = "marginals outside its model by vertimrf's junction tree"
ROWS = "rows by vertimrf's junction-tree sampler"
CONFIGURATIONS = {
    "mst": f"OpenDP's contingency table at its defaults; {ROWS}",
    "aim": (
        f"AIM's own: one-ways at {AIM_ONEWAY_SHARE} of rho, then its rounds, exact domain; "
        f"{OUTSIDE}; {ROWS}"
    ),
}
"""How each method is run; part of a stored run's key (:mod:`vertimrf.report.run_store`)."""


def column(j: int) -> str:
    """Column j's name in the OpenDP frame."""
    return f"c{j:04d}"


def synthesize(
    method: str, codes: np.ndarray, sizes: list[int], rho: float, rng: np.random.Generator
) -> np.ndarray:
    """``method``'s synthetic codes (as many rows as ``codes``) at zCDP ``rho``; ``rng``
    draws the rows (:func:`rows`)."""
    if method not in MECHANISMS:
        raise ValueError(f"method must be one of {MECHANISMS}")
    names = [column(j) for j in range(len(sizes))]
    fit = aim_table if method == "aim" else mst_table
    return rows(fit(codes, names, sizes, rho), sizes, len(codes), rng)


def mst_table(codes: np.ndarray, names: list[str], sizes: list[int], rho: float) -> Any:
    """MST's release on ``codes`` at zCDP ``rho``: OpenDP's ContingencyTable at its
    defaults (a null category in every column), with :func:`_leave_slack`."""
    import opendp.prelude as dp
    import polars as pl

    dp.enable_features("contrib")  # this process's own OpenDP state
    frame = pl.LazyFrame({c: codes[:, j].astype(np.int64) for j, c in enumerate(names)})
    keys = {c: list(range(s)) for c, s in zip(names, sizes, strict=True)}
    _leave_slack()
    context = dp.Context.compositor(
        data=frame,
        privacy_unit=dp.unit_of(contributions=1),
        privacy_loss=dp.loss_of(rho=rho),
        split_evenly_over=1,
    )
    query = context.query().select(*names)
    return query.contingency_table(keys=keys, algorithm=dp.mbi.MST()).release()


def aim_measurement(names: list[str], sizes: list[int], rho: float) -> tuple[Any, Any]:
    """AIM as its paper configures it, as one OpenDP measurement on a frame of u32 columns
    ``names`` with codes below ``sizes`` (no null category): OpenDP's ``Sequential`` of the
    one-way marginals (``Fixed``, :data:`AIM_ONEWAY_SHARE` of ``rho``) and ``AIM`` on the
    rest, under zCDP with one row per person; and the input distance ``d_in`` to map."""
    import opendp.prelude as dp
    from mbi import Domain

    dp.enable_features("contrib")
    domain = dp.lazyframe_domain(
        [
            dp.series_domain(c, dp.atom_domain(bounds=(0, s - 1), T="u32"))
            for c, s in zip(names, sizes, strict=True)
        ]
    )
    oneway = dp.mbi.Fixed(queries=[dp.mbi.Count(by=(c,)) for c in names])
    algorithm = dp.mbi.Sequential(
        algorithms=[oneway, dp.mbi.AIM()], weights=[AIM_ONEWAY_SHARE, 1 - AIM_ONEWAY_SHARE]
    )
    d_in = [dp.polars.Bound(per_group=1)]
    measurement = algorithm.make_marginals(
        domain,
        dp.frame_distance(dp.symmetric_distance()),
        dp.zero_concentrated_divergence(),
        d_in,
        rho,
        marginals=dp.mbi.Marginals(),
        model=dp.mbi.mirror_descent(Domain(names, sizes), []),
    )
    return measurement, d_in


def aim_table(codes: np.ndarray, names: list[str], sizes: list[int], rho: float) -> Any:
    """AIM's release on ``codes`` (:func:`aim_measurement`) as OpenDP's ContingencyTable."""
    import opendp.prelude as dp
    import polars as pl

    measurement, d_in = aim_measurement(names, sizes, rho)
    _marginals_outside_the_model_by_junction_tree()
    _model_sizes_remembered()
    _aim_scores_built_once()
    if not measurement.map(d_in) <= rho:
        raise ValueError(f"AIM's measurement spends {measurement.map(d_in)} > rho {rho}")
    frame = pl.LazyFrame({c: codes[:, j].astype(np.uint32) for j, c in enumerate(names)})
    marginals, model = measurement(frame)
    keys = {c: pl.Series(c, range(s), dtype=pl.UInt32) for c, s in zip(names, sizes, strict=True)}
    return dp.mbi.ContingencyTable(keys=keys, cuts={}, marginals=marginals, model=model)


def model_of(table: Any) -> MarkovRandomField:
    """The fitted model of OpenDP's ContingencyTable ``table`` as vertimrf's MRF: mbi's
    log-potentials over the table's cells (one code per key of a column, null included), the
    columns in the table's order, scaled to the model's total."""
    names = list(table.keys)
    sizes = [len(table.keys[c]) for c in names]
    return _mrf_of(table.model.potentials, names, sizes, float(table.model.total))


def _mrf_of(potentials: Any, names: list[str], sizes: list[int], total: float) -> MarkovRandomField:
    """mbi's log-potentials ``potentials`` (a CliqueVector) as vertimrf's MRF over columns
    ``names`` of ``sizes`` cells, scaled to ``total``; a column in no clique is uniform."""
    from vertimrf.domain import Domain
    from vertimrf.mrf import MarkovRandomField

    index = {c: j for j, c in enumerate(names)}
    factors = {}
    for clique in potentials.cliques:
        factor = potentials[clique]
        attrs = tuple(index[a] for a in factor.domain.attrs)
        factors[attrs] = np.asarray(factor.values, dtype=np.float64)
    covered = {a for attrs in factors for a in attrs}
    cliques = list(factors) + [(j,) for j in range(len(names)) if j not in covered]
    domain = Domain(tuple(names), tuple(sizes))
    return MarkovRandomField(domain, cliques, factors, total=total)


def _replace(owner: Any, name: str, make: Callable[[Any], Callable[..., Any]]) -> None:
    """Replace the function ``name`` of module or class ``owner``, in this process only, by
    ``make(original)``; a second call for the same function leaves the first replacement."""
    original = getattr(owner, name)
    if getattr(original, "replaced_by_vertimrf", False):
        return
    replacement = make(original)
    replacement.replaced_by_vertimrf = True  # type: ignore[attr-defined]
    setattr(owner, name, replacement)


def _marginals_outside_the_model_by_junction_tree() -> None:
    """Make mbi's ``MarkovRandomField.project`` compute a marginal that no clique of the model
    holds by vertimrf's exact junction-tree inference instead of mbi's variable elimination,
    as a float64 numpy array: the same marginal (tested against mbi's, which computes in
    float64 too, to 1e-9 relative), another routine. AIM scores every candidate marginal
    against its model in every round, and mbi's routine traces and compiles JAX code for each
    marginal's shape: profiled on Adult, 99% of a run went there, about 60% of it in JAX
    lowering. A marginal the model holds is still mbi's own."""
    import mbi

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        # the latest potentials, their model and its column index
        last: list[tuple[Any, MarkovRandomField, dict[str, int]]] = []

        def project(self: Any, attrs: str | Sequence[str]) -> Any:
            attrs = (attrs,) if isinstance(attrs, str) else tuple(attrs)
            if self.marginals.supports(attrs):
                return original(self, attrs)
            if not last or last[0][0] is not self.potentials:
                names = list(self.domain.attributes)
                sizes = [int(self.domain.config[c]) for c in names]
                model = _mrf_of(self.potentials, names, sizes, float(self.total))
                last[:] = [(self.potentials, model, {c: j for j, c in enumerate(names)})]
            _, model, index = last[0]
            values = model.marginal([index[a] for a in attrs])
            return mbi.Factor(self.domain.project(attrs), values)

        return project

    _replace(mbi.MarkovRandomField, "project", make)


def _model_sizes_remembered() -> None:
    """Make mbi's ``hypothetical_model_size`` remember its answers. AIM asks it, in every
    round, for the model's cliques plus each candidate (its model-size cap), and it builds a
    junction tree each time (about a quarter of a run once the marginals above are fast). It
    is a deterministic function of the domain and the cliques in their order (mbi's greedy
    elimination order, not its stochastic one), so a remembered answer is the answer: rounds
    that leave the model's cliques as they were ask the same questions again."""
    from mbi import junction_tree

    def make(original: Callable[..., float]) -> Callable[..., float]:
        answers: dict[tuple[Any, ...], float] = {}

        def size(domain: Any, cliques: list[tuple[str, ...]]) -> float:
            shape = (tuple(domain.attributes), tuple(domain.shape))
            key = (*shape, tuple(tuple(c) for c in cliques))
            if key not in answers:
                answers[key] = original(domain, cliques)
            return answers[key]

        return size

    _replace(junction_tree, "hypothetical_model_size", make)


def _aim_scores_built_once() -> None:
    """Make OpenDP's AIM build its score transformation once per selection. Its binary search
    for the selection's noise scale builds the transformation again for every scale it tries,
    from the same candidates, model and domain, casting each candidate's domain through
    OpenDP's library each time (about a fifth of a run on Adult once the two fixes above are
    in). The transformation is immutable, so the one built for the same arguments (the same
    objects) is returned again."""
    from opendp.extras.mbi import _aim

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        last: list[tuple[tuple[Any, ...], Any]] = []

        def scores(*args: Any) -> Any:
            if not (last and _same_objects(args, last[0][0])):
                last[:] = [(args, original(*args))]
            return last[0][1]

        return scores

    _replace(_aim, "_make_aim_scores", make)


def _same_objects(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def rows(table: Any, sizes: list[int], n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` synthetic rows of codes below ``sizes`` from ``table`` (OpenDP's
    ContingencyTable): drawn from :func:`model_of` by vertimrf's junction-tree sampler with
    ``rng``, each cell mapped to its key, and each null (MST's extra category) replaced by a
    code of its column drawn uniformly by ``rng`` (post-processing), so it counts as error."""
    drawn = model_of(table).sample(n, rng)
    keys = [table.keys[c] for c in table.keys]
    filled = [
        _filled(k.gather(drawn[:, j]), s, rng)
        for j, (k, s) in enumerate(zip(keys, sizes, strict=True))
    ]
    return np.stack(filled, axis=1)


def _leave_slack() -> None:
    """Make MST's budget splits (``prior`` in OpenDP's MST module) leave a relative
    :data:`SLACK` unspent instead of one float, in this process."""
    from opendp.extras.mbi import _mst

    _replace(_mst, "prior", lambda _: lambda x: float(x) * (1 - SLACK))


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
