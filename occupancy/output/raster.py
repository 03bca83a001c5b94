"""PNG / PDF charts through matplotlib (the optional `plot` extra, imported lazily)."""

from __future__ import annotations

from occupancy.core.errors import OccupancyError
from occupancy.core.whatif import Curve
from occupancy.output.charts import _COLOURS, _LABEL, LETTER, _segments, ticks, value_text

PLOT_HINT = "PNG and PDF charts need matplotlib: pip install 'occupancy[plot]' (or write .svg)"


def save_figure(curves: tuple[Curve, ...], path: str, title: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise OccupancyError(PLOT_HINT) from None
    fig, axes = plt.subplots(1, len(curves), figsize=(5.2 * len(curves), 3.8))
    for ax, c in zip(axes, curves, strict=True):
        segs = _segments(c)
        for i, (a, b, lim) in enumerate(segs):
            end = segs[i + 1][0] if i + 1 < len(segs) else b
            ax.axvspan(a, max(end, a + 1e-9), color=_COLOURS[lim], alpha=0.12, lw=0)
            share = (end - a) / max(c.points[-1].x - c.points[0].x, 1)
            word = _LABEL[lim] if share > 0.12 else LETTER.get(lim, "-") if share > 0.02 else ""
            if word:  # the name where it fits, else the limiter's letter (as the SVG)
                ax.text((a + end) / 2, 103, word, ha="center", fontsize=8, color=_COLOURS[lim])
        ax.step([p.x for p in c.points], [p.occupancy * 100 for p in c.points], where="post",
                color="#222", lw=1.5)
        ax.plot([c.current.x], [c.current.occupancy * 100], "o", color="#d62728")
        ax.annotate(f"now: {value_text(c.current.x, c.x_label)}, "
                    f"{c.current.occupancy * 100:.0f}%",
                    (c.current.x, c.current.occupancy * 100), textcoords="offset points",
                    xytext=(6, 6), color="#d62728", fontsize=8)
        marks = ticks(c.points[0].x, c.points[-1].x, c.x_label)
        ax.set_xticks([x for x, _ in marks], [t for _, t in marks])
        ax.set_ylim(0, 110)
        ax.set_xlabel(c.x_label)
        ax.set_ylabel("occupancy (%)")
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    import os
    import tempfile

    # The whole file or nothing: draw into a temp file beside it, then rename.
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".occupancy-",
                                   suffix=os.path.splitext(path)[1])
        os.close(fd)
    except OSError as exc:
        plt.close(fig)
        raise OccupancyError(f"-o {path}: cannot write there: {exc.strerror}") from None
    try:
        fig.savefig(tmp, dpi=110)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600, as an SVG or a report gets it
        os.replace(tmp, path)
    except (OSError, ValueError) as exc:
        raise OccupancyError(f"-o {path}: cannot write the chart: {exc}") from None
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.unlink(tmp)
