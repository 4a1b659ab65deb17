"""The ``raglab`` command line.

Exit codes follow the gate: 0 pass, 1 block, 3 review; 2 is argparse's usage error.
Each subcommand lives with the code it runs and is added here.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``raglab`` command (one subparser per subcommand)."""
    from raglab import __version__

    parser = argparse.ArgumentParser(prog="raglab", description="Evaluate RAG systems one question at a time.")
    parser.add_argument("--version", action="version", version=f"raglab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    # Subcommands register here: each sets `run=<function(args) -> exit code>`.
    demo = sub.add_parser("demo", help="run the main job on the bundled data")
    demo.set_defaults(run=_run_demo)
    _add_size(sub)
    return parser


# ---- raglab size ----------------------------------------------------------------------------------


def _add_size(sub: argparse._SubParsersAction) -> None:
    size = sub.add_parser(
        "size",
        help="questions needed to detect a change (see raglab.sizing)",
        description=(
            "Questions needed to detect a true change of --mde with the given power. Unpaired pass rates "
            "(--p): arcsine normal approximation, n per run. Paired pass rates (--paired --discordance): "
            "McNemar-type normal approximation (Connor 1987). Continuous metrics (--sd-diff): z-test on "
            "per-question differences."
        ),
    )
    size.add_argument("--mde", type=float, required=True, help="smallest true change to detect, e.g. 0.03")
    size.add_argument("--p", type=float, help="baseline pass rate (unpaired design)")
    size.add_argument("--paired", action="store_true", help="both configs answer the same questions")
    size.add_argument("--discordance", type=float,
                      help="share of questions whose pass/fail differs between the configs (with --paired)")
    size.add_argument("--sd-diff", type=float, help="sd of per-question differences (continuous metric)")
    size.add_argument("--attenuation", type=float, default=1.0,
                      help="judge attenuation J = sensitivity + specificity - 1 (default 1: no judge error)")
    size.add_argument("--slice-fraction", type=float, default=1.0,
                      help="share of questions in the slice to test; prints the total needed")
    size.add_argument("--power", type=float, default=0.8, help="default 0.8")
    size.add_argument("--alpha", type=float, default=0.05, help="default 0.05")
    size.add_argument("--alternative", choices=["two-sided", "one-sided"], default="two-sided")
    size.set_defaults(run=_run_size, parser=size)


def _run_size(args: argparse.Namespace) -> int:
    from raglab import sizing

    parser: argparse.ArgumentParser = args.parser
    if args.discordance is not None and not args.paired:
        parser.error("--discordance describes a paired design: add --paired")
    if args.paired and args.discordance is None and args.sd_diff is None:
        parser.error("--paired needs --discordance (pass/fail metric) or --sd-diff (continuous metric)")
    if args.sd_diff is None and not args.paired and args.p is None:
        parser.error("give --p (unpaired pass rate), --paired --discordance, or --sd-diff")
    options = dict(
        p=args.p, paired=args.paired, discordance=args.discordance, sd_diff=args.sd_diff, power=args.power,
        alpha=args.alpha, attenuation=args.attenuation, slice_fraction=args.slice_fraction,
        alternative=args.alternative,
    )
    try:
        n = sizing.questions_needed(args.mde, **options)
    except ValueError as exc:
        parser.error(str(exc))
    if args.sd_diff is not None:
        design = f"paired continuous metric, sd of per-question differences {args.sd_diff:g}"
        formula = "z-test on per-question differences: n ~ ((z_a + z_b) sd / d)^2"
        unit = "questions"
    elif args.paired:
        design = f"paired pass rates, discordance {args.discordance:g}"
        formula = "McNemar-type normal approximation (Connor 1987): n ~ ((z_a sqrt(q) + z_b sqrt(q - d^2)) / d)^2"
        unit = "questions"
    else:
        design = f"unpaired pass rates, baseline p = {args.p:g}"
        formula = "arcsine normal approximation (as statsmodels NormalIndPower): n ~ 2 ((z_a + z_b) / h)^2"
        unit = "questions per run"
    print(f"{n} {unit}")
    print(f"  to detect      a true change of {args.mde:g}")
    print(f"  design         {design}")
    print(f"  power, alpha   {args.power:g}, {args.alpha:g} ({args.alternative})")
    if args.attenuation != 1:
        print(f"  attenuation    {args.attenuation:g} (the judge shows {args.attenuation:g} x a true change)")
    if args.slice_fraction != 1:
        print(f"  slice          {args.slice_fraction:g} of the questions; n is the total so the slice has enough")
    print(f"  formula        {formula}; smallest n whose power reaches the target")
    return 0


def _run_demo(args: argparse.Namespace) -> int:
    from raglab.demo import main as demo_main

    return demo_main()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.run(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
