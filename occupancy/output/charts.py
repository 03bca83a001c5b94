"""Drawing the what-if curves: as text (terminal, 80 columns, no colour needed) and as SVG.

Both read a sweeps.Curve and nothing else. The limiter is always spelled out, not only
coloured: a letter per column under the text chart, labelled bands in the SVG.
"""

from __future__ import annotations

from html import escape

from occupancy.core.whatif import Curve, Point

LETTER = {"warps": "W", "registers": "R", "shared_memory": "S", "blocks": "B", "barriers": "X"}
LEGEND = ("# occupancy at or above the row, . within half a row below it, | now\n"
          "limiter: W warps, R registers, S shared memory, B blocks, X barriers, - none")
_COLOURS = {"warps": "#4e79a7", "registers": "#e15759", "shared_memory": "#59a14f",
            "blocks": "#f28e2b", "barriers": "#b07aa1", "none": "#999999"}
_LABEL = {"warps": "warps", "registers": "registers", "shared_memory": "shared memory",
          "blocks": "blocks", "barriers": "barriers", "none": "cannot launch"}


def ticks(lo: float, hi: float, label: str, most: int = 6) -> list[tuple[float, str]]:
    """Round axis ticks and their text: bytes at power-of-two KB (16 KB, 32 KB, ...), other
    counts at 1-2-5 steps (64, 128, ...: powers of two for threads and registers)."""
    span = max(hi - lo, 1)
    in_bytes = "bytes" in label
    if in_bytes:
        steps = [1024 * 2 ** k for k in range(0, 16)]
    elif "threads" in label or "registers" in label:
        steps = [2 ** k for k in range(0, 16)]
    else:
        steps = [m * 10 ** k for k in range(0, 10) for m in (1, 2, 5)]
    step = next((s for s in steps if span / s <= most), steps[-1])
    first = -(-int(lo) // step) * step
    out: list[tuple[float, str]] = []
    x = first
    while x <= hi and len(out) < most + 1:
        out.append((float(x), f"{x // 1024:,} KB" if in_bytes else f"{x:,}"))
        x += step
    return out


def value_text(x: int, label: str) -> str:
    """A point's x as the axis writes it: 12,288 B is '12 KB', 1,000 B stays '1,000 B'."""
    if "bytes" in label:
        return f"{x // 1024:,} KB" if x % 1024 == 0 else f"{x:,} B"
    return f"{x:,}"


def _at(curve: Curve, x: float) -> Point:
    """The point in effect at x (the curves are steps: the last point at or before x)."""
    best = curve.points[0]
    for p in curve.points:
        if p.x <= x:
            best = p
        else:
            break
    return best


def _limiter(p: Point) -> str:
    return p.limiters[0] if p.active_blocks_per_sm and p.limiters else "none"


def text_chart(curve: Curve, width: int = 60, height: int = 8) -> list[str]:
    """Rows of a step chart: y 0-100% occupancy, x the curve's range, current point marked."""
    xs = [p.x for p in curve.points]
    lo, hi = xs[0], xs[-1]
    span = max(hi - lo, 1)
    cols = [_at(curve, lo + span * i / (width - 1)) for i in range(width)]
    cur_col = round((curve.current.x - lo) / span * (width - 1))
    lines = [f"{curve.x_label}: now {value_text(curve.current.x, curve.x_label)} -> "
             f"{curve.current.occupancy * 100:.1f}% ({curve.current.active_blocks_per_sm} blocks/SM)"]
    for row in range(height, 0, -1):
        level = row / height
        label = f"{level * 100:>4.0f}% |" if row in (height, height // 2) else "      |"
        cells = []
        for i, p in enumerate(cols):
            full = p.occupancy >= level - 1e-9
            half = p.occupancy >= level - 0.5 / height - 1e-9
            ch = "#" if full else ("." if half else " ")
            if i == cur_col and not full:
                ch = "|"
            cells.append(ch)
        lines.append(label + "".join(cells))
    axis = "      +" + "".join("^" if i == cur_col else "-" for i in range(width))
    lines.append(axis)
    lines.append("       " + "".join(LETTER.get(_limiter(p), "-") for p in cols))
    left, right = value_text(lo, curve.x_label), value_text(hi, curve.x_label)
    lines.append("       " + left + " " * max(1, width - len(left) - len(right)) + right)
    return lines


def _segments(curve: Curve) -> list[tuple[int, int, str]]:
    segs: list[tuple[int, int, str]] = []
    for p in curve.points:
        lim = _limiter(p)
        if segs and segs[-1][2] == lim:
            segs[-1] = (segs[-1][0], p.x, lim)
        else:
            segs.append((p.x, p.x, lim))
    return segs


def svg_chart(curve: Curve, title: str, width: int = 420, height: int = 260) -> str:
    """A self-contained SVG step chart with limiter bands and the current point."""
    ml, mr, mt, mb = 46, 30, 30, 42
    w, h = width - ml - mr, height - mt - mb
    xs = [p.x for p in curve.points]
    lo, hi = xs[0], xs[-1]
    span = max(hi - lo, 1)

    def px(x: float) -> float:
        return ml + (x - lo) / span * w

    def py(y: float) -> float:
        return mt + (1 - y) * h

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}" '
           'font-family="sans-serif" font-size="11">',
           f'<title>{escape(title)}</title>',
           f'<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>']
    segs = _segments(curve)
    for i, (a, b, lim) in enumerate(segs):
        x0 = px(a)
        x1 = px(segs[i + 1][0]) if i + 1 < len(segs) else px(b) + (w / max(len(xs), 1))
        x1 = min(x1, ml + w)
        out.append(f'<rect class="band" data-limiter="{lim}" x="{x0:.1f}" y="{mt}" '
                   f'width="{max(x1 - x0, 0.5):.1f}" height="{h}" fill="{_COLOURS[lim]}" '
                   f'fill-opacity="0.12"><title>{_LABEL[lim]}</title></rect>')
        # the word where it fits (~6 px a letter), else the legend's letter
        word = _LABEL[lim] if x1 - x0 > 6 * len(_LABEL[lim]) + 4 else \
            LETTER.get(lim, "-") if x1 - x0 >= 8 else ""
        if word:
            out.append(f'<text class="band-label" x="{(x0 + x1) / 2:.1f}" y="{mt + 12}" '
                       f'text-anchor="middle" fill="{_COLOURS[lim]}">{word}</text>')
    for frac in (0, 0.25, 0.5, 0.75, 1):
        y = py(frac)
        out.append(f'<line x1="{ml}" y1="{y:.1f}" x2="{ml + w}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{ml - 4}" y="{y + 4:.1f}" text-anchor="end">{frac * 100:.0f}%</text>')
    path = []
    for i, p in enumerate(curve.points):
        x, y = px(p.x), py(p.occupancy)
        if i == 0:
            path.append(f"M{x:.1f},{y:.1f}")
        else:
            path.append(f"H{x:.1f}V{y:.1f}")
    out.append(f'<path class="curve" d="{" ".join(path)}" fill="none" stroke="#222" '
               'stroke-width="1.6"/>')
    cx, cy = px(curve.current.x), py(curve.current.occupancy)
    out.append(f'<circle class="current" cx="{cx:.1f}" cy="{cy:.1f}" r="4.5" fill="#d62728"/>')
    # above the point, unless that reaches the band labels' row (mt + 2 .. mt + 12): then
    # below it; right of it, unless that leaves the plot
    now = f"now: {value_text(curve.current.x, curve.x_label)}, {curve.current.occupancy * 100:.0f}%"
    ny = cy - 7 if cy - 7 >= mt + 26 else min(cy + 24, mt + h - 4)
    nx = cx + 6 if cx + 6 + 6 * len(now) <= ml + w else cx - 6 - 6 * len(now)
    out.append(f'<text class="now" x="{max(nx, ml + 2):.1f}" y="{ny:.1f}" fill="#d62728">'
               f'{escape(now)}</text>')
    out.append(f'<line x1="{ml}" y1="{mt + h}" x2="{ml + w}" y2="{mt + h}" stroke="#222"/>')
    out.append(f'<line x1="{ml}" y1="{mt}" x2="{ml}" y2="{mt + h}" stroke="#222"/>')
    for x, text in ticks(lo, hi, curve.x_label):
        out.append(f'<line x1="{px(x):.1f}" y1="{mt + h}" x2="{px(x):.1f}" y2="{mt + h + 3}" '
                   'stroke="#222"/>')
        out.append(f'<text class="tick" x="{px(x):.1f}" y="{mt + h + 14}" '
                   f'text-anchor="middle">{text}</text>')
    out.append(f'<text x="{ml + w / 2:.1f}" y="{height - 8}" text-anchor="middle">'
               f'{escape(curve.x_label)}</text>')
    out.append(f'<text x="{ml}" y="{mt - 12}" font-weight="bold">{escape(title)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def svg_figure(curves: tuple[Curve, ...], title: str) -> str:
    """The three charts side by side in one standalone SVG file."""
    w, h = 420, 260
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w * len(curves)}" '
             f'height="{h + 24}" viewBox="0 0 {w * len(curves)} {h + 24}">',
             '<rect width="100%" height="100%" fill="white"/>',
             f'<text x="8" y="16" font-family="sans-serif" font-size="13" font-weight="bold">'
             f'{escape(title)}</text>']
    for i, c in enumerate(curves):
        inner = svg_chart(c, c.x_label).replace("<svg ", f'<svg x="{i * w}" y="24" ', 1)
        parts.append(inner)
    parts.append("</svg>")
    return "\n".join(parts)
