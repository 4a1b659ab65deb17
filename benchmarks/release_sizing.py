"""Benchmark: does ``sizing.questions_for_release`` size the release, not one row? (issue 18, section 2)

A release passes the gate only when the overall row and every slice row pass. For K = 1, 2, 4 and 8
equal slices and a pass/fail metric with discordance 0.05, 0.10 and 0.20 (half of the changed
questions go each way: nothing truly changed; base pass rate 0.7), margin 0.02, ci 0.95, asked
probability 0.80:

* ``n``: ``questions_for_release(0.02, discordance=d, slices=K, drop=DROP)``;
* ``row n``: what ``questions_for_gate(0.02, discordance=d, slice_fraction=1/K)`` (one row) asks;
* ``sim pass``: the share of simulated unchanged releases of ``n`` questions that the real gate
  passes, and ``row n pass`` the same at the one-row n;
* ``block``: the promised power to block a true drop of DROP (= the margin) in every slice (a lower
  bound), and ``sim block``: the share of simulated releases with that drop the real gate blocks.

The simulation runs the real functions: every replicate's paired scores go through
``raglab.stats.compare`` and ``raglab.stats.gate_comparison`` (the decision step of
``raglab.stats.gate``). Pass decisions are per row (``GATE_RULE``), so for the pass rate a batch of
replicates is compared in one call, each replicate's slices (and, in a second call, each
replicate's overall row) being rows of the table, and a replicate passes when all its rows pass.
Blocks depend on Holm over a replicate's own rows, so each replicate of the drop scenario is gated on
its own (``raglab.stats.gate`` per replicate). Whatever compare and the gate become, the simulated
columns follow them.

A second table checks the normal approximation used for continuous metrics and for clustered
questions: an rr-like continuous metric (per-question differences with sd 0.3, margin 0.05) with
K = 1 and 4, and the same with clusters of 6 questions and an ICC of 0.1 (design effect 1.5,
``units=`` passed to the gate), each replicate through ``raglab.stats.gate`` with 2,000 bootstrap
resamples and 2,000 sign flips (fewer than the defaults, printed).

A third table checks the betting model used for continuous metrics in [0, 1] (recall, nDCG, rr,
faithfulness: the gate decides them with the betting interval of Waudby-Smith & Ramdas): a
recall-like metric (``recall@5``; base scores uniform on [0.3, 0.7], 60% of the questions unchanged,
the rest moved by a uniform amount in [-0.3, 0.3]: sd of the differences 0.110), margin 0.02, K = 1
and 4. ``n`` is ``questions_for_release`` (the betting model, the default for a registered [0, 1]
metric); ``boot n`` is what it returns with ``interval="bootstrap"`` (the earlier sizing of such rows,
on the bootstrap's critical value), each with the real gate's simulated pass rate; ``block >=`` is
the promised power to block a true drop of 0.03 in every question (a lower bound) and ``sim block``
the share of such releases of ``n`` questions the real gate blocks. A last line sizes a latency
with declared bounds (``bounds={"latency_s": (0, 30)}``, differences N(0, 1) s, margin 0.5 s, base
uniform on [5, 10] s) and gates it with the same bounds.

Target: simulated pass rate >= 0.80 within Monte Carlo error (``sd = sqrt(0.8 x 0.2 / reps)``) at the
returned n, for every row of both tables; the one-row n falls short once there are slices.

Run: ``.venv/bin/python benchmarks/release_sizing.py [--quick] [--reps 500] [--parts 1,2,3]`` (full:
about 4.5 minutes for parts 1-2 on one core, part 3 about 2 minutes; ``--quick``: 200 replicates,
labelled QUICK).
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np
import pandas as pd

from raglab import sizing, stats

MARGIN, CI, POWER, DROP, BASE_RATE = 0.02, 0.95, 0.80, 0.02, 0.7
SLICES = (1, 2, 4, 8)
DISCORDANCES = (0.05, 0.10, 0.20)
BATCH = 50


def _pairs(rng: np.random.Generator, shape: tuple[int, int], q: float, drop: float) -> tuple[np.ndarray, np.ndarray]:
    """Paired pass/fail scores: (q + drop) / 2 go pass -> fail, (q - drop) / 2 fail -> pass, the rest agree."""
    u = rng.random(shape)
    down, up = (q + drop) / 2, (q - drop) / 2
    agree = rng.random(shape) < BASE_RATE
    base = np.where(u < down, 1.0, np.where(u < down + up, 0.0, agree.astype(float)))
    cand = np.where(u < down, 0.0, np.where(u < down + up, 1.0, base))
    return base, cand


def _labels(n: int, k: int) -> np.ndarray:
    """Slice k holds floor(n / K) questions, as the sizing assumes; the remainder is in no slice row."""
    size = n // k
    labels = np.repeat([f"s{i}" for i in range(k)], size).astype(object)
    return np.concatenate([labels, np.full(n - size * k, None, dtype=object)])


def simulated_pass_rate(n: int, k: int, q: float, reps: int, rng: np.random.Generator) -> float:
    """Share of unchanged releases the real gate passes (batched: pass decisions are per row)."""
    slice_labels = _labels(n, k)
    passed = 0
    for start in range(0, reps, BATCH):
        r = min(BATCH, reps - start)
        base, cand = _pairs(rng, (r, n), q, 0.0)
        rep = np.repeat(np.arange(r), n)
        ok = np.ones(r, dtype=bool)
        groups = [rep.astype(str)]
        if k > 1:
            inner = np.tile(slice_labels, r)
            keep = inner != None  # noqa: E711 - elementwise on an object array
            groups.append(np.where(keep, np.char.add(np.char.add(rep.astype(str), "|"), inner.astype(str)), None))
        for labels in groups:
            mask = labels != None  # noqa: E711
            table = stats.compare({"m": base.ravel()[mask]}, {"m": cand.ravel()[mask]}, slices=labels[mask], ci=CI)
            table = table[table["slice"] != "overall"]
            decided = stats.gate_comparison(table, MARGIN, higher_is_better=True, adjust=None).table
            owner = decided["slice"].astype(str).str.split("|").str[0].astype(int).to_numpy()
            bad = owner[(decided["decision"] != "pass").to_numpy()]
            ok[np.unique(bad)] = False
            ok[np.setdiff1d(np.arange(r), owner)] = False  # a replicate with no row cannot pass
        passed += int(ok.sum())
    return passed / reps


def simulated_block_rate(n: int, k: int, q: float, drop: float, reps: int, rng: np.random.Generator) -> float:
    """Share of releases with a true drop in every slice that the real gate blocks (one gate call each)."""
    labels = _labels(n, k) if k > 1 else None
    blocked = 0
    for _ in range(reps):
        base, cand = _pairs(rng, (1, n), q, drop)
        result = stats.gate({"m": base[0]}, {"m": cand[0]}, MARGIN, higher_is_better=True, slices=labels, ci=CI)
        blocked += result.decision == "block"
    return blocked / reps


def pass_fail_table(reps: int, block_reps: int, rng: np.random.Generator, quick: bool) -> list[float]:
    label = f"QUICK ({reps} replicates per cell)" if quick else f"{reps} replicates per cell"
    mc = math.sqrt(POWER * (1 - POWER) / reps)
    print(f"1. Pass/fail metric, margin {MARGIN}, ci {CI}, asked pass probability {POWER}; {label}, Monte Carlo "
          f"sd {mc:.3f}; block: a true drop of {DROP} in every slice, {block_reps} gate calls per cell\n")
    header = (f"{'K':>2} {'discord.':>8} {'n':>7} {'promised':>8} {'sim pass':>8} {'row n':>7} {'row n pass':>10} "
              f"{'block >=':>8} {'sim block':>9}")
    print(header)
    print("-" * len(header))
    rates = []
    for k in SLICES:
        for q in DISCORDANCES:
            result = sizing.questions_for_release(MARGIN, discordance={"m": q}, slices=k, ci=CI, power=POWER, drop=DROP)
            n = result.n
            row_n = sizing.questions_for_gate(MARGIN, discordance=q, power=POWER, ci=CI, slice_fraction=1 / k)
            sim = simulated_pass_rate(n, k, q, reps, rng)
            row_sim = simulated_pass_rate(row_n, k, q, reps, rng)
            sim_block = simulated_block_rate(n, k, q, DROP, block_reps, rng)
            rates.append((sim, mc))
            print(f"{k:>2} {q:>8.2f} {n:>7,} {result.pass_probability:>8.3f} {sim:>8.3f} {row_n:>7,} {row_sim:>10.3f} "
                  f"{result.power_to_block['m']:>8.3f} {sim_block:>9.3f}")
    print()
    return [s for s, _ in rates]


def _continuous(rng: np.random.Generator, shape: tuple[int, int], sd: float, cluster: int | None, icc: float
                ) -> tuple[np.ndarray, np.ndarray]:
    """Per-question differences with mean 0 and sd ``sd`` (a cluster effect carries ``icc`` of the variance)."""
    if cluster is None:
        diff = rng.normal(0.0, sd, shape)
    else:
        groups = shape[1] // cluster
        shared = np.repeat(rng.normal(0.0, sd * math.sqrt(icc), (shape[0], groups)), cluster, axis=1)
        diff = shared + rng.normal(0.0, sd * math.sqrt(1 - icc), shape)
    base = rng.random(shape)
    return base, base + diff


def continuous_table(reps: int, rng: np.random.Generator, quick: bool) -> list[float]:
    sd, margin, size, icc = 0.3, 0.05, 6, 0.1
    label = f"QUICK ({reps} replicates)" if quick else f"{reps} replicates"
    print(f"2. Continuous metric (sd of differences {sd}), margin {margin}: the normal approximation against "
          f"raglab.stats.gate (2,000 resamples, 2,000 sign flips); {label}\n")
    header = f"{'design':<34} {'K':>2} {'n':>6} {'promised':>8} {'sim pass':>8}"
    print(header)
    print("-" * len(header))
    out = []
    for design, cluster in (("independent questions", None), (f"clusters of {size}, ICC {icc}", size)):
        for k in (1, 4):
            kw = dict(icc=icc, cluster_size=size) if cluster else {}
            result = sizing.questions_for_release(margin, sd_diff={"m": sd}, slices=k, power=POWER, ci=CI, **kw)
            n = result.n
            if cluster:
                n = math.ceil(n / (size * k)) * size * k  # whole clusters, whole slices of clusters
            labels = np.repeat([f"s{i}" for i in range(k)], n // k) if k > 1 else None
            units = np.repeat(np.arange(n // size), size) if cluster else None
            passed = 0
            for _ in range(reps):
                base, cand = _continuous(rng, (1, n), sd, cluster, icc)
                res = stats.gate({"m": base[0]}, {"m": cand[0]}, margin, higher_is_better=True, slices=labels,
                                 units=units, ci=CI, n_resamples=2000, n_permutations=2000)
                passed += res.decision == "pass"
            out.append(passed / reps)
            print(f"{design:<34} {k:>2} {n:>6,} {result.pass_probability:>8.3f} {passed / reps:>8.3f}")
    print()
    return out


def _recall_like(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Recall-like paired scores in [0, 1]: 60% unchanged, the rest moved by U(-0.3, 0.3) (sd 0.110)."""
    base = 0.3 + 0.4 * rng.random(n)
    moved = rng.random(n) >= 0.6
    return base, base + np.where(moved, rng.uniform(-0.3, 0.3, n), 0.0)


