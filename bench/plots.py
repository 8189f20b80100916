"""Charts of the benchmarks, drawn with matplotlib next to their tables.

``compare FILE.json``: a `make bench-compare` run. Reads the run's numbers (``target/bench-compare.json``, which the ``compare``
binary writes beside ``bench-compare.md``) and writes three SVGs beside it:

- ``*-ratios.svg``: Leasehold's server store against etcd and Redis, one
  bar per workload and rival: the rival's time over Leasehold's (for the
  grant and handoff latencies, p50) or Leasehold's operations a second over
  the rival's (for the hold cycles); above 1, Leasehold is faster;
- ``*-handoff.svg``: the handoff latency's distribution, each system's
  percentiles;
- ``*-renewal.svg``: keeping N leases renewed: the client's CPU and each
  process's memory per lease against N, log-log.

``tables FILE.md``: any benchmark's Markdown tables (`make bench-ids`,
`make bench-jvm`): for each table with a ratio column (its header holds
"/" or "ratio"), one bar per row and ratio (``2.37x``; a cell may hold
several, ``1.31x, 1.45x``, and a range in parentheses, which is left out),
on a log scale with 1 marked: ``FILE-1.svg``, ``FILE-2.svg``, ….

    python bench/plots.py compare target/bench-compare.json
    python bench/plots.py tables target/bench-jvm.md
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("svg")
matplotlib.rcParams["svg.fonttype"] = "none"
matplotlib.rcParams["svg.hashsalt"] = "leasehold"
import matplotlib.pyplot as plt

OURS = "leasehold"
RIVALS = ("etcd", "redis")


def kind(workload: str) -> tuple[str, bool] | None:
    """The comparison a row belongs to, and whether it compares latency."""
    if workload.startswith("hold cycle, 1 client"):
        return "hold cycle, 1 client (cycles/s)", False
    if workload.startswith("grant"):
        return "grant, 1 client (p50)", True
    if workload.startswith("hold cycle, 16"):
        return "hold cycle, 16 clients (cycles/s)", False
    if workload.startswith("handoff"):
        return "handoff, 16 clients (p50)", True
    return None


def by_kind(data: dict[str, Any], system: str) -> dict[str, tuple[bool, dict[str, Any]]]:
    """A system's row of each comparison; of several setups, the one with a
    connection per client (as the rivals' are)."""
    out: dict[str, tuple[bool, dict[str, Any]]] = {}
    for r in data["rows"]:
        k = kind(r["workload"])
        if r["system"] != system or k is None:
            continue
        name, latency = k
        if name not in out or "connections" in r["workload"]:
            out[name] = (latency, r)
    return out


def ratios(data: dict[str, Any]) -> list[tuple[str, str, float]]:
    """(comparison, rival, ratio) for each comparison Leasehold and a rival ran."""
    ours = by_kind(data, OURS)
    out = []
    for rival in RIVALS:
        for name, (latency, theirs) in by_kind(data, rival).items():
            if name not in ours:
                continue
            mine = ours[name][1]
            if latency and mine["p50_us"] and theirs["p50_us"]:
                out.append((name, rival, theirs["p50_us"] / mine["p50_us"]))
            elif not latency and mine["per_sec"] and theirs["per_sec"]:
                out.append((name, rival, mine["per_sec"] / theirs["per_sec"]))
    return out


def draw_ratios(data: dict[str, Any], out: Path) -> int:
    found = ratios(data)
    workloads = list(dict.fromkeys(w for w, _, _ in sorted(found)))
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.55 * len(workloads)))
    height = 0.8 / len(RIVALS)
    for i, rival in enumerate(RIVALS):
        values = {w: r for w, x, r in found if x == rival}
        ys = [n + i * height for n, w in enumerate(workloads) if w in values]
        xs = [values[w] for w in workloads if w in values]
        bars = ax.barh(ys, xs, height=height, label=f"against {rival}")
        ax.bar_label(bars, labels=[f"{x:.1f}×" for x in xs], fontsize=7, padding=2)
    ax.axvline(1, color="black", linewidth=0.8)
    ax.set_yticks([n + height / 2 for n in range(len(workloads))], workloads, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("Leasehold's speed over the rival's (above 1: Leasehold is faster; log scale)")
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(
        "Leasehold's server store against etcd and Redis, same machine, same run", fontsize=9
    )
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return len(found)


def draw_handoff(data: dict[str, Any], out: Path) -> int:
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for h in data["handoff"]:
        if not h["percentiles"]:
            continue
        ps, values = zip(*h["percentiles"])
        ax.plot(ps, values, marker="o", markersize=3, label=f"{h['system']} ({h['setup']})")
    ax.set_yscale("log")
    ax.set_xlabel("percentile")
    ax.set_ylabel("release → next grant (µs, log scale)")
    ax.set_title("Handoff latency: one client releases, the next in line is granted", fontsize=9)
    ax.grid(True, which="both", linewidth=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return sum(1 for h in data["handoff"] if h["percentiles"])


def draw_renewal(data: dict[str, Any], out: Path) -> int:
    fig, (cpu, mem) = plt.subplots(1, 2, figsize=(11, 4.5))
    series: dict[str, list[dict[str, Any]]] = {}
    for r in data["renewed"]:
        series.setdefault(r["system"], []).append(r)
    for n_series, (name, points) in enumerate(series.items()):
        colour = f"C{n_series}"
        points.sort(key=lambda r: r["leases"])
        n = [r["leases"] for r in points]
        per_lease = [r["client_core"] * 1e6 / r["leases"] for r in points]
        cpu.plot(n, per_lease, marker="o", markersize=3, color=colour, label=name)
        client = [r["client_bytes"] for r in points]
        mem.plot(n, client, marker="o", markersize=3, color=colour, label=f"{name}, client")
        server = [(r["leases"], r["server_bytes"]) for r in points if r["server_bytes"]]
        if server:
            xs, ys = zip(*server)
            mem.plot(
                xs,
                ys,
                marker="s",
                markersize=3,
                linestyle="--",
                color=colour,
                label=f"{name}, server",
            )
    for ax in (cpu, mem):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("leases kept renewed")
        ax.grid(True, which="both", linewidth=0.3)
        ax.legend(fontsize=6)
    cpu.set_ylabel("client CPU per lease (µs of CPU a second)")
    mem.set_ylabel("memory per lease (bytes)")
    fig.suptitle("Keeping leases renewed from one client process", fontsize=9)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return len(series)


RATIO = re.compile(r"(\d+(?:\.\d+)?)x")
# A cell that is only a number (a time, a count): not a row's label.
NUMBER = re.compile(r"^[\d.,\s]+$")


def tables(text: str) -> list[tuple[str, list[str], list[list[str]]]]:
    """Each Markdown table: the heading above it, its header, its rows."""
    found = []
    heading = ""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        if line.startswith("|") and i + 1 < len(lines) and set(lines[i + 1].strip()) <= set("|-: "):
            header = [c.strip() for c in line.strip("|").split("|")]
            rows = []
            i += 2
            while i < len(lines) and lines[i].strip().startswith("|"):
                rows.append([c.strip() for c in lines[i].strip().strip("|").split("|")])
                i += 1
            found.append((heading, header, rows))
            continue
        i += 1
    return found


def ratios_of(cell: str) -> list[float]:
    """The ratios in a cell, without a range in parentheses."""
    return [float(x) for x in RATIO.findall(re.sub(r"\([^)]*\)", "", cell))]


def draw_table(heading: str, header: list[str], rows: list[list[str]], out: Path) -> int:
    column = next(
        (n for n, h in enumerate(header) if "/" in h or "ratio" in h.lower()),
        None,
    )
    if column is None:
        return 0
    labelled = [
        (
            " · ".join(c for c in row[:column] if c and not NUMBER.match(c))[:70],
            ratios_of(row[column]),
        )
        for row in rows
        if column < len(row) and ratios_of(row[column])
    ]
    if not labelled:
        return 0
    width = max(len(r) for _, r in labelled)
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.45 * len(labelled) * max(1, width / 2)))
    height = 0.8 / width
    for k in range(width):
        ys = [n + k * height for n, (_, r) in enumerate(labelled) if k < len(r)]
        xs = [r[k] for _, r in labelled if k < len(r)]
        bars = ax.barh(ys, xs, height=height)
        ax.bar_label(bars, labels=[f"{x:g}x" for x in xs], fontsize=7, padding=2)
    ax.axvline(1, color="black", linewidth=0.8)
    ax.set_yticks(
        [n + (width - 1) * height / 2 for n in range(len(labelled))],
        [label for label, _ in labelled],
        fontsize=7,
    )
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel(f"{header[column]} (log scale)", fontsize=8)
    ax.set_title(heading, fontsize=9)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return len(labelled)


def main() -> int:
    if len(sys.argv) != 3 or sys.argv[1] not in ("compare", "tables"):
        print(__doc__, file=sys.stderr)
        return 2
    source = Path(sys.argv[2])
    stem = source.with_suffix("")
    drawn: dict[str, int] = {}
    if sys.argv[1] == "compare":
        data = json.loads(source.read_text(encoding="utf-8"))
        for name, draw in (
            ("ratios", draw_ratios),
            ("handoff", draw_handoff),
            ("renewal", draw_renewal),
        ):
            out = Path(f"{stem}-{name}.svg")
            drawn[str(out)] = draw(data, out)
    else:
        n = 0
        for heading, header, rows in tables(source.read_text(encoding="utf-8")):
            out = Path(f"{stem}-{n + 1}.svg")
            count = draw_table(heading, header, rows, out)
            if count:
                drawn[str(out)] = count
                n += 1
    for path, count in drawn.items():
        print(f"plots: {path}: {count} bars or lines")
    empty = [path for path, count in drawn.items() if count == 0]
    if empty or not drawn:
        print(f"plots: nothing to draw from {source} ({', '.join(empty)})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
