"""Benchmark: does judge-labelled sizing deliver the power it promises? (issue 9, "Sizing that matches
the test the user will run")

For several designs (true baseline pass rate ``p``, true discordance ``d``, true change ``mde``, and a
judge with sensitivity ``se`` and specificity ``sp``), two recommended sizes are compared:

* **old**: the 1/J^2 rule, ``questions_needed(mde, paired=True, discordance=d, attenuation=J)`` with the
  TRUE discordance (what raglab recommended before; ``J = se + sp - 1``);
* **new**: ``questions_needed(mde, paired=True, discordance=d, p=p, sensitivity=se, specificity=sp)``.

The power of each is simulated answer by answer: every question's true (base, cand) outcome is drawn
from the true cells (``sizing.paired_outcomes``), the judge labels each of the two answers
independently (passes a true pass with probability se, a true fail with 1 - sp), and the exact McNemar
test (5% two-sided, ``p < 0.05``: the test ``raglab.stats.compare`` reports and the formula sizes for)
runs on the labels. The
change is simulated as a rise and as a fall and the lower power is reported (the formula sizes for the
direction that needs more questions). Target for the new formula: 0.75-0.85 for an asked 0.80.

Then ``questions_for_gate``: the pass rate of a truly unchanged candidate (true discordance d, the
same judge) at the recommended n, through ``raglab.stats.gate`` itself (its default pass/fail interval,
Tango's, which the sizing sums exactly; one call per replicate) and through the normal-approximation
rule (lower end of the 95% Wald interval on the mean paired difference >= -margin) for contrast. The "naive n" column sizes the gate
with the TRUE discordance, ignoring the judge. Target: about the asked 0.80.

Everything is seeded; the run takes well under two minutes on one core.

Run: ``.venv/bin/python benchmarks/sizing_power.py [--sims 2000] [--gate-reps 300]``.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy.stats import binom

from raglab import sizing, stats

Z95 = 1.959963984540054

# (label, p, d, mde, se, sp)
DESIGNS = [
    ("issue 9 (MTRAG-like judge)", 0.70, 0.10, 0.03, 0.943, 0.635),
    ("balanced judge, p 0.5", 0.50, 0.20, 0.05, 0.85, 0.90),
    ("lenient judge, p 0.85", 0.85, 0.08, 0.04, 0.97, 0.60),
    ("symmetric judge, p 0.3", 0.30, 0.15, 0.06, 0.80, 0.80),
    ("weak specificity, p 0.9", 0.90, 0.05, 0.02, 0.98, 0.50),
    ("perfect judge (control)", 0.70, 0.10, 0.03, 1.00, 1.00),
]
# (label, p, d, margin, se, sp)
GATE_DESIGNS = [
    ("no judge", 0.70, 0.10, 0.02, None, None),
    ("issue 9 judge", 0.70, 0.10, 0.03, 0.943, 0.635),
    ("balanced judge", 0.50, 0.20, 0.05, 0.85, 0.90),
]


def _draw(rng: np.random.Generator, p: float, d: float, change: float, se: float, sp: float,
          shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """The judge's labels of base and cand answers: true paired outcomes, then independent judge errors."""
    true = sizing.paired_outcomes(p, discordance=d, change=change)
    u = rng.random(shape)
    cut1, cut2, cut3 = true.pass_pass, true.pass_pass + true.pass_fail, true.pass_pass + true.pass_fail + true.fail_pass
    base = u < cut2
    cand = (u < cut1) | ((u >= cut2) & (u < cut3))
    label_base = rng.random(shape) < np.where(base, se, 1 - sp)
    label_cand = rng.random(shape) < np.where(cand, se, 1 - sp)
    return label_base, label_cand


def simulated_power(p: float, d: float, change: float, se: float, sp: float, n: int, *, sims: int, seed: int,
                    chunk: int = 200) -> float:
    """Share of simulated eval sets of n questions where the exact McNemar test (5% two-sided) on the labels rejects."""
    rng = np.random.default_rng(seed)
    rejected = 0
    for start in range(0, sims, chunk):
        k = min(chunk, sims - start)
        lb, lc = _draw(rng, p, d, change, se, sp, (k, n))
        b = np.sum(lb & ~lc, axis=1)
        c = np.sum(~lb & lc, axis=1)
        p_value = np.minimum(1.0, 2 * binom.cdf(np.minimum(b, c), b + c, 0.5))  # as raglab.stats.compare
        rejected += int(np.sum(p_value < 0.05))
    return rejected / sims


