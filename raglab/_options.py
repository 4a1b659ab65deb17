"""Settings shared by many operations, as one object each: :class:`Resampling`.

Floor 1 (beside ``raglab._validation``): it imports nothing from raglab but that module, so any
table-level function may take the object. The array-level functions of :mod:`raglab.stats` keep
their keyword signatures; the table-level ones unpack the object into them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

__all__ = ["RESAMPLING_SETTINGS", "Resampling"]


@dataclass(frozen=True)
class Resampling:
    """How intervals and tests resample: level, interval method, resamples, seed and permutations.

    Pass it as ``resampling=`` to ``summary``, ``compare``, ``gate``, ``size``, ``agreement`` and
    ``boundary_report`` (on the table or through ``df.rag``); the same settings as keywords
    (``ci=0.9``) win over the object. A method uses the settings it needs and ignores the others
    (``summary`` runs no permutation test). Values are checked where they are used, with the
    messages of :mod:`raglab.stats`.

    Parameters
    ----------
    ci : float
        Interval level, strictly between 0 and 1.
    method : str
        Interval method (``"auto"``: see :func:`raglab.stats.summary` and :func:`raglab.stats.compare`).
    n_resamples : int
        Bootstrap resamples.
    seed : int or None
        Random seed of the bootstrap and of the permutation test (None: not reproducible).
    n_permutations : int
        Sign-flip permutations of the paired test (0: no permutation test).

    Examples
    --------
    >>> fast = Resampling(n_resamples=2_000, seed=7)
    >>> fast.settings(["ci", "n_resamples", "seed"])
    {'ci': 0.95, 'n_resamples': 2000, 'seed': 7}
    >>> Resampling.resolve(fast, {"ci": 0.9}).ci
    0.9
    """

    ci: float = 0.95
    method: str = "auto"
    n_resamples: int = 10_000
    seed: int | None = 0
    n_permutations: int = 10_000

    def settings(self, names: Sequence[str] | None = None) -> dict[str, Any]:
        """The settings as keywords for an array-level function (only ``names``, when given)."""
        values = asdict(self)
        return values if names is None else {name: values[name] for name in names}

    @classmethod
    def resolve(
        cls, resampling: Resampling | Mapping[str, Any] | None, keywords: Mapping[str, Any], *, caller: str = "Resampling"
    ) -> Resampling:
        """``resampling`` (an object, a dict or None for the defaults) with one call's keywords laid over it."""
        if resampling is None:
            base = cls()
        elif isinstance(resampling, Resampling):
            base = resampling
        elif isinstance(resampling, Mapping):
            base = cls.resolve(None, resampling, caller=caller)
        else:
            raise TypeError(f"{caller}: `resampling` must be a raglab Resampling or a dict, got {resampling!r}")
        unknown = [name for name in keywords if name not in RESAMPLING_SETTINGS]
        if unknown:
            raise TypeError(
                f"{caller} got an unexpected resampling setting {unknown[0]!r}; the settings are {list(RESAMPLING_SETTINGS)}"
            )
        return replace(base, **keywords) if keywords else base


RESAMPLING_SETTINGS: tuple[str, ...] = tuple(f.name for f in fields(Resampling))
