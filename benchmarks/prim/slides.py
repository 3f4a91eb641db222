"""Read the host-transfer charts of PrIM's slides (slides 19 and 20) from their vector drawing.

    python benchmarks/prim/slides.py Prim_Access22_Slides.pdf

The slides are the PrIM authors' deck for their IEEE Access 2022 paper
(github.com/cgiannoula/cgiannoula.github.io, assets/slides/Prim_Access22_Slides.pdf).
Slide 19 plots the bandwidth of one transfer to or from one DPU against its size
(8 B ... 32 MiB), slide 20 the bandwidth of 32 MiB in all against the DPUs of one rank
(1 ... 64) for five kinds of transfer; neither carries data labels but for slide 20's
five 64-DPU points. Both charts are vector drawings in the PDF: each point is a line's
vertex or a marker, and the axes' gridlines give the scale (log 10 on slide 19, log 2
on slide 20). This script reads the points, prints them, checks slide 20's against its
printed labels, and compares both with the tables the estimate uses
(edsl/dpu/timing.py HOST_SIZE_CURVE, HOST_DPU_CURVE): it exits 1 if any differs by more
than 1 %. Reading the PDF needs pypdf, which the project does not depend on: the
tables are what the estimate reads.

Which series is which: slide 19's legend puts CPU-DPU beside the light blue line's
marker and DPU-CPU beside the dark blue one's; slide 20's legend gives serial transfers
filled markers, parallel ones hollow markers (squares CPU-DPU, circles DPU-CPU) and the
broadcast a red line.
"""
from __future__ import annotations

import math
import pathlib
import sys

LIGHT, DARK, RED, WHITE = (0.0, 0.69, 0.941), (0.0, 0.125, 0.376), (0.753, 0.0, 0.0), (1.0, 1.0, 1.0)
GRID = (0.651, 0.651, 0.651)
SIZES = [8 * 4 ** k for k in range(12)]
DPUS = [1, 2, 4, 8, 16, 32, 64]


def _mul(a, b):
    return [a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
            a[2] * b[1] + a[3] * b[3], a[4] * b[0] + a[5] * b[2] + b[4], a[4] * b[1] + a[5] * b[3] + b[5]]


def _at(m, x, y):
    return m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5]


def drawing(page, reader):
    """The page's painted paths in page coordinates: (op, stroke colour, fill colour, points)
    for every subpath, op being 'S' (stroked), 'f' (filled) or 'B' (both); rectangles as their
    four corners."""
    from pypdf.generic import ContentStream
    ctm, stack, stroke, fill = [1, 0, 0, 1, 0, 0], [], None, None
    subs, cur, out = [], [], []
    for operands, op in ContentStream(page.get_contents(), reader).operations:
        op = op.decode() if isinstance(op, bytes) else op
        if op == "q":
            stack.append((ctm, stroke, fill))
        elif op == "Q":
            ctm, stroke, fill = stack.pop()
        elif op == "cm":
            ctm = _mul([float(v) for v in operands], ctm)
        elif op == "SC":
            stroke = tuple(round(float(v), 3) for v in operands)
        elif op == "sc":
            fill = tuple(round(float(v), 3) for v in operands)
        elif op == "m":
            if cur:
                subs.append(cur)
            cur = [_at(ctm, float(operands[0]), float(operands[1]))]
        elif op == "l":
            cur.append(_at(ctm, float(operands[0]), float(operands[1])))
        elif op == "c":
            cur.append(_at(ctm, float(operands[4]), float(operands[5])))
        elif op == "re":
            x, y, w, h = (float(v) for v in operands)
            if cur:
                subs.append(cur)
            cur = []
            subs.append([_at(ctm, x, y), _at(ctm, x + w, y), _at(ctm, x + w, y + h), _at(ctm, x, y + h)])
        elif op in ("S", "s", "f", "f*", "B", "B*", "b", "n"):
            if cur:
                subs.append(cur)
            if op != "n":
                kind = {"S": "S", "s": "S", "f": "f", "f*": "f"}.get(op, "B")
                out += [(kind, stroke, fill, s) for s in subs]
            subs, cur = [], []
    return out


def labels(page):
    """The page's text runs with their positions."""
    runs = []

    def visit(text, cm, tm, *_):
        if text.strip():
            runs.append((tm[4] * cm[0] + tm[5] * cm[2] + cm[4], tm[4] * cm[1] + tm[5] * cm[3] + cm[5], text.strip()))
    page.extract_text(visitor_text=visit)
    return runs