def betting_table(reps: int, rng: np.random.Generator, quick: bool) -> list[float]:
    margin, sd = 0.02, math.sqrt(0.4 * 0.6**2 / 12)
    label = f"QUICK ({reps} replicates)" if quick else f"{reps} replicates"
    print(f"3. Continuous metric in [0, 1] (recall@5, sd of differences {sd:.3f}), margin {margin}: the betting model "
          f"against raglab.stats.gate (betting interval, 2,000 sign flips); {label}\n")
    header = (f"{'K':>2} {'n':>6} {'promised':>8} {'sim pass':>8} {'block >=':>8} {'sim block':>9} {'boot n':>6} "
              f"{'boot promised':>13} {'sim pass':>8}")
    print(header)
    print("-" * len(header))
    out = []
    for k in (1, 4):
        sims = []
        results = [sizing.questions_for_release(margin, sd_diff={"recall@5": sd}, slices=k, power=POWER, ci=CI,
                                                interval=how, drop=0.03) for how in (None, "bootstrap")]
        for result in results:
            n = result.n
            labels = _labels(n, k) if k > 1 else None
            passed = 0
            for _ in range(reps):
                base, cand = _recall_like(rng, n)
                res = stats.gate({"recall@5": base}, {"recall@5": cand}, margin, slices=labels, ci=CI,
                                 n_permutations=2000)
                passed += res.decision == "pass"
            sims.append(passed / reps)
        n, labels, blocked = results[0].n, (_labels(results[0].n, k) if k > 1 else None), 0
        for _ in range(reps // 2):
            base, cand = _recall_like(rng, n)
            blocked += stats.gate({"recall@5": base + 0.03}, {"recall@5": cand}, margin, slices=labels, ci=CI,
                                  n_permutations=2000).decision == "block"
        out.append(sims[0])
        print(f"{k:>2} {results[0].n:>6,} {results[0].pass_probability:>8.3f} {sims[0]:>8.3f} "
              f"{results[0].power_to_block['recall@5']:>8.3f} {blocked / (reps // 2):>9.3f} {results[1].n:>6,} "
              f"{results[1].pass_probability:>13.3f} {sims[1]:>8.3f}")
    declared = {"latency_s": (0.0, 30.0)}
    lat = sizing.questions_for_release(0.5, sd_diff={"latency_s": 1.0}, bounds=declared, power=POWER, ci=CI)
    boot_n = sizing.questions_for_release(0.5, sd_diff={"latency_s": 1.0}, power=POWER, ci=CI).n
    passed = 0
    for _ in range(reps):
        base = 5.0 + 5.0 * rng.random(lat.n)
        passed += stats.gate({"latency_s": base}, {"latency_s": base + rng.normal(0.0, 1.0, lat.n)}, 0.5,
                             higher_is_better=False, bounds=declared, ci=CI, n_permutations=2000).decision == "pass"
    out.append(passed / reps)
    print(f"latency_s, bounds (0, 30), sd 1, margin 0.5: n {lat.n:,} promised {lat.pass_probability:.3f} sim pass "
          f"{passed / reps:.3f} (bootstrap sizing: {boot_n:,})")
    print()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="200 replicates per cell (a labelled smoke run)")
    parser.add_argument("--reps", type=int, help="replicates per pass-rate cell (default 500; quick 200)")
    parser.add_argument("--parts", default="1,2,3", help="which tables to run (comma-separated, default 1,2,3)")
    args = parser.parse_args(argv)
    parts = {p.strip() for p in args.parts.split(",")}
    reps = args.reps or (200 if args.quick else 500)
    block_reps = 50 if args.quick else 100
    cont_reps = 60 if args.quick else 200
    warnings.simplefilter("ignore", UserWarning)
    pd.set_option("display.width", 200)
    rng = np.random.default_rng(20261202)
    started = time.perf_counter()
    rates = pass_fail_table(reps, block_reps, rng, args.quick) if "1" in parts else []
    cont = continuous_table(cont_reps, rng, args.quick) if "2" in parts else []
    betting = betting_table(cont_reps, rng, args.quick) if "3" in parts else []
    mc, mc_cont = math.sqrt(POWER * (1 - POWER) / reps), math.sqrt(POWER * (1 - POWER) / cont_reps)
    ok = all(r >= POWER - 2 * mc for r in rates) and all(r >= POWER - 2 * mc_cont for r in cont + betting)
    shown = [f"{min(v):.3f}-{max(v):.3f} ({what})" for v, what in ((rates, "pass/fail"), (cont, "continuous, clusters"),
                                                                  (betting, "betting rows")) if v]
    print(f"Summary: simulated pass rate at the returned n {', '.join(shown)} for an asked {POWER}: "
          f"{'all' if ok else 'NOT all'} at least 0.80 - 2 Monte Carlo sd ({time.perf_counter() - started:.0f} s).")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
