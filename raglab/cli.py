"""The ``raglab`` command line.

Exit codes follow the gate: 0 pass, 1 block, 3 review, and only once the table reached stdout; 2 is
argparse's usage error and bad input (every file error names the file, every option its flag); 4 is
everything else: stdout closed or failing, memory or another resource exhausted, a broken
installation, a bug. Never 1, which CI would read as a block. A reader that closes the pipe
(``raglab ... | head``) is not an error. The rule is written once, above ``_exit_code``.
Output paths (``--json``, ``--output``) never name an input, an input's sidecar or another output.
``python -m raglab`` runs the same command line. Both it and the ``raglab`` console script run the
command in a supervised child process (``raglab_launcher``), which also turns an exit a native
library forces (OpenBLAS's ``exit(1)``) into 4.
Each subcommand lives with the code it runs and is added here.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import os
import re
import sys
import typing
from collections.abc import Iterator, Sequence
from typing import Any

from raglab.stats.estimators import compare_methods  # the gate's --method choices: every registered estimator

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``raglab`` command (one subparser per subcommand).

    Examples
    --------
    >>> build_parser().parse_args(["gate", "base.jsonl", "cand.jsonl", "--metric", "recall@5"]).metric
    ['recall@5']
    """
    from raglab._version import __version__

    parser = _Parser(prog="raglab", description="Evaluate RAG systems one question at a time.")
    parser.add_argument("--version", action="version", version=f"raglab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    # Subcommands register here: each sets `run=<function(args) -> exit code>`.
    demo = sub.add_parser("demo", help="run the main job on the bundled data")
    demo.add_argument("--no-notebooks", action="store_true", help="skip executing the notebooks")
    demo.add_argument("--out", default="build", metavar="DIR",
                      help="folder for the release card, the decision log and the executed notebooks (default: build)")
    demo.set_defaults(run=_run_demo)
    _add_size(sub)
    _add_gate(sub)
    _add_score(sub)
    return parser


# ---- raglab size ----------------------------------------------------------------------------------


def _add_size(sub: argparse._SubParsersAction) -> None:
    size = sub.add_parser(
        "size",
        help="questions needed to detect a change, or to pass the gate (see raglab.sizing)",
        description=(
            "Questions needed to detect a true change of --mde with the given power. Unpaired pass rates "
            "(--p): arcsine normal approximation, n per run. Paired pass rates (--paired --discordance): "
            "power of the exact McNemar test that compare reports. Continuous metrics (--sd-diff): z-test on "
            "per-question differences. When a judge labels the answers, give its --sensitivity and "
            "--specificity with the TRUE --p and --discordance: the test on the judge's labels sees a "
            "larger discordance. With --gate-margin instead of --mde: questions at which a truly unchanged "
            "candidate passes one gate row with the given power; add --slices to size the whole release (every "
            "row must pass), --drop for the power to block a drop, --design-effect or --icc/--cluster-size for "
            "clustered questions."
        ),
    )
    target = size.add_mutually_exclusive_group(required=True)
    target.add_argument("--mde", type=float, help="smallest true change to detect, e.g. 0.03")
    target.add_argument("--gate-margin", type=float, metavar="MARGIN",
                        help="size the release gate instead: questions at which an unchanged candidate passes "
                             "non-inferiority at this margin (e.g. 0.02) with the given --power")
    size.add_argument("--p", type=float,
                      help="baseline pass rate: the unpaired design's, or the TRUE rate with --sensitivity/--specificity")
    size.add_argument("--paired", action="store_true", help="both configs answer the same questions")
    size.add_argument("--discordance", type=float,
                      help="share of questions whose pass/fail differs between the configs (with --paired); the "
                           "TRUE share with --sensitivity/--specificity, the judge labels' share with --attenuation")
    size.add_argument("--sd-diff", type=float, help="sd of per-question differences (continuous metric)")
    size.add_argument("--sensitivity", type=float,
                      help="the judge's sensitivity: share of truly passing answers it passes (needs --specificity "
                           "and --p; from raglab.agreement.report)")
    size.add_argument("--specificity", type=float,
                      help="the judge's specificity: share of truly failing answers it fails (1 - miss rate)")
    size.add_argument("--attenuation", type=float,
                      help="judge attenuation J = sensitivity + specificity - 1 alone: scales the change only, so "
                           "--discordance must be measured on the judge's labels (default: no judge error)")
    size.add_argument("--slice-fraction", type=float, default=1.0,
                      help="share of questions in the slice to test; prints the total needed")
    size.add_argument("--power", type=float, default=0.8, help="default 0.8")
    size.add_argument("--alpha", type=float, help="false-positive rate of the test (default 0.05; not with --gate-margin)")
    size.add_argument("--alternative", choices=["two-sided", "one-sided"],
                      help="default two-sided (not with --gate-margin)")
    size.add_argument("--ci", type=float,
                      help="level of the gate's two-sided interval, with --gate-margin (default 0.95)")
    size.add_argument("--slices", type=_slices_arg, metavar="K|F1,F2,...",
                      help="with --gate-margin: size the whole release, which passes only when the overall row and "
                           "every slice pass: K equal slices, or the slices' fractions (e.g. 0.5,0.3,0.2)")
    size.add_argument("--drop", type=float,
                      help="with --gate-margin: also print the power to block a true drop of this size in every slice")
    size.add_argument("--design-effect", type=float,
                      help="clustered questions (several per conversation): inflate n by this design effect")
    size.add_argument("--icc", type=float,
                      help="intra-cluster correlation of the per-question differences (with --cluster-size): "
                           "design effect 1 + (cluster_size - 1) x icc")
    size.add_argument("--cluster-size", type=float, help="mean questions per cluster (with --icc)")
    size.set_defaults(run=_run_size, parser=size)


def _slices_arg(text: str) -> int | list[float]:
    try:
        if "," not in text and float(text).is_integer():
            return int(float(text))
        return [float(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of equal slices (4) or fractions (0.5,0.3,0.2), got {text!r}") from None


def _run_size(args: argparse.Namespace) -> int:
    from raglab import sizing

    parser: argparse.ArgumentParser = args.parser
    judged = args.sensitivity is not None or args.specificity is not None
    gate = args.gate_margin is not None
    if args.discordance is not None and not args.paired and not gate:
        parser.error("--discordance describes a paired design: add --paired")
    if args.paired and args.discordance is None and args.sd_diff is None:
        parser.error("--paired needs --discordance (pass/fail metric) or --sd-diff (continuous metric)")
    if args.sd_diff is not None and (args.p is not None or args.discordance is not None or judged):
        parser.error("--sd-diff sizes a continuous metric on its own: drop --p / --discordance / --sensitivity / "
                     "--specificity (pass-rate designs)")
    if not gate and (args.slices is not None or args.drop is not None):
        parser.error("--slices and --drop size the release gate: use them with --gate-margin (for one slice of a "
                     "change to detect, --slice-fraction)")
    if gate:
        if args.alpha is not None or args.alternative is not None or args.attenuation is not None:
            parser.error("--gate-margin sizes the gate, whose level is --ci: drop --alpha / --alternative / "
                         "--attenuation (a truly unchanged candidate shows no change to attenuate)")
        if args.discordance is None and args.sd_diff is None:
            parser.error("--gate-margin needs --discordance (pass/fail metric) or --sd-diff (continuous metric)")
        return _run_size_gate(args, parser)
    if args.ci is not None:
        parser.error("--ci is the gate's interval level: use it with --gate-margin (the test's level is --alpha)")
    if args.sd_diff is None and not args.paired and args.p is None:
        parser.error("give --p (unpaired pass rate), --paired --discordance, or --sd-diff")
    alpha = 0.05 if args.alpha is None else args.alpha
    alternative = args.alternative or "two-sided"
    options = dict(
        p=args.p, paired=args.paired, discordance=args.discordance, sd_diff=args.sd_diff,
        sensitivity=args.sensitivity, specificity=args.specificity, power=args.power,
        alpha=alpha, attenuation=args.attenuation, slice_fraction=args.slice_fraction,
        alternative=alternative, design_effect=args.design_effect, icc=args.icc, cluster_size=args.cluster_size,
    )
    try:
        n = sizing.questions_needed(args.mde, **options)
    except ValueError as exc:
        parser.error(str(exc))
    notes = []
    if args.sd_diff is not None:
        design = f"paired continuous metric, sd of per-question differences {args.sd_diff:g}"
        formula = "z-test on per-question differences: n ~ ((z_a + z_b) sd / d)^2"
        unit = "questions"
    elif args.paired:
        formula = ("exact McNemar test (as raglab.stats.compare reports it), power summed over the discordant counts"
                   if _deff(args) == 1 else "McNemar-type normal approximation (Connor 1987) on n / design effect")
        unit = "questions"
        if judged:
            design = f"paired pass rates, TRUE baseline pass rate {args.p:g} and discordance {args.discordance:g}"
            notes.append(_judge_labels_line(args))
        else:
            design = f"paired pass rates, discordance {args.discordance:g}"
            if args.attenuation is not None:
                design += " (taken as measured on the judge's labels)"
    else:
        design = f"unpaired pass rates, baseline p = {args.p:g}" + (" (TRUE rate)" if judged else "")
        formula = "arcsine normal approximation (as statsmodels NormalIndPower): n ~ 2 ((z_a + z_b) / h)^2"
        unit = "questions per run"
    print(f"{n} {unit}")
    print(f"  to detect      a true change of {args.mde:g}")
    print(f"  design         {design}")
    print(f"  power, alpha   {args.power:g}, {alpha:g} ({alternative})")
    if judged:
        j = args.sensitivity + args.specificity - 1
        print(f"  judge          sensitivity {args.sensitivity:g}, specificity {args.specificity:g} (J = {j:.3g}), "
              "errors independent per answer")
    elif args.attenuation is not None:
        print(f"  attenuation    {args.attenuation:g} (the judge shows {args.attenuation:g} x a true change)")
    for note in notes:
        print(note)
    if args.slice_fraction != 1:
        print(f"  slice          {args.slice_fraction:g} of the questions; n is the total so the slice has enough")
    if _deff(args) != 1:
        print(f"  clusters       design effect {_deff(args):.4g}: n is inflated by it")
    print(f"  formula        {formula}; smallest n whose power reaches the target")
    return 0


def _deff(args: argparse.Namespace) -> float:
    if args.design_effect is not None:
        return args.design_effect
    if args.icc is not None and args.cluster_size is not None:
        return 1 + (args.cluster_size - 1) * args.icc
    return 1.0


def _judge_labels_line(args: argparse.Namespace) -> str:
    """The judge's labels as the paired test sees them, in the direction that needs more questions
    (the change on the labels is J x mde either way, so the larger discordance needs more)."""
    from raglab import sizing as _sizing

    seen = []
    for sign, name in ((1, "rise"), (-1, "fall")):
        try:
            true = _sizing.paired_outcomes(args.p, discordance=args.discordance, change=sign * args.mde)
        except ValueError:
            continue
        labels = true.through_judge(sensitivity=args.sensitivity, specificity=args.specificity)
        seen.append((labels.discordance, abs(labels.difference), name))
    q, d, name = max(seen)
    return (f"  judge's labels discordance {q:.3f} (true {args.discordance:g}), change {d:.4f} ({name}): "
            "the paired test runs on these")


def _run_size_gate(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from raglab import sizing

    ci = 0.95 if args.ci is None else args.ci
    judged = args.sensitivity is not None or args.specificity is not None
    clustered = args.design_effect is not None or args.icc is not None or args.cluster_size is not None
    if args.slices is not None or args.drop is not None or clustered:
        return _run_size_release(args, parser, ci)
    try:
        n = sizing.questions_for_gate(
            args.gate_margin, discordance=args.discordance, sd_diff=args.sd_diff, p=args.p,
            sensitivity=args.sensitivity, specificity=args.specificity, power=args.power, ci=ci,
            slice_fraction=args.slice_fraction,
        )
    except ValueError as exc:
        parser.error(str(exc))
    if args.sd_diff is not None:
        design, variance = f"continuous metric, sd of per-question differences {args.sd_diff:g}", args.sd_diff**2
    elif judged:
        labels = sizing.paired_outcomes(args.p, discordance=args.discordance, change=0.0).through_judge(
            sensitivity=args.sensitivity, specificity=args.specificity)
        variance = labels.discordance
        design = (f"pass rates judged with sensitivity {args.sensitivity:g}, specificity {args.specificity:g}: TRUE "
                  f"p {args.p:g} and discordance {args.discordance:g} give a discordance of {variance:.3f} on the "
                  "judge's labels")
    else:
        design, variance = f"pass rates, discordance {args.discordance:g}", args.discordance
    print(f"{n} questions")
    print(f"  to pass        the gate at margin {args.gate_margin:g} when nothing truly changed, with power "
          f"{args.power:g}")
    print(f"  design         {design}")
    print(f"  gate           passes when the low end of the {ci:g} two-sided interval on mean(cand - base) "
          f">= -{args.gate_margin:g}")
    if args.slice_fraction != 1:
        print(f"  slice          {args.slice_fraction:g} of the questions; n is the total so the slice has enough")
    if args.sd_diff is None:
        print(f"  method         exact: the gate's Tango score interval, pass probability summed over the discordant "
              f"counts (v = {variance:.4g}); one row only, add --slices to size the whole release")
    else:
        print(f"  formula        n = (z_(1-(1-ci)/2) + z_power)^2 x v / margin^2, v = {variance:.4g} (normal "
              "approximation at a true difference of 0)")
    return 0


def _run_size_release(args: argparse.Namespace, parser: argparse.ArgumentParser, ci: float) -> int:
    """--gate-margin with --slices / --drop / clusters: sizing.questions_for_release, every gate row at once."""
    from raglab import sizing

    if args.slice_fraction != 1:
        parser.error("--slice-fraction sizes one slice; with --slices every slice is sized: drop --slice-fraction")
    spread = {"discordance": {"metric": args.discordance}} if args.sd_diff is None else {"sd_diff": {"metric": args.sd_diff}}
    try:
        result = sizing.questions_for_release(
            args.gate_margin, slices=args.slices, power=args.power, ci=ci, drop=args.drop,
            design_effect=args.design_effect, icc=args.icc, cluster_size=args.cluster_size, p=args.p,
            sensitivity=args.sensitivity, specificity=args.specificity, **spread,
        )
    except (ValueError, TypeError) as exc:
        parser.error(str(exc))
    rows = result.rows
    kind = (f"pass/fail, discordance {args.discordance:g}" if args.sd_diff is None
            else f"continuous, sd of per-question differences {args.sd_diff:g}")
    print(f"{result.n} questions")
    print(f"  to pass        every gate row ({len(rows)}: overall + {len(rows) - 1} slices) at margin "
          f"{args.gate_margin:g} when nothing truly changed: probability {result.pass_probability:.3f} "
          f"(asked {args.power:g}; a lower bound)")
    print(f"  design         {kind}; ci {ci:g}")
    if result.assumptions.get("judge"):
        print(f"  judge          {result.assumptions['judge']} ({rows['discordance'].iloc[0]:.3f})")
    if len(rows) > 1:
        shown = ", ".join(f"{s} {n:,} ({p:.3f})" for s, n, p in zip(rows["slice"], rows["n"], rows["p_pass"]))
        print(f"  rows           questions (pass probability): {shown}")
    if result.power_to_block:
        print(f"  power to block a true drop of {args.drop:g} in every slice: at least "
              f"{result.power_to_block['metric']:.3f}")
    if result.assumptions["design_effect"] != 1:
        print(f"  clusters       design effect {result.assumptions['design_effect']:.4g}: every row is a cluster "
              "bootstrap, sized by the normal approximation on n / design effect")
    print(f"  method         {result.assumptions['method']}; {result.assumptions['combination']}")
    return 0


def _run_demo(args: argparse.Namespace) -> int:
    from raglab.demo import main as demo_main

    return demo_main(["--out", str(args.out), *(["--no-notebooks"] if args.no_notebooks else [])])

# --------------------------------------------------------------------------------------------------
# raglab gate BASE CANDIDATE --metric M --margin 0.02
# --------------------------------------------------------------------------------------------------

GATE_EXIT = {"pass": 0, "block": 1, "review": 3}


class CommandError(Exception):
    """A problem with the command's inputs: printed as one line, exit code 2."""


def _name_value(text: str) -> tuple[str, float]:
    name, sep, value = text.rpartition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected METRIC=MARGIN (e.g. faithfulness=0.01), got {text!r}")
    try:
        return name, float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"the margin in {text!r} must be a number") from None


def _name_range(text: str) -> tuple[str, tuple[float, float]]:
    name, sep, value = text.rpartition("=")
    low, colon, high = value.partition(":")
    if not sep or not name or not colon:
        raise argparse.ArgumentTypeError(f"expected METRIC=LO:HI (e.g. latency_s=0:30), got {text!r}")
    try:
        return name, (float(low), float(high))
    except ValueError:
        raise argparse.ArgumentTypeError(f"the bounds in {text!r} must be numbers LO:HI") from None


def _add_gate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "gate",
        help="paired release gate: exit 0 pass, 1 block, 3 review",
        description=(
            "Compare a candidate run with a baseline, question by question, and decide: per metric and "
            "slice, pass if the interval's low end is above -margin, block if its high end is below 0, "
            "otherwise review. Prints the table; exits 0 (pass), 1 (block) or 3 (review); 2 on bad input."
        ),
    )
    p.add_argument("base", metavar="BASE", help="baseline row file (JSONL, Parquet or CSV)")
    p.add_argument("cand", metavar="CANDIDATE", help="candidate row file (JSONL, Parquet or CSV)")
    p.add_argument("--metric", "-m", action="append", required=True, metavar="M",
                   help="score column to gate on (repeat for several)")
    p.add_argument("--margin", type=float, default=None,
                   help="largest acceptable drop for every metric (in its own units), e.g. 0.02")
    p.add_argument("--margin-for", action="append", type=_name_value, default=[], metavar="M=X",
                   help="margin for one metric, overriding --margin (repeatable)")
    p.add_argument("--bounds", action="append", type=_name_range, default=[], metavar="M=LO:HI",
                   help="the range a metric with no known bounds can take (e.g. latency_s=0:30): its interval is then "
                        "the betting interval, valid at every n; values outside are refused (repeatable)")
    p.add_argument("--lower-is-better", action="append", default=[], metavar="M",
                   help="metric where lower is better (latency, cost); repeatable")
    p.add_argument("--higher-is-better", action="append", default=[], metavar="M",
                   help="metric where higher is better, overriding the name-based default; repeatable")
    p.add_argument("--by", action="append", default=None, metavar="COL", help="slice column (repeatable)")
    p.add_argument("--on", default="question_id", help="question id column (default: question_id)")
    p.add_argument("--how", choices=["exact", "inner"], default="exact",
                   help="require the same questions (exact, default) or gate on the shared ones (inner)")
    p.add_argument("--units", default=None, metavar="COL", help="cluster column: resample whole clusters")
    p.add_argument("--ci", type=float, default=0.95, help="confidence level (default 0.95)")
    p.add_argument(
        "--method", choices=list(compare_methods()), default="auto",
        help="interval: auto = Tango's score interval for pass/fail metrics, the betting interval for other metrics "
             "known to lie in [0, 1], expanded percentile bootstrap otherwise",
    )
    p.add_argument("--n-resamples", type=int, default=10_000, help="bootstrap resamples (default 10000)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--n-permutations", type=int, default=10_000,
                   help="sign flips for the permutation test (0 skips the tests)")
    p.add_argument(
        "--adjust", choices=["holm", "none"], default="holm",
        help="blocks need Holm-adjusted evidence over all rows (default), or 'none': each row blocks on its own",
    )
    p.add_argument("--allow-evalset-mismatch", action="store_true",
                   help="compare runs stamped with different eval sets anyway")
    p.add_argument("--json", default=None, metavar="PATH", help="write the JSON decision log here")
    p.set_defaults(run=_run_gate)


def _gate_margin(args: argparse.Namespace) -> float | dict[str, float]:
    per_metric = dict(args.margin_for)
    unknown = sorted(set(per_metric) - set(args.metric))
    if unknown:
        raise CommandError(f"--margin-for names metrics not given with --metric: {unknown}")
    if args.margin is None:
        missing = [m for m in args.metric if m not in per_metric]
        if missing:
            raise CommandError(f"no margin for {missing}: pass --margin X (all metrics) or --margin-for M=X")
        return per_metric
    if not per_metric:
        return args.margin
    return {m: per_metric.get(m, args.margin) for m in args.metric}


def _gate_directions(args: argparse.Namespace) -> dict[str, bool] | None:
    lower, higher = set(args.lower_is_better), set(args.higher_is_better)
    both = sorted(lower & higher)
    if both:
        raise CommandError(f"{both} given as both --lower-is-better and --higher-is-better")
    unknown = sorted((lower | higher) - set(args.metric))
    if unknown:
        raise CommandError(f"--lower-is-better/--higher-is-better name metrics not given with --metric: {unknown}")
    directions = {m: False for m in lower} | {m: True for m in higher}
    return directions or None


def _read_nonempty(read: Any, path: str, what: str) -> Any:
    """``read(path)``, refusing a file with no rows (an empty file would otherwise be named as a missing column)."""
    rows = read(path)
    if len(rows) == 0:
        raise CommandError(f"{what} {path!r} holds no rows" + ("" if len(rows.columns) else " (the file is empty)"))
    return rows


def _run_gate(args: argparse.Namespace) -> int:
    import pandas as pd

    from raglab.io import read_rows

    with _cli_warnings(args):
        try:
            _refuse_unusable_paths({"BASE": args.base, "CANDIDATE": args.cand, "--json": args.json})
            _refuse_overwriting({"--json": args.json}, {"BASE": args.base, "CANDIDATE": args.cand})
            margin = _gate_margin(args)
            directions = _gate_directions(args)
            bounds = dict(args.bounds)
            unknown = sorted(set(bounds) - set(args.metric))
            if unknown:
                raise CommandError(f"--bounds names metrics not given with --metric: {unknown}")
            base = _read_nonempty(read_rows, args.base, "BASE")
            inputs = {"baseline": _file_record(args.base)}
            cand = _read_nonempty(read_rows, args.cand, "CANDIDATE")
            inputs["candidate"] = _file_record(args.cand)
            result = base.rag.gate(
                cand,
                margin=margin,
                metrics=args.metric,
                by=args.by,
                higher_is_better=directions,
                on=args.on,
                how=args.how,
                units=args.units,
                ci=args.ci,
                method=args.method,
                n_resamples=args.n_resamples,
                seed=args.seed,
                n_permutations=args.n_permutations,
                adjust=None if args.adjust == "none" else args.adjust,
                allow_evalset_mismatch=args.allow_evalset_mismatch,
                bounds=bounds or None,
            )
        except Exception as exc:
            return _input_error(args, exc, {"baseline": args.base, "candidate": args.cand})
    code = GATE_EXIT[result.decision]
    if args.json:  # the log before the table: a closed stdout must not lose the decision
        try:
            _write_decision_log(args.json, result, inputs)
        except OSError as exc:
            if _exit_code(exc) != ERROR_EXIT:
                raise
            _err(f"raglab gate: error: cannot write the decision log {args.json!r}: {exc.strerror or exc}")
            return ERROR_EXIT
    try:
        with pd.option_context("display.width", 200, "display.max_columns", 30):
            _say(repr(result))
        if args.json:
            _say(f"decision log written to {args.json}")
    except _OutputLost as exc:
        logged = f"it is in the decision log {args.json!r}" if args.json else "no --json log was asked for"
        raise _OutputLost(f"{exc}; the decision ({result.decision}) was not delivered ({logged})") from None
    return code


def _file_record(path: str) -> dict[str, Any]:
    """What the decision log records of an input file: its path, size and SHA-256, and its sidecar's."""
    from raglab.io import sidecar_path

    record: dict[str, Any] = {"path": path, **_digest(path)}
    sidecar = sidecar_path(path)
    record["sidecar"] = {"path": str(sidecar), **_digest(sidecar)} if sidecar.is_file() else None
    return record


def _digest(path: str | os.PathLike[str]) -> dict[str, Any]:
    import hashlib

    sha = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            sha.update(block)
            size += len(block)
    return {"bytes": size, "sha256": sha.hexdigest()}


def _write_decision_log(path: str, result: Any, inputs: dict[str, Any]) -> None:
    """The gate's decision log plus ``inputs`` (the files gated and their SHA-256), written atomically."""
    import json
    from pathlib import Path

    from raglab.io import _write_atomically  # one atomic-write helper (temporary name, then os.replace)

    log = {**result.to_dict(), "inputs": inputs}
    text = json.dumps(log, indent=2, allow_nan=False, ensure_ascii=False) + "\n"
    _write_atomically(Path(path), lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _refuse_unusable_paths(paths: dict[str, str | None]) -> None:
    """Refuse an empty path (an output would be silently skipped) and ``-``, which is not stdout here.

    Examples
    --------
    >>> _refuse_unusable_paths({"--json": "-"})
    Traceback (most recent call last):
    ...
    raglab.cli.CommandError: --json '-': raglab reads and writes files, not stdin/stdout; give a file path for --json
    """
    for name, path in paths.items():
        if path is None:
            continue
        if not path.strip():
            raise CommandError(f"{name} is an empty path; give a file path for {name}")
        if path == "-":
            raise CommandError(f"{name} '-': raglab reads and writes files, not stdin/stdout; give a file path for {name}")


def _refuse_overwriting(outputs: dict[str, str | None], inputs: dict[str, str | None]) -> None:
    """Refuse an output path that is an input file, an input's sidecar (``X.raglab.json``) or another output.

    ``outputs`` and ``inputs`` map what the user typed (a flag or a positional name) to the path.

    Examples
    --------
    >>> _refuse_overwriting({"--json": "runs/base.jsonl.raglab.json"}, {"BASE": "runs/base.jsonl"})
    Traceback (most recent call last):
    ...
    raglab.cli.CommandError: --json 'runs/base.jsonl.raglab.json' is the sidecar of BASE 'runs/base.jsonl': refusing to overwrite it; choose another path for --json
    """
    from raglab.io import sidecar_path

    taken: list[tuple[str, str]] = []  # (what it is, path)
    for name, path in inputs.items():
        if path is not None:
            taken += [(f"{name} {path!r}", path), (f"the sidecar of {name} {path!r}", str(sidecar_path(path)))]
    for flag, path in outputs.items():
        if path is None:
            continue
        for what, other in taken:
            if _same_file(path, other):
                raise CommandError(f"{flag} {path!r} is {what}: refusing to overwrite it; choose another path for {flag}")
        taken += [(f"the path given to {flag}", path)]


def _same_file(a: str, b: str) -> bool:
    """Whether two paths name one file: the same resolved path, or (both existing) the same inode."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


# --------------------------------------------------------------------------------------------------
# raglab score ROWS | --run RUN --qrels QRELS  -o OUT
# --------------------------------------------------------------------------------------------------


def _k_values(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.replace(",", " ").split()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--k takes positive whole numbers such as 5 or 1,5,10; got {text!r}") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"--k takes positive whole numbers such as 5 or 1,5,10; got {text!r}")
    return values


def _add_score(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "score",
        help="retrieval metrics per question, from a row file or a TREC run + qrels, to a row file",
        description=(
            "Score retrieval per question (recall@k, hit@k, precision@k, ndcg@k, rr, ap, r_precision) and write "
            "the rows with the score columns to OUTPUT (JSONL, CSV or Parquet by suffix), ready for `raglab gate`. "
            "Input: a row file with `retrieved` and `gold` columns, or a TREC run with --run and its qrels with "
            "--qrels. Prints the mean of each metric over the answerable questions. Exits 0, or 2 on bad input."
        ),
    )
    p.add_argument("rows", metavar="ROWS", nargs="?", help="row file (JSONL, CSV or Parquet) with retrieved and gold")
    p.add_argument("--run", dest="run_file", metavar="RUN", help="TREC run file (instead of ROWS; needs --qrels)")
    p.add_argument("--qrels", metavar="QRELS", help="TREC qrels file (with --run, or gold for ROWS' retrieved lists)")
    p.add_argument("--output", "-o", required=True, metavar="OUTPUT", help="row file to write (suffix picks the format)")
    p.add_argument("--k", "-k", action="append", type=_k_values, metavar="K",
                   help="cut-off(s), e.g. --k 5 or --k 1,5,10 (repeatable; default 5)")
    p.add_argument("--metric", "-m", action="append", default=None, metavar="M",
                   help="a metric to compute instead of the defaults, by its registered name, e.g. --metric map "
                        "--metric ndcg (repeatable; metrics registered with default=False, such as map, only this way)")
    p.add_argument("--gain", choices=["exponential", "linear"], default="exponential",
                   help="nDCG gain: exponential 2^g - 1 (default) or linear g (trec_eval's ndcg_cut)")
    p.add_argument("--no-relevant", choices=["exclude", "zero"], default="exclude",
                   help="questions judged with nothing relevant: exclude (NaN, default) or zero (trec_eval)")
    p.add_argument("--question-id", default=None, metavar="COL", help="question id column (default question_id)")
    p.add_argument("--retrieved", default=None, metavar="COL", help="ranked ids column (default retrieved)")
    p.add_argument("--gold", default=None, metavar="COL", help="gold column (default gold)")
    p.set_defaults(run=_run_score)


def _run_score(args: argparse.Namespace) -> int:
    import numpy as np

    from raglab._meta import get_meta
    from raglab._validation import called_as
    from raglab.io import read_rows, sidecar_path, write_rows
    from raglab.retrieval import retrieval
    from raglab.trec import read_trec

    ks = sorted({k for group in (args.k or [[5]]) for k in group})
    with _cli_warnings(args):
        try:
            if (args.rows is None) == (args.run_file is None):
                raise CommandError("give a row file ROWS, or a TREC run with --run RUN --qrels QRELS (not both)")
            _refuse_unusable_paths({"ROWS": args.rows, "--run": args.run_file, "--qrels": args.qrels,
                                    "--output": args.output})
            _refuse_overwriting({"--output": args.output, "the sidecar of --output": str(sidecar_path(args.output))},
                                {"ROWS": args.rows, "--run": args.run_file, "--qrels": args.qrels})
            if args.run_file is not None:
                if args.qrels is None:
                    raise CommandError("--run needs --qrels QRELS (the judgments to score against)")
                rows = read_trec(run=args.run_file, qrels=args.qrels)
                if not rows["retrieved"].map(len).any():  # every run topic was dropped: none is judged
                    run_ids = read_trec(run=args.run_file)["question_id"]
                    raise CommandError(_no_shared_ids(f"the run {args.run_file!r}", run_ids, args.qrels,
                                                      rows["question_id"]))
            else:
                rows = _read_nonempty(read_rows, args.rows, "ROWS")
                if args.qrels is not None:
                    gold = read_trec(qrels=args.qrels).set_index("question_id")["gold"]
                    qid = args.question_id or "question_id"
                    if qid not in rows.columns:
                        raise CommandError(f"{args.rows!r} has no column {qid!r}; pass --question-id COL")
                    ids = rows[qid].astype(str)
                    if len(rows) and not ids.isin(gold.index).any():
                        raise CommandError(_no_shared_ids(f"{args.rows!r} (column {qid!r})", ids, args.qrels,
                                                          gold.index))
                    rows = rows.assign(**{args.gold or "gold": ids.map(gold)})
            chosen = {"metrics": list(dict.fromkeys(args.metric))} if args.metric else {}  # none: the defaults
            with called_as("raglab score"):  # errors name the command
                scored = retrieval(rows, k=ks, gain=args.gain, no_relevant=args.no_relevant,
                                   question_id=args.question_id, retrieved=args.retrieved, gold=args.gold, **chosen)
            write_rows(scored, args.output)
        except Exception as exc:
            return _input_error(args, exc)
    meta = get_meta(scored)
    columns = meta["retrieval"]["columns"]
    counts = meta["retrieval_counts"]
    lines = [f"{'metric':<16}{'mean':>8}{'n':>8}"]
    for column in columns:
        values = scored[column].to_numpy(dtype=float)
        n = int(np.isfinite(values).sum())
        mean = f"{values[np.isfinite(values)].mean():.4f}" if n else "nan"
        lines.append(f"{column:<16}{mean:>8}{n:>8}")
    lines.append(f"{counts['n_questions']} questions, {counts['n_unanswerable']} unanswerable (not in the means), "
                 f"{counts['n_nothing_retrieved']} with nothing retrieved; rows written to {args.output}")
    _say("\n".join(lines))
    return 0


def _no_shared_ids(rows_what: str, row_ids: Any, qrels: str, qrels_ids: Any) -> str:
    """The error for rows and qrels that share no question id, with a few ids from each side."""
    def few(ids: Any) -> str:
        ids = list(dict.fromkeys(str(i) for i in ids))
        return ", ".join(repr(i) for i in ids[:3]) + (f", ... ({len(ids)} in all)" if len(ids) > 3 else "")

    return (f"no question id of {rows_what} is judged in the qrels {qrels!r}: the rows have {few(row_ids)}; the "
            f"qrels judge {few(qrels_ids)}. Check that the files belong together (and --question-id)")


# --------------------------------------------------------------------------------------------------
# Errors, pipes and the entry point
# --------------------------------------------------------------------------------------------------

# ---- The one rule: every way out of `raglab` and its exit code ------------------------------------
#
#   0 / 1 / 3  a gate decision (pass / block / review), only once its table was written to stdout (a
#              reader that closed the pipe, `| head`, is not an error: the code stands);
#   2          bad input or usage: argparse's errors, CommandError, and what reading or checking the
#              user's files and options raised (ValueError, KeyError, TypeError, EOFError, OSError);
#   4          everything else: the output could not be written (stdout closed, disk full), memory or
#              another resource exhausted, a broken installation, a numerical library failing, a bug.
#              Never 1, which CI reads as "block".
#
# A non-zero `raglab size`/`score`/`demo` is 2 or 4 by the same rule; their success is 0.

ERROR_EXIT = 2  # the usage-error code argparse uses
INTERNAL_ERROR_EXIT = 4  # a crash must not look like a decision (Python's own crash code, 1, is "block")

_INPUT_ERRORS = (CommandError, OSError, ValueError, KeyError, TypeError, EOFError)
#: OSError numbers that describe the machine, not the user's file: a resource is exhausted.
_RESOURCE_ERRNOS = frozenset(getattr(errno, name) for name in ("ENOMEM", "EAGAIN", "EMFILE", "ENFILE", "ENOSPC",
                                                               "EDQUOT") if hasattr(errno, name))


class _OutputLost(Exception):
    """stdout could not be written (closed, or failing): the command's result was not delivered (exit 4)."""


def _exit_code(exc: BaseException, *, reading_input: bool = True) -> int:
    """The exit code of a failure: 2 for bad input or usage, 4 for anything else (see the rule above).

    ``reading_input`` says whether ``exc`` came from reading and checking the user's files and options;
    outside that, only a :class:`CommandError` is bad input.

    Examples
    --------
    >>> _exit_code(ValueError("`n_resamples` must be an integer >= 1")), _exit_code(MemoryError())
    (2, 4)
    >>> _exit_code(OSError(errno.ENOSPC, "No space left on device")), _exit_code(KeyError("x"), reading_input=False)
    (4, 4)
    """
    if isinstance(exc, CommandError):
        return ERROR_EXIT
    if isinstance(exc, _OutputLost) or _environment_failure(exc):
        return INTERNAL_ERROR_EXIT
    return ERROR_EXIT if reading_input and isinstance(exc, _INPUT_ERRORS) else INTERNAL_ERROR_EXIT


def _environment_failure(exc: BaseException) -> bool:
    """Whether ``exc`` says the machine or the installation failed: memory or another resource exhausted,
    a module that will not import, the interpreter or numpy's linear algebra failing.

    The exceptions it was raised from count too: a reader that reports a MemoryError, or a thread it
    could not start ("Resource temporarily unavailable"), as an unreadable file still failed for lack
    of memory, not because of the file.

    Examples
    --------
    >>> try:
    ...     try:
    ...         raise MemoryError()
    ...     except MemoryError:
    ...         raise ValueError("'run.parquet' cannot be read as a parquet file") from None
    ... except ValueError as exc:
    ...     _environment_failure(exc)
    True
    """
    numpy = sys.modules.get("numpy")
    resource_words = [os.strerror(number) for number in _RESOURCE_ERRNOS]
    seen = 0
    while exc is not None and seen < 8:
        if numpy is not None and isinstance(exc, numpy.linalg.LinAlgError):  # a ValueError, but numpy failing
            return True
        if isinstance(exc, OSError) and exc.errno in _RESOURCE_ERRNOS:
            return True
        if isinstance(exc, (MemoryError, ImportError, SystemError)):
            return True
        if seen and any(words in str(exc) for words in resource_words):  # a library's text for errno
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


# Python keywords in raglab's messages, and the flags that say the same on the command line (the
# parameters named `like_this` or like_this=... are translated from the parser itself: _cli_speak).
_CLI_WORDS = (
    (r"\b\w+=(?:\{[^}]*\}|\S+) \(CLI: ([^)]*)\)", r"\1"),  # the library's own command-line spelling wins
    (r"Pass metrics=\[\.\.\.\] naming per-question score columns present in both runs\.",
     "Pass --metric M naming per-question score columns present in both files (score retrieval first with "
     "`raglab score`)."),
    (r"\bmetrics=\[[^\]]*\]", "--metric M"),
    (r"`metrics`", "`--metric`"),
    (r"\bhow='inner'", "--how inner"),
    (r"\ballow_evalset_mismatch=True", "--allow-evalset-mismatch"),
    (r"\bunits=False", "no --units"),
    (r"\bk=(\[[^\]]*\]|\d+)", r"--k \1"),
    (r"\bpass gain='linear'", "pass --gain linear"),
    (r"\brag\.gate\b", "raglab gate"),
    (r"\brag\.compare\b", "raglab gate"),
)


def _flags(parser: argparse.ArgumentParser | None) -> dict[str, str]:
    """Each option's Python name (its ``dest``, the library's parameter name) and its long flag."""
    if parser is None:
        return {}
    return {action.dest: max(action.option_strings, key=len) for action in parser._actions
            if action.option_strings and action.dest not in ("help", "version", argparse.SUPPRESS)}


def _cli_speak(text: str, parser: argparse.ArgumentParser | None = None) -> str:
    """A raglab message with Python keywords replaced by the matching command-line flags of ``parser``.

    Examples
    --------
    >>> _cli_speak("rag.gate (base): ids repeat. Pass how='inner' to compare the shared ones.")
    'in BASE: ids repeat. Pass --how inner to compare the shared ones.'
    >>> gate = build_parser()._subparsers._group_actions[0].choices["gate"]
    >>> _cli_speak("`n_resamples` must be an integer >= 1, got 0; or pass n_permutations=0", gate)
    '`--n-resamples` must be an integer >= 1, got 0; or pass --n-permutations 0'
    """
    sides = {"base": "in BASE: ", "cand": "in CANDIDATE: "}
    text = re.sub(r"^(?:rag\.)?(?:gate|compare)(?: \((base|cand)\))?: ", lambda m: sides.get(m.group(1) or "", ""),
                  text)
    for pattern, replacement in _CLI_WORDS:
        text = re.sub(pattern, replacement, text)
    for name, flag in sorted(_flags(parser).items(), key=lambda item: -len(item[0])):
        text = text.replace(f"`{name}`", f"`{flag}`")
        text = re.sub(rf"(?<![\w-]){re.escape(name)}=", f"{flag} ", text)
    return text


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose errors (``parser.error``) name options by their flags, not Python names."""

    def error(self, message: str) -> typing.NoReturn:
        super().error(_cli_speak(message, self))


@contextlib.contextmanager
def _cli_warnings(args: argparse.Namespace) -> Iterator[None]:
    """Inside: each warning printed once, as one stderr line in command-line words (flags, not keywords)."""
    import warnings

    shown: set[str] = set()

    def show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                     file: Any = None, line: str | None = None) -> None:
        text = _cli_speak(str(message), args.parser).removeprefix(f"raglab {args.command}: ")
        if text not in shown:  # "always" lets a repeat through from any code location: drop it here
            shown.add(text)
            _err(f"raglab {args.command}: warning: {text}")

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = show_warning
        yield


def _input_error(args: argparse.Namespace, exc: BaseException, files: dict[str, str] | None = None) -> int:
    """Print a bad-input error as one line naming the file where there is one; exit code 2.

    What is not bad input by the rule above (memory, a resource, a bug) is raised again, for :func:`main`.
    ``files`` maps the sides raglab's messages speak of ("baseline", "candidate") to the user's files.
    """
    if _exit_code(exc) != ERROR_EXIT:
        raise exc
    if type(exc) is KeyError and exc.args:  # a bare KeyError prints its message quoted
        text = str(exc.args[0])
    elif isinstance(exc, OSError) and exc.filename is not None:
        reason = exc.strerror or str(exc)
        text = reason if str(exc.filename) in reason else f"cannot open {str(exc.filename)!r}: {reason}"
    else:
        text = str(exc)
    text = _cli_speak(text, args.parser)
    for side, path in (files or {}).items():
        text = text.replace(f"the {side} run", f"the {side} file {path!r}")
    _err(f"raglab {args.command}: error: {text}")
    return ERROR_EXIT


def _err(text: str) -> None:
    """One line on stderr, if there is a stderr to write to (``print(file=None)`` would go to stdout)."""
    if sys.stderr is None:
        return
    with contextlib.suppress(OSError, ValueError):
        print(text, file=sys.stderr, flush=True)


def _say(text: str) -> None:
    """Print to stdout. A reader that closed the pipe (``| head``) is not an error; a stdout that is
    closed or failing raises :class:`_OutputLost` (exit 4: the result was not delivered)."""
    out = sys.stdout
    if out is None:  # fd 1 was closed when Python started (`raglab ... >&-`): print() would drop the text
        raise _OutputLost("stdout is closed")
    try:
        out.write(text + "\n")
        out.flush()
    except BrokenPipeError:
        _drop_stdout()
    except (OSError, ValueError) as exc:  # ValueError: I/O on a closed file object
        _drop_stdout()
        raise _OutputLost(f"cannot write to stdout: {exc}") from exc


def _drop_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush raises nothing (it would exit 120)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):  # no real stdout (captured in tests)
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code (argparse's usage errors raise SystemExit(2)).

    0 pass, 1 block, 3 review (``raglab gate``, once the table is written); 2 bad input or usage; 4
    anything else: output that could not be written, memory exhausted, a broken installation, a bug
    (never 1, a block). The rule is spelled out above ``_exit_code``.

    Examples
    --------
    >>> main(["size", "--p", "0.7", "--mde", "0.05"])     # doctest: +ELLIPSIS
    1376 questions per run
    ...
    0
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "parser"):
        args.parser = parser._subparsers._group_actions[0].choices[args.command]
    try:
        code = int(args.run(args) or 0)
        _say_nothing_more()
        return code
    except BrokenPipeError:  # the reader went away (`raglab size ... | head -3`): not an error
        _drop_stdout()
        return 0
    except SystemExit as exc:
        if exc.code in (None, 0, ERROR_EXIT):  # parser.error: a usage error, as argparse exits
            raise
        return _failed(args.command, exc)  # sys.exit(1) somewhere below must not read as "block"
    except Exception as exc:  # the one rule: _exit_code
        return _failed(args.command, exc)


def _say_nothing_more() -> None:
    """Flush stdout at the end of a command: what it printed must have reached stdout."""
    if sys.stdout is None:
        raise _OutputLost("stdout is closed")
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _drop_stdout()
    except (OSError, ValueError) as exc:
        _drop_stdout()
        raise _OutputLost(f"cannot write to stdout: {exc}") from exc


def _failed(command: str, exc: BaseException) -> int:
    """Report a failure that escaped the command (one line on stderr) and return its exit code."""
    code = _exit_code(exc, reading_input=False)
    if code == ERROR_EXIT:
        _err(f"raglab {command}: error: {exc}")
    elif isinstance(exc, _OutputLost):
        _err(f"raglab {command}: error: {exc}. Exit {INTERNAL_ERROR_EXIT} is not a gate decision.")
    elif _environment_failure(exc):  # the environment: memory, a resource, the installation
        _err(f"raglab {command}: cannot run: {type(exc).__name__}: {exc}. The installation or environment is "
             f"broken (reinstall raglab, or raise the memory limit); exit {INTERNAL_ERROR_EXIT} is not a gate "
             "decision.")
    else:  # a bug: the traceback to report, then the one line that says what the exit code means
        import traceback

        _err(traceback.format_exc().rstrip())
        _err(f"raglab {command}: internal error: {type(exc).__name__}: {exc} (exit {INTERNAL_ERROR_EXIT}, not a "
             "gate decision); please report it with the traceback above")
    return code


def entry() -> int:
    """The console-script entry point (and ``python -m raglab``): :func:`main`.

    Examples
    --------
    >>> callable(entry)
    True
    """
    return main()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(entry())
