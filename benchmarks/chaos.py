# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""`make chaos`: the whole stack at API fault rates 0, 5 and 20 % (testkit/chaos_world.py) — faults
injected by kind, retries (requests beyond the fault-free run), time to converge, and whether the
end state equals the fault-free one. Exits 1, naming each, when a run broke an invariant or ended
elsewhere than the fault-free run (testkit/chaos_checks.py, the checks tests/e2e/test_chaos.py makes)."""

from __future__ import annotations

import argparse
import logging
import sys

from testkit.chaos import KINDS
from testkit.chaos_checks import duplicated, problems
from testkit.chaos_world import ChaosRun, run_chaos


def row(run: ChaosRun, baseline: ChaosRun) -> str:
    faults = " ".join(f"{run.faults.get(kind, 0):>5}" for kind in KINDS)
    sent, base = sum(run.requests.values()), sum(baseline.requests.values())
    duplicates = duplicated(run)
    same = run.phases["final"] == baseline.phases["final"]
    return (
        f"{run.rate * 100:>5.0f}% {run.seed:>5} {faults} {sum(run.faults.values()):>6} {sent:>6} "
        f"{sent - base:>+7} {run.prepare_attempts:>7} {run.seconds['prepare']:>8.1f} "
        f"{'yes' if same else 'NO':>5} {len(duplicates):>4} {len(run.crashes):>7}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make chaos")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--rates", type=float, nargs="+", default=[0.05, 0.2])
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)  # the components log every injected failure
    baseline = run_chaos(seed=0, rate=0.0)
    kinds = " ".join(f"{kind[:5]:>5}" for kind in KINDS)
    print("API faults, whole stack (3 nodes, 5 cards, 2 claims: MIG and whole; real HTTP client)")
    print(
        f"{'rate':>6} {'seed':>5} {kinds} {'faults':>6} {'reqs':>6} {'retries':>7} "
        f"{'prepare':>7} {'converge':>8} {'equal':>5} {'dups':>4} {'crashes':>7}"
    )
    print(row(baseline, baseline))
    failed = []
    for rate in args.rates:
        for seed in args.seeds:
            run = run_chaos(seed, rate, baseline)
            print(row(run, baseline), flush=True)
            failed += [f"rate {rate * 100:g}% seed {seed}: {problem}" for problem in problems(run, baseline)]
    print("retries: requests beyond the fault-free run; converge: seconds until the final state held")
    for line in failed:
        print(f"FAILED {line}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
