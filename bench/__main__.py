"""``python -m bench [w1 ... w9] [--full]``: run the cases, print the table, save JSON."""

from __future__ import annotations

import argparse
import compileall
import sys
import tempfile
import time
from pathlib import Path

from bench import cases_loop, cases_merge, cases_misc, cases_pool, cases_ray
from bench.procs import ROOT
from bench.report import Row, print_table, write_json

CASES = {
    "w1": cases_loop.w1,
    "w2": cases_loop.w2,
    "w3": cases_loop.w3,
    "w3b": cases_loop.w3b,
    "w4": cases_misc.w4,
    "w5": cases_misc.w5,
    "w6": cases_misc.w6,
    "w7": cases_ray.w7,
    "w8": cases_pool.w8,
    "w9": cases_merge.w9,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("cases", nargs="*", choices=[*CASES, []], help="default: all")
    parser.add_argument(
        "--full", action="store_true", help="also run langsmith at 100,000 examples (W3)"
    )
    args = parser.parse_args(argv)
    chosen = args.cases or list(CASES)
    # As installed from a wheel: the package's bytecode compiled, whatever
    # PYTHONDONTWRITEBYTECODE says (it keeps an editable install from writing it).
    compileall.compile_dir(ROOT / "agenteval_cli", quiet=1)
    rows: list[Row] = []
    runs = {}
    with tempfile.TemporaryDirectory(prefix="agenteval-bench-") as tmp:
        for name in chosen:
            started = time.perf_counter()
            print(f"{name} ...", file=sys.stderr, flush=True)
            case_rows, case_runs = CASES[name](Path(tmp), args.full)
            rows += case_rows
            runs[name] = case_runs
            print(f"{name} done in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    print_table(rows)
    path = write_json(rows, runs, chosen)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
