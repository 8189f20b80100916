"""The timeline of a `make demo` run, as an SVG drawn with matplotlib.

Reads the holders' lines (``[LANG-N] holds summaries/KEY fence=F ... at=MS``
when a hold began, ``[LANG-N] done summaries/KEY fence=F at=MS`` when its
holder was done with the resource, before releasing) and the demo's fault
lines (``fault at=MS what``), and draws one row per key, each hold a bar
coloured by language and labelled with its fence's counter, each fault a
line across the rows. Exits 1 when two holds of one key overlap: the bars
are the holders' own times, so an overlap would be two holders at once.

    python demo/timeline.py HOLDS_FILE OUT.svg [--title TEXT]
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass

import matplotlib

matplotlib.use("svg")
# Text as text (not as glyph outlines): a tenth of the size; and the same
# file for the same run.
matplotlib.rcParams["svg.fonttype"] = "none"
matplotlib.rcParams["svg.hashsalt"] = "leasehold"
import matplotlib.pyplot as plt
from matplotlib.patches import Patch

HOLDS = re.compile(r"^\[(\w+)-\w+\] holds summaries/(\S+) fence=(\d+) .*at=(\d+)$")
DONE = re.compile(r"^\[(\w+)-\w+\] done summaries/(\S+) fence=(\d+) at=(\d+)$")
FAULT = re.compile(r"^fault at=(\d+) (.*)$")
COLOURS = {
    "rust": "#b7410e",
    "python": "#3572a5",
    "node": "#3c873a",
    "go": "#00add8",
    "jvm": "#7f52ff",
}


@dataclass
class Hold:
    lang: str
    key: str
    fence: int
    start: int
    end: int | None = None


def read(path: str) -> tuple[list[Hold], list[tuple[int, str]]]:
    holds: dict[int, Hold] = {}
    faults: list[tuple[int, str]] = []
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            line = line.rstrip("\n")
            if m := HOLDS.match(line):
                lang, key, fence, at = m.groups()
                holds[int(fence)] = Hold(lang, key, int(fence), int(at))
            elif m := DONE.match(line):
                fence, at = int(m.group(3)), int(m.group(4))
                if fence in holds:
                    holds[fence].end = at
            elif m := FAULT.match(line):
                faults.append((int(m.group(1)), m.group(2)))
    return sorted(holds.values(), key=lambda h: h.start), faults


def overlaps(holds: list[Hold]) -> list[tuple[Hold, Hold]]:
    """Pairs of holds of one key where the later began before the earlier was done."""
    found = []
    last: dict[str, Hold] = {}
    for h in holds:
        before = last.get(h.key)
        if before is not None and (before.end is None or h.start < before.end):
            found.append((before, h))
        last[h.key] = h
    return found


def draw(holds: list[Hold], faults: list[tuple[int, str]], out: str, title: str) -> None:
    keys = sorted({h.key for h in holds})
    origin = min([h.start for h in holds] + [at for at, _ in faults])
    end = max([h.end or h.start for h in holds] + [at for at, _ in faults])
    seconds = (end - origin) / 1000
    fig, ax = plt.subplots(figsize=(max(10.0, seconds * 3), 1.0 + 0.6 * len(keys)))
    for row, key in enumerate(keys):
        for h in (h for h in holds if h.key == key):
            start = (h.start - origin) / 1000
            width = ((h.end or h.start) - h.start) / 1000
            ax.broken_barh(
                [(start, width)],
                (row - 0.35, 0.7),
                color=COLOURS.get(h.lang, "grey"),
                edgecolor="white",
                linewidth=0.4,
            )
            ax.text(
                start + width / 2,
                row,
                str(h.fence & 0xFFFFFFFF),
                ha="center",
                va="center",
                rotation=90,
                fontsize=4,
                color="white",
            )
    for at, what in faults:
        x = (at - origin) / 1000
        ax.axvline(x, color="black", linestyle="--", linewidth=1)
        ax.text(x, len(keys) - 0.4, f" {what}", fontsize=7, va="bottom")
    ax.set_yticks(range(len(keys)), keys)
    ax.set_ylim(-0.6, len(keys) + 0.2)
    ax.set_xlim(0, seconds)
    ax.set_xlabel("seconds since the first hold")
    langs = sorted({h.lang for h in holds})
    handles = [Patch(color=COLOURS.get(lang, "grey"), label=lang) for lang in langs]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=len(langs))
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("holds")
    parser.add_argument("out")
    parser.add_argument("--title", default="make demo")
    args = parser.parse_args()
    holds, faults = read(args.holds)
    if not holds:
        print("timeline: no holds in", args.holds, file=sys.stderr)
        return 1
    draw(holds, faults, args.out, args.title)
    unfinished = sum(1 for h in holds if h.end is None)
    print(
        f"timeline: {len(holds)} holds of {len({h.key for h in holds})} keys "
        f"({unfinished} without their end), {len(faults)} faults: {args.out}"
    )
    bad = overlaps(holds)
    for a, b in bad:
        print(
            f"timeline: OVERLAP on {a.key}: fence {a.fence} ({a.lang}) until {a.end}, "
            f"fence {b.fence} ({b.lang}) from {b.start}",
            file=sys.stderr,
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
