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
    return parser


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
