"""The engine against AIM and MST, and method secure against the engine, in one table.

It runs nothing: it reads the rows of ``bench_engine.py``'s result files (by default
``benchmarks/results/vs_mst.json``, which holds the engine, secure and MST;
``vs_engine.json``, the engine's rows again at its present defaults; ``vs_secure.json``,
secure's rows again at its present defaults; and ``vs_aim.json``, which holds AIM; a later
file's rows of a method at a table and epsilon replace an earlier file's) and writes, for
each table and epsilon:

* each method's mean 3-way TVD with its standard error over the seeds that finished, and
  AIM's finished runs out of those asked for (a run past its cap has no TVD);
* whether the engine is at or below the better of AIM and MST within one standard error:
  ``engine <= other + sqrt(se_engine^2 + se_other^2)``, against MST alone where no AIM run
  finished (said so);
* secure's TVD over the engine's, and whether it is at most 1.05;
* secure's TVD over the floor's (``bench_secure_gap.py``'s ``engine+cross`` rows, default
  ``benchmarks/results/secure_floor.json``: the engine with every cross-party marginal
  published at 1.5 sigma^2, the least variance any split of the noise among the three
  viewers publishes), and whether that is at most 1.05;
* secure with coins (``secure-coins``, default ``benchmarks/results/vs_secure_coins.json``):
  its TVD over the engine's, passing at most 1.03 or within one combined standard error of
  the engine, and whether it is at or below AIM within one combined standard error. The two
  points where 3 seeds left coins over both limits (NLTCS at epsilon 0.4 and 3.2) were run
  again with more seeds, the engine, secure and coins in one run, and those rows replace the
  others' there: ``vs_secure_coins_nltcs.json`` (8 seeds, both points), then
  ``vs_secure_coins_nltcs16.json`` (16 seeds, epsilon 0.4);
* the mean seconds of the engine's and AIM's runs, and their ratio.

    python benchmarks/vs_summary.py --md benchmarks/results/vs_summary.md
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import mean_se, run_head, write_results  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
SOURCES = tuple(
    RESULTS / f"vs_{name}.json"
    for name in (
        "mst",
        "engine",
        "secure",
        "aim",
        "secure_coins",
        "secure_coins_nltcs",
        "secure_coins_nltcs16",
    )  # fmt: skip
)
FLOOR = RESULTS / "secure_floor.json"
FLOOR_VARIANT = "engine+cross"
METHODS = ("engine", "secure", "mst", "aim", "floor", "secure-coins")
SECURE_LIMIT = 1.05
COINS_LIMIT = 1.03  # secure with coins against the engine (or within one standard error)


def stats(rows: list[dict]) -> dict:
    """Mean and standard error of the finished rows' 3-way TVD, mean seconds of the runs that
    ran (a run past its cap counts its seconds to the cap), and how many runs finished, timed
    out and were not run."""
    done = [r["tvd3"] for r in rows if r.get("tvd3") is not None]
    statuses = [r.get("status", "finished") for r in rows]
    ran = [r["seconds"] for r in rows if r.get("status", "finished") != "not run"]
    mean, se = mean_se(done) if done else (math.nan, 0.0)
    seconds = sum(ran) / len(ran) if ran else math.nan
    return {
        "mean": mean,
        "se": se,
        "finished": len(done),
        "timed out": statuses.count("timed out"),
        "not run": statuses.count("not run"),
        "runs": len(rows),
        "seconds": seconds,
    }


def summarise(rows: list[dict]) -> list[dict]:
    """One entry per (dataset, epsilon) with the engine: the methods' stats and the checks."""
    points = sorted({(r["dataset"], r["epsilon"]) for r in rows if r["method"] == "engine"})
    out = []
    for dataset, epsilon in points:
        at = {m: [r for r in rows if (r["dataset"], r["epsilon"], r["method"]) ==
                  (dataset, epsilon, m)] for m in METHODS}  # fmt: skip
        s = {m: stats(v) for m, v in at.items() if v}
        engine = s["engine"]
        others = [m for m in ("aim", "mst") if m in s and s[m]["finished"]]
        best = min(others, key=lambda m: s[m]["mean"]) if others else None
        entry = {"dataset": dataset, "epsilon": epsilon, "stats": s, "best": best}
        if best is not None:
            margin = math.hypot(engine["se"], s[best]["se"])
            entry["engine_at_or_below"] = engine["mean"] <= s[best]["mean"] + margin
        if "secure" in s:
            entry["secure_ratio"] = s["secure"]["mean"] / engine["mean"]
            if "floor" in s:
                entry["floor_ratio"] = s["secure"]["mean"] / s["floor"]["mean"]
        if "secure-coins" in s:
            coins = s["secure-coins"]
            entry["coins_ratio"] = coins["mean"] / engine["mean"]
            near = coins["mean"] <= engine["mean"] + math.hypot(coins["se"], engine["se"])
            entry["coins_pass"] = entry["coins_ratio"] <= COINS_LIMIT or near
            if "aim" in s and s["aim"]["finished"]:
                margin = math.hypot(coins["se"], s["aim"]["se"])
                entry["coins_at_or_below_aim"] = coins["mean"] <= s["aim"]["mean"] + margin
        if "aim" in s and s["aim"]["finished"]:
            entry["aim_time_ratio"] = s["aim"]["seconds"] / engine["seconds"]
        out.append(entry)
    return out