def gate_pass_rates(p: float, d: float, margin: float, se: float, sp: float, n: int, *, reps: int, sims: int,
                    seed: int) -> tuple[float, float, str]:
    """Pass rate of an unchanged candidate: through raglab.stats.gate (reps calls) and the normal rule (sims)."""
    rng = np.random.default_rng(seed)
    passed, method = 0, ""
    for _ in range(reps):
        lb, lc = _draw(rng, p, d, 0.0, se, sp, (1, n))
        result = stats.gate({"m": lb[0].astype(float)}, {"m": lc[0].astype(float)}, margin=margin,
                            higher_is_better={"m": True})
        passed += result.decision == "pass"
        method = str(result.table["method"].iloc[0])
    normal_passed = 0
    for start in range(0, sims, 200):
        k = min(200, sims - start)
        lb, lc = _draw(rng, p, d, 0.0, se, sp, (k, n))
        diff = lc.astype(np.float64) - lb.astype(np.float64)
        low = diff.mean(axis=1) - Z95 * diff.std(axis=1, ddof=1) / math.sqrt(n)
        normal_passed += int(np.sum(low >= -margin))
    return passed / reps, (normal_passed / sims if sims else math.nan), method


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sims", type=int, default=2000, help="simulated eval sets per power estimate")
    parser.add_argument("--gate-reps", type=int, default=300, help="raglab.stats.gate calls per gate design")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    mc_sd = math.sqrt(0.8 * 0.2 / args.sims)
    print(f"Judge-labelled sizing, asked power 0.80, alpha 0.05 two-sided; {args.sims} simulated eval sets per "
          f"cell (Monte Carlo sd about {mc_sd:.3f}); power = lower of a rise and a fall\n")
    header = (f"{'design':<28} {'p':>5} {'d':>5} {'mde':>5} {'se':>6} {'sp':>6} {'J':>6} {'label d':>8} "
              f"{'old n':>7} {'power':>6} {'new n':>7} {'power':>6}")
    print(header)
    print("-" * len(header))
    new_powers, old_judged = [], []
    for i, (label, p, d, mde, se, sp) in enumerate(DESIGNS):
        j = se + sp - 1
        old_n = sizing.questions_needed(mde, paired=True, discordance=d, attenuation=j)
        new_n = sizing.questions_needed(mde, paired=True, discordance=d, p=p, sensitivity=se, specificity=sp)
        label_d = max(sizing.paired_outcomes(p, discordance=d, change=s * mde)
                      .through_judge(sensitivity=se, specificity=sp).discordance for s in (1, -1))
        powers = {}
        for name, n in (("old", old_n), ("new", new_n)):
            powers[name] = min(simulated_power(p, d, s * mde, se, sp, n, sims=args.sims, seed=100 * i + k)
                               for k, s in enumerate((1, -1)))
        new_powers.append(powers["new"])
        if j < 1:
            old_judged.append(powers["old"])
        print(f"{label:<28} {p:>5.2f} {d:>5.2f} {mde:>5.2f} {se:>6.3f} {sp:>6.3f} {j:>6.3f} {label_d:>8.3f} "
              f"{old_n:>7,} {powers['old']:>6.3f} {new_n:>7,} {powers['new']:>6.3f}")

    print(f"\nGate sizing (questions_for_gate, power 0.80, ci 0.95): pass rate of a truly unchanged candidate; "
          f"raglab.stats.gate on {args.gate_reps} replicates, normal rule on {args.sims}\n")
    header2 = (f"{'design':<16} {'p':>5} {'d':>5} {'margin':>6} {'se':>6} {'sp':>6} {'naive n':>8} {'stats.gate':>10} "
               f"{'n':>7} {'stats.gate':>10} {'normal':>7}  gate interval")
    print(header2)
    print("-" * len(header2))
    gate_rates = []
    for i, (label, p, d, margin, se, sp) in enumerate(GATE_DESIGNS):
        judged = se is not None
        se_, sp_ = (se, sp) if judged else (1.0, 1.0)
        naive = sizing.questions_for_gate(margin, discordance=d)
        n = sizing.questions_for_gate(margin, discordance=d, p=p if judged else None, sensitivity=se, specificity=sp)
        naive_rate, _, _ = gate_pass_rates(p, d, margin, se_, sp_, naive, reps=args.gate_reps, sims=0, seed=500 + i)
        rate, normal_rate, method = gate_pass_rates(p, d, margin, se_, sp_, n, reps=args.gate_reps, sims=args.sims,
                                                    seed=600 + i)
        gate_rates.append(rate)
        print(f"{label:<16} {p:>5.2f} {d:>5.2f} {margin:>6.3f} {se_:>6.3f} {sp_:>6.3f} {naive:>8,} {naive_rate:>10.3f} "
              f"{n:>7,} {rate:>10.3f} {normal_rate:>7.3f}  {method}")

    elapsed = time.perf_counter() - started
    ok = all(0.75 <= pw <= 0.85 for pw in new_powers)
    print(f"\nSummary: new formula simulated power {min(new_powers):.3f}-{max(new_powers):.3f} for an asked 0.80 "
          f"({'all within' if ok else 'NOT all within'} 0.75-0.85); the 1/J^2 rule gave "
          f"{min(old_judged):.3f}-{max(old_judged):.3f} on the judged designs; "
          f"gate pass rate of an unchanged candidate {min(gate_rates):.3f}-{max(gate_rates):.3f} at the sized n "
          f"({elapsed:.0f} s).")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