def _scale(items, values):
    """A function from a page y to the axis value, fitted through the horizontal gridlines
    (the axis' bottom line is the lowest tick), log-linear: `values` from bottom to top."""
    ys = sorted({round(p[0][1], 3) for op, stroke, _, p in items
                 if op == "S" and len(p) == 2 and stroke in (GRID, (0.0, 0.0, 0.0))
                 and abs(p[0][1] - p[1][1]) < 0.01 and abs(p[1][0] - p[0][0]) > 200 and 200 < p[0][1] < 420})
    assert len(ys) == len(values), (ys, values)
    n = len(ys)
    lv = [math.log(v) for v in values]
    my, mv = sum(ys) / n, sum(lv) / n
    slope = sum((y - my) * (v - mv) for y, v in zip(ys, lv)) / sum((y - my) ** 2 for y in ys)
    return lambda y: math.exp(mv + slope * (y - my))


def _centre(points):
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    return round((min(xs) + max(xs)) / 2, 2), round((min(ys) + max(ys)) / 2, 2)


def slide19(reader):
    items = drawing(reader.pages[18], reader)
    value = _scale(items, [1e-4, 1e-3, 1e-2, 1e-1, 1.0])
    out = {}
    for name, colour in (("to_dpu", LIGHT), ("from_dpu", DARK)):
        (line,) = [p for op, s, _, p in items if op == "S" and s == colour and len(p) == len(SIZES)]
        out[name] = [value(y) for _, y in line]
    return out


def slide20(reader):
    items = drawing(reader.pages[19], reader)
    value = _scale(items, [2.0 ** k for k in range(-4, 5)])
    lines = {s: p for op, s, _, p in items if op == "S" and len(p) == len(DPUS) and s in (LIGHT, DARK, RED)}
    xs = [x for x, _ in lines[RED]]

    def column(centres):
        got = []
        for x in xs:
            near = [c for c in centres if abs(c[0] - x) < 1.0]
            assert near, (x, centres)
            got.append(near[0][1])
        return got
    def markers(fill, corners):
        """Centres of the filled markers (about 10 points wide) of colour `fill`: squares
        have 4 corners, circles 5 points (four arcs)."""
        return sorted({_centre(p) for op, _, f, p in items if op in ("f", "B") and f == fill
                       and len(p) == corners and max(x for x, _ in p) - min(x for x, _ in p) < 20})
    # Serial: filled squares and circles; parallel CPU-DPU: white squares outlined light blue.
    filled_squares, filled_circles, hollow_squares = markers(LIGHT, 4), markers(DARK, 5), markers(WHITE, 4)
    # Dark circles' outlines: at each DPU count one of the serial curve (filled) and one of
    # the parallel curve (hollow); at 1 DPU the two lie a quarter point apart.
    circles = {_centre(p) for op, s, _, p in items if op == "S" and s == DARK and len(p) == 5}
    serial_from = column(filled_circles)
    parallel_from = []
    for x, y_serial in zip(xs, serial_from):
        near = [c for c in circles if abs(c[0] - x) < 1.0]
        parallel_from.append(max(near, key=lambda c: abs(c[1] - y_serial))[1])
    return {
        ("serial", "to_dpu"): [value(y) for y in column(filled_squares)],
        ("serial", "from_dpu"): [value(y) for y in serial_from],
        ("parallel", "to_dpu"): [value(y) for y in column(hollow_squares)],
        ("parallel", "from_dpu"): [value(y) for y in parallel_from],
        ("broadcast", "to_dpu"): [value(y) for _, y in lines[RED]],
    }, labels(reader.pages[19])


def main(pdf: str) -> int:
    import pypdf
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))
    from edsl.dpu import timing
    reader = pypdf.PdfReader(pdf)
    bad = 0

    def compare(what, read, table):
        nonlocal bad
        worst = max(abs(r / t - 1) for r, t in zip(read, table))
        bad += worst > 0.01
        print(f"{what:20} " + " ".join(f"{v:.4g}" for v in read) + f"   table: worst {worst:.2%}")

    print("slide 19, GB/s at " + ", ".join(str(s) for s in SIZES) + " bytes")
    for name, read in slide19(reader).items():
        compare(name, read, timing.HOST_SIZE_CURVE[name])
    curves, runs = slide20(reader)
    print("slide 20, GB/s at " + ", ".join(str(d) for d in DPUS) + " DPUs")
    for key, read in curves.items():
        compare("/".join(key), read, timing.HOST_DPU_CURVE[key])
    # The printed labels sit at the right end of the chart, each beside its curve's last point.
    printed = [(y, float(t)) for x, y, t in runs if x > 550 and t.replace(".", "", 1).isdigit()]
    for key, read in curves.items():
        y, label = min(printed, key=lambda p: abs(math.log(p[1] / read[-1])))
        # a label is printed to two decimals: the point agrees if it rounds to it, or within 1 %
        ok = round(read[-1], 2) == label or abs(read[-1] / label - 1) <= 0.01
        bad += not ok
        print(f"64 DPUs {'/'.join(key):18} read {read[-1]:.4g}, printed label {label:g}"
              f" ({read[-1] / label - 1:+.2%})")
    print("all within 1 %" if not bad else f"{bad} differ by more than 1 %")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