def replaced(rows: list[dict], new: list[dict]) -> list[dict]:
    """``rows`` and ``new``, where ``new`` holds a method at a table and epsilon, only
    ``new``'s rows of it."""
    given = {(r["dataset"], r["epsilon"], r["method"]) for r in new}
    return [r for r in rows if (r["dataset"], r["epsilon"], r["method"]) not in given] + new


def floor_rows(data: dict) -> list[dict]:
    """``bench_secure_gap.py``'s rows of the floor variant as rows of method "floor"."""
    return [
        {k: v for k, v in r.items() if k != "variant"} | {"method": "floor"}
        for r in data["rows"]
        if r["variant"] == FLOOR_VARIANT
    ]


def read(path: str) -> tuple[dict, str]:
    """A result file's data, and its name as the table's header cites it."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return data, f"{Path(path).name} (commit {data['commit']}, {data['machine']})"


def _ratio(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio:.3f} " + ("yes" if ratio <= SECURE_LIMIT else "NO")


def _coins(e: dict) -> str:
    if "coins_ratio" not in e:
        return "-"
    return f"{e['coins_ratio']:.3f} " + ("yes" if e["coins_pass"] else "NO")


def _yes(ok: bool | None) -> str:
    return "-" if ok is None else ("yes" if ok else "NO")


def _cell(s: dict | None) -> str:
    if s is None:
        return "-"
    text = f"{s['mean']:.4f} +- {s['se']:.4f}" if s["finished"] else "none finished"
    if s["finished"] == s["runs"]:
        return text
    counts = [f"{s[k]} {k}" for k in ("finished", "timed out", "not run") if s[k]]
    return f"{text} ({', '.join(counts)})"


def markdown(head: dict, entries: list[dict]) -> str:
    out = [
        "# The engine against AIM and MST; method secure against the engine",
        "",
        f"`{head['command']}`; commit {head['commit']}; read from {head['sources']}. "
        "3-way TVD, mean +- standard error over the seeds that finished; the engine is "
        "'at or below' the better of AIM and MST if engine <= other + sqrt(se_engine^2 + "
        f"se_other^2); secure passes if its TVD is at most {SECURE_LIMIT}x the engine's. "
        "The floor is the engine with every cross-party marginal published at 1.5 sigma^2, "
        "the least variance any split of the noise among the three viewers publishes "
        "(docs/accounting.md); secure / floor is held to the same limit. Secure with coins "
        "(cross_noise 'coins', w = 1) passes at most "
        f"{COINS_LIMIT}x the engine or within one combined standard error of it, and is "
        "compared with AIM within one combined standard error.",
        "",
        "| dataset | epsilon | engine | secure | MST | AIM | engine at or below "
        "min(AIM, MST) | secure / engine | floor | secure / floor | secure, coins | "
        "coins / engine | coins at or below AIM | seconds: engine, AIM (ratio) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for e in entries:
        s = e["stats"]
        aim = s.get("aim")
        verdict = "-"
        if e["best"] is not None:
            verdict = ("yes" if e["engine_at_or_below"] else "NO") + f" (vs {e['best']}"
            verdict += "; no AIM run finished)" if aim and not aim["finished"] else ")"
        seconds = f"{s['engine']['seconds']:.1f}"
        if "aim_time_ratio" in e:
            seconds += f", {aim['seconds']:.0f} ({e['aim_time_ratio']:.0f}x)"
        out.append(
            f"| {e['dataset']} | {e['epsilon']:g} | {_cell(s['engine'])} | "
            f"{_cell(s.get('secure'))} | {_cell(s.get('mst'))} | {_cell(aim)} | {verdict} | "
            f"{_ratio(e.get('secure_ratio'))} | {_cell(s.get('floor'))} | "
            f"{_ratio(e.get('floor_ratio'))} | {_cell(s.get('secure-coins'))} | "
            f"{_coins(e)} | {_yes(e.get('coins_at_or_below_aim'))} | {seconds} |"
        )
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="*", default=[str(p) for p in SOURCES])
    parser.add_argument("--floor", default=str(FLOOR), help="bench_secure_gap.py's results")
    parser.add_argument("--json")
    parser.add_argument("--md")
    args = parser.parse_args(argv)
    rows: list[dict] = []
    names = []
    for source in args.sources:
        if not Path(source).exists() and Path(source) in SOURCES:
            continue  # a default source not made yet
        data, name = read(source)
        rows = replaced(rows, data["rows"])
        names.append(name)
    if args.floor:
        data, name = read(args.floor)
        rows = replaced(rows, floor_rows(data))
        names.append(name)
    head = run_head(__file__, argv) | {"sources": ", ".join(names)}
    entries = summarise(rows)
    write_results(args.json, args.md, head, entries, markdown)


if __name__ == "__main__":
    main()
