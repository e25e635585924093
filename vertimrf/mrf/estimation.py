"""Mirror descent on clique log-potentials to fit noisy marginal measurements
(Private-PGM style); design notes in docs/design/mrf.md."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from vertimrf.domain import Domain
from vertimrf.errors import ConfigError, DomainError
from vertimrf.kernels import bp
from vertimrf.kernels import loss as loss_kernel
from vertimrf.mrf.cliques import SharedSumOutPlan
from vertimrf.mrf.model import MarkovRandomField, PotentialsLike


@dataclass(frozen=True)
class Measurement:
    """Target counts ``values`` of the marginal over ``attrs``, with weight ``1/sigma``.

    ``values`` is either shaped with axes in the order of ``attrs``, or flat in C order over
    ``attrs`` as given. Internally measurements are stored over the sorted attributes.
    ``bins`` (optional, one entry per attribute of ``attrs``) maps each value of an attribute
    to its bin (``None``: the attribute is not binned); the values are then the counts of
    the bin cells, shaped by the bins (``n_bins = max + 1`` per binned attribute).
    """

    attrs: tuple[int, ...]
    values: np.ndarray
    weight: float = 1.0
    bins: tuple[np.ndarray | None, ...] | None = None

    def __post_init__(self) -> None:
        attrs = tuple(int(a) for a in self.attrs)
        if len(set(attrs)) != len(attrs) or not attrs:
            raise ConfigError(f"Measurement attrs must be distinct and non-empty; got {attrs}.")
        values = np.asarray(self.values, dtype=np.float64)
        if not np.all(np.isfinite(values)):
            raise ConfigError(f"Measurement over {attrs} has NaN or infinite values.")
        weight = float(self.weight)
        if not np.isfinite(weight) or weight <= 0:
            raise ConfigError(f"Measurement weight must be positive and finite; got {weight}.")
        object.__setattr__(self, "attrs", attrs)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "weight", weight)
        object.__setattr__(self, "bins", _check_bins(attrs, self.bins))

    def shape(self, domain: Domain) -> tuple[int, ...]:
        """The shape of the measured table, axes in the order of ``attrs`` (bins where binned)."""
        full = domain.shape(self.attrs)
        if self.bins is None:
            return full
        for a, size, b in zip(self.attrs, full, self.bins, strict=True):
            if b is not None and b.size != size:
                raise DomainError(
                    f"Measurement over {self.attrs}: the bin map of attribute {a} has {b.size} "
                    f"entries; the domain has {size} values."
                )
        return tuple(
            size if b is None else int(b.max()) + 1 for size, b in zip(full, self.bins, strict=True)
        )

    def cells(self, domain: Domain) -> int:
        """The number of measured cells (bin cells where binned)."""
        return int(np.prod(self.shape(domain), dtype=np.int64))

    def sorted_values(self, domain: Domain) -> np.ndarray:
        """Flat target vector in C order over the sorted attributes."""
        shape = self.shape(domain)
        if self.values.size != int(np.prod(shape, dtype=np.int64)) or (
            self.values.ndim > 1 and self.values.shape != shape
        ):
            raise DomainError(
                f"Measurement over {self.attrs} has values of shape {self.values.shape}; the "
                f"domain needs {shape} (or {int(np.prod(shape))} flat values)."
            )
        order = np.argsort(self.attrs)
        return np.transpose(self.values.reshape(shape), order).ravel()

    def bin_index(self, domain: Domain) -> np.ndarray | None:
        """For each cell of the full marginal (C order over the sorted attributes), the flat
        index of its bin cell in :meth:`sorted_values`; None for an unbinned measurement."""
        if self.bins is None:
            return None
        shape = self.shape(domain)
        order = np.argsort(self.attrs)
        index = np.zeros((), dtype=np.int64)
        for axis in order:
            b = self.bins[axis]
            codes = np.arange(domain.size([self.attrs[axis]])) if b is None else b
            index = index[..., None] * shape[axis] + codes
        return index.ravel()


def _check_bins(
    attrs: tuple[int, ...], bins: Sequence[np.ndarray | None] | None
) -> tuple[np.ndarray | None, ...] | None:
    """The bin maps as int64 arrays (one per attribute, every bin used), or None."""
    if bins is None:
        return None
    if len(bins) != len(attrs):
        raise ConfigError(
            f"Measurement over {attrs} has {len(bins)} bin maps; give one per attribute "
            "(None for an attribute that is not binned)."
        )
    out: list[np.ndarray | None] = []
    for a, b in zip(attrs, bins, strict=True):
        if b is None:
            out.append(None)
            continue
        arr = np.asarray(b)
        if arr.ndim != 1 or arr.size == 0 or not np.issubdtype(arr.dtype, np.integer):
            raise ConfigError(f"The bin map of attribute {a} must be a 1-D integer array.")
        arr = arr.astype(np.int64)
        if arr.min() < 0 or np.unique(arr).size != int(arr.max()) + 1:
            raise ConfigError(
                f"The bin map of attribute {a} must use every bin 0..k-1 and no negative bin."
            )
        out.append(arr)
    if all(b is None for b in out):
        raise ConfigError(f"Measurement over {attrs}: bins given but no attribute is binned.")
    return tuple(out)


@dataclass(frozen=True)
class FitProgress:
    """What a progress callback sees after each iteration."""

    iteration: int
    loss: float
    step_size: float


@dataclass
class FitResult:
    """Outcome of a fit: loss after each iteration (index 0 is the initial loss).

    ``stop_reason`` is one of "exact", "tol", "target_loss", "plateau", "stalled" (no step size
    decreased the loss), "callback" or "max_iters"; ``calibrations`` counts BP runs, line
    search included.
    """

    loss_history: np.ndarray
    iterations: int
    converged: bool
    stop_reason: str
    step_size: float
    calibrations: int
    measurements: list[Measurement] = field(repr=False, default_factory=list)

    @property
    def loss(self) -> float:
        """Final loss."""
        return float(self.loss_history[-1])


class _Objective:
    """The measurement marginals of a model as flat projections, and the loss on them.

    Projections are block sums through shared intermediate tables (``SharedSumOutPlan``):
    measurements of one clique mostly fit in a few unions of 1/16 of its cells, so each
    evaluation reads a clique a few times instead of once per measurement.
    Binned measurements have zero weight in the flat loss; their bin sums (``bin_of`` maps
    their cells at positions ``bin_pos`` of the projection to bin cells) are scored apart.
    """

    def __init__(self, model: MarkovRandomField, measurements: Sequence[Measurement]) -> None:
        layout = model.layout
        pairs = []
        for m in measurements:
            home = layout.smallest_containing(m.attrs)
            if home is None:
                raise ConfigError(
                    f"Measurement over {m.attrs} is not inside any clique of the model "
                    f"({layout.cliques}); build the model with a clique covering it, or drop it."
                )
            pairs.append((home, m.attrs))
        self.model = model
        self.proj = SharedSumOutPlan(layout, pairs, share=16)
        domain = model.domain
        sizes = np.diff(self.proj.out_ptr)
        self.y, self.w2 = np.zeros(self.proj.out_size), np.zeros(self.proj.out_size)
        pos, bin_of, yb, w2b = [], [], [], []
        n_bins = 0
        # The loss's curvature in a binned measurement's cells is up to w^2 x the most cells
        # one bin cell sums (1 unbinned): the initial step size's yardstick.
        self.sum_w2 = 0.0
        for m, start, size in zip(measurements, self.proj.out_ptr[:-1], sizes, strict=True):
            values, index = m.sorted_values(domain), m.bin_index(domain)
            if index is None:
                self.y[start : start + size] = values
                self.w2[start : start + size] = m.weight**2
                self.sum_w2 += m.weight**2
                continue
            pos.append(np.arange(start, start + size))
            bin_of.append(index + n_bins)
            n_bins += values.size
            yb.append(values)
            w2b.append(np.full(values.size, m.weight**2))
            self.sum_w2 += m.weight**2 * int(np.bincount(index).max())
        self.bin_pos = np.concatenate(pos) if pos else np.zeros(0, np.int64)
        self.bin_of = np.concatenate(bin_of) if bin_of else np.zeros(0, np.int64)
        self.yb = np.concatenate(yb) if yb else np.zeros(0)
        self.w2b = np.concatenate(w2b) if w2b else np.zeros(0)
        homes = sorted({c for c, _ in pairs})
        self.starts = layout.offsets[homes]
        self.ends = layout.offsets[np.array(homes) + 1]
        self.home = np.repeat([c for c, _ in pairs], sizes)
        self.calibrations = 0

    def evaluate(self, theta: np.ndarray, mu: np.ndarray) -> float:
        """Calibrate on theta, write the measured marginals into mu, return the loss."""
        logz = self.model.calibrate_buffer(theta)
        self.calibrations += 1
        return self.loss_from_probs(logz, mu)

    def loss_from_probs(self, logz: float, mu: np.ndarray) -> float:
        """Measured marginals (into mu) and loss from the model's last calibration.

        The marginals are plain sums of the calibrated probability tables (cells below e^-708
        of their clique's max count as zero), scaled per clique.
        """
        probs, factor = self.model.scaled_probs(logz)
        self.proj.project(probs, mu)
        loss = float(loss_kernel.scaled_loss(mu, factor, self.home, self.y, self.w2))
        if self.yb.size:
            loss += 0.5 * float(loss_kernel.weighted_squares(self.w2b, self._bin_residual(mu)))
        return loss

    def _bin_residual(self, mu: np.ndarray) -> np.ndarray:
        """B mu - y over the bin cells of the binned measurements."""
        return np.bincount(self.bin_of, mu[self.bin_pos], self.yb.size) - self.yb

    def step(self, out: np.ndarray, theta: np.ndarray, alpha: float, grad: np.ndarray) -> None:
        """out = theta - alpha * grad on the measured cliques (the only place grad is non-zero).

        The other cliques of out must already equal theta's: true for two buffers that start as
        copies and only ever receive steps.
        """
        bp.axpy(out, theta, -alpha, grad, self.starts, self.ends)

    def gradient(self, mu: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Clique-space gradient G (into out) and the measurement-space g = w^2 (mu - y)."""
        g = self.w2 * (mu - self.y)
        if self.yb.size:
            g[self.bin_pos] = (self.w2b * self._bin_residual(mu))[self.bin_of]
        self.proj.expand_add(out, g, overwrite=True)
        return g


def theoretic_loss(measurements: Iterable[Measurement], domain: Domain) -> float:
    """Expected loss at the true marginals when each weight is 1/sigma of its Gaussian noise.

    ``1/2 * sum_M |cells of M|`` (bin cells where binned): the reference's convergence
    yardstick (stop once the loss is below a ratio of it).
    """
    return 0.5 * float(sum(m.cells(domain) for m in measurements))


def l2_loss(model: MarkovRandomField, measurements: Sequence[Measurement]) -> float:
    """``1/2 * sum_M || w_M (mu_M - y_M) ||^2`` of the model's current potentials."""
    obj = _Objective(model, measurements)
    return obj.loss_from_probs(model.log_partition, np.empty(obj.proj.out_size))


def _backtrack(
    obj: _Objective,
    theta: np.ndarray,
    trial: np.ndarray,
    grad: np.ndarray,
    g: np.ndarray,
    mu: np.ndarray,
    mu_trial: np.ndarray,
    loss: float,
    alpha: float,
    max_halvings: int,
) -> tuple[float | None, float, bool]:
    """Halve ``alpha`` until the step from theta into trial passes the Armijo test.

    Returns the trial's loss (None if no step passed), the step size, and whether the first
    try passed (then the next iteration starts from a doubled step).
    """
    for k in range(max_halvings + 1):
        obj.step(trial, theta, alpha, grad)
        new = obj.evaluate(trial, mu_trial)
        if new <= loss and loss - new >= 0.5 * alpha * loss_kernel.dot_diff(g, mu, mu_trial):
            return new, alpha, k == 0
        alpha *= 0.5
    return None, alpha, False


def _check_fit_args(
    iters: int, check_every: int, max_halvings: int, measurements: Sequence[Measurement]
) -> None:
    if iters < 0 or check_every < 1 or max_halvings < 0:
        raise ConfigError("iters must be >= 0, check_every >= 1 and max_halvings >= 0.")
    if not measurements:
        raise ConfigError("mirror_descent needs at least one measurement.")


@dataclass
class _StopRule:
    """When to stop after an accepted step; keeps the loss of the last convergence checkpoint."""

    checkpoint: float
    callback: Callable[[FitProgress], bool | None] | None
    target_loss: float | None
    min_iters: int
    check_every: int
    tol: float
    plateau: tuple[float, float] | None = None

    def reason(self, it: int, loss: float, alpha: float) -> str | None:
        """The reason to stop after accepted step ``it`` with ``loss``, or None to go on."""
        if self.callback is not None and self.callback(FitProgress(it, loss, alpha)):
            return "callback"
        if it >= self.min_iters and self.target_loss is not None and loss <= self.target_loss:
            return "target_loss"
        if it % self.check_every == 0:
            fell = self.checkpoint - loss
            if it >= self.min_iters:
                if fell <= self.tol * self.checkpoint:
                    return "tol"
                if self.plateau is not None and loss <= self.plateau[0] and fell < self.plateau[1]:
                    return "plateau"
            self.checkpoint = loss
        return None


def _descend(
    obj: _Objective,
    theta: np.ndarray,
    mu: np.ndarray,
    alpha: float,
    iters: int,
    max_halvings: int,
    rule: _StopRule,
    history: list[float],
) -> tuple[np.ndarray, int, str, float]:
    """Mirror-descent iterations from theta (mu its marginals, history[-1] its loss), appending
    each accepted loss to history; returns (potentials, iterations, stop reason, step size)."""
    trial = theta.copy()
    grad = np.zeros_like(theta)
    mu_trial = np.empty_like(mu)
    loss = history[-1]
    it = 0
    first_try = True
    while it < iters:
        if loss == 0.0:
            return theta, it, "exact", alpha
        g = obj.gradient(mu, grad)
        if first_try:
            alpha *= 2.0
        new, alpha, first_try = _backtrack(
            obj, theta, trial, grad, g, mu, mu_trial, loss, alpha, max_halvings
        )
        if new is None:
            return theta, it, "stalled", alpha
        it += 1
        theta, trial = trial, theta
        mu, mu_trial = mu_trial, mu
        loss = new
        history.append(loss)
        stop = rule.reason(it, loss, alpha)
        if stop is not None:
            return theta, it, stop, alpha
    return theta, it, "max_iters", alpha


def mirror_descent(
    model: MarkovRandomField,
    measurements: Sequence[Measurement],
    *,
    iters: int = 1000,
    warm_start: PotentialsLike | None = None,
    tol: float = 1e-6,
    target_loss: float | None = None,
    min_iters: int = 0,
    check_every: int = 50,
    max_halvings: int = 25,
    step_size: float | None = None,
    callback: Callable[[FitProgress], bool | None] | None = None,
    plateau: tuple[float, float] | None = None,
) -> FitResult:
    """Fit the model's potentials to ``measurements`` in place; returns the loss history.

    Args:
        iters: iteration cap.
        warm_start: starting potentials (else the model's current ones).
        tol: stop when the loss fell by less than ``tol`` (relative) over ``check_every`` steps.
        target_loss: stop once the loss is at most this (e.g. ``1.2 * theoretic_loss(...)``).
        min_iters: no convergence stop before this many iterations.
        max_halvings: step halvings per iteration; if none is accepted the fit stops
            ("stalled") and keeps the last accepted potentials, so the loss never rises.
        step_size: initial step (default ``1 / (total * sum_M w_M^2)``).
        callback: called with a FitProgress after every iteration; returning True stops.
        plateau: (level, drop): stop once the loss is at most ``level`` and fell by less
            than ``drop`` (absolute) over ``check_every`` steps: e.g. the loss's expectation
            at the truth and a fraction of its noise, past which a fit only follows noise.
    """
    _check_fit_args(iters, check_every, max_halvings, measurements)
    if warm_start is not None:
        model.set_potentials(warm_start)
    obj = _Objective(model, measurements)
    theta = model.potentials.values.copy()
    mu = np.empty(obj.proj.out_size)
    loss = obj.evaluate(theta, mu)
    if not np.isfinite(loss):
        raise ConfigError("The initial loss is not finite; check the potentials and targets.")
    alpha = float(step_size) if step_size else 1.0 / (model.total * obj.sum_w2)
    history = [loss]
    rule = _StopRule(loss, callback, target_loss, min_iters, check_every, tol, plateau)
    theta, it, reason, alpha = _descend(obj, theta, mu, alpha, iters, max_halvings, rule, history)
    model.set_potentials(theta)
    converged = reason in ("exact", "target_loss", "tol", "stalled", "plateau")
    return FitResult(
        np.array(history), it, converged, reason, alpha, obj.calibrations, list(measurements)
    )
