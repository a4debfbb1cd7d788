"""The command line: python -m operator_runtime {info,bench,check,compile}."""

from __future__ import annotations

import argparse


def parser() -> argparse.ArgumentParser:
    from . import bench, compile_kernels

    p = argparse.ArgumentParser(prog="python -m operator_runtime",
                                description="operator_runtime: installation info, benchmark, correctness check, "
                                            "TileLang kernels built ahead of time")
    commands = p.add_subparsers(dest="command", required=True)
    commands.add_parser("info", help="version, library, C ABI, CUDA targets, backends, devices")
    bench.add_arguments(commands.add_parser("bench", help="benchmark the ops against torch (see bench --help)",
                                            description=bench.__doc__.split("\n\n")[0]))
    check = commands.add_parser("check", help="quick correctness run of every op against torch")
    check.add_argument("--backend", default="best", help="backend name, or 'best'")
    check.add_argument("--op", nargs="+", default=["all"], choices=bench.OPS + ("all",), metavar="OP",
                       help=f"one or more of {', '.join(bench.OPS)}, or all")
    compile_kernels.add_arguments(commands.add_parser(
        "compile", help="build every TileLang kernel ahead of time into its disk cache",
        description=compile_kernels.__doc__.split("\n\n")[0]))
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.command == "info":
        from .info import main as run
    elif args.command == "bench":
        from .bench import main as run
    elif args.command == "check":
        from .check import main as run
    else:
        from .compile_kernels import main as run
    return run(args)
