#!/usr/bin/env bash
# Regenerates the pictures the README shows: the terminal view of `occupancy plot` (rich's
# SVG export, then a PNG through headless Chromium), the PNG charts, and the HTML report.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
chrome=(chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run
        --disable-background-networking --disable-component-update --disable-sync
        "--user-data-dir=$tmp/profile")
python - <<'PY'
from rich.console import Console
from occupancy import load_device, solve
from occupancy.output.terminal import plot_view
from occupancy.core.whatif import Config, sweeps
dev = load_device("a100")
con = Console(record=True, width=80, file=open("/dev/null", "w"))
con.print(plot_view(dev, solve(dev, 256, 40), sweeps(dev, Config(256, 40, 0))))
con.save_svg("docs/plot-terminal.svg", title="occupancy plot -d a100 -t 256 -r 40")
PY
"${chrome[@]}" --window-size=1000,1380 --screenshot=docs/plot-terminal.png "file://$PWD/docs/plot-terminal.svg"
occupancy plot -d a100 -t 256 -r 40 -o docs/plot-a100.png
occupancy report -d v100 -d h200 --tile matmul -n 4096 \
  --measured bench/results/h200-2026-11-30/measure.json -o "$tmp/report.html"
"${chrome[@]}" --window-size=1360,2000 --screenshot=docs/report-html.png "file://$tmp/report.html"
rm -rf "$tmp"
