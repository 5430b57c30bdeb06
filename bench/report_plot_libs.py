#!/usr/bin/python3
"""uPlot (npm, what titan report inlines) against Debian's libjs-dygraphs on the same page, in
the same headless Chromium, in the same run: the size each library adds to a self-contained
page, and the time to draw the same plots (24 plots of 4 series x 4,000 points, the size of a
decimated titan report page, then one plot of 1,000,000 points).

usage: report_plot_libs.py UPLOT_DIR DYGRAPHS_DIR [--runs 5]
  UPLOT_DIR: bash scripts/uplot.sh prints it; DYGRAPHS_DIR: /usr/share/javascript/dygraphs
  (apt-get install libjs-dygraphs).
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import tempfile

PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><style>{css}</style></head>
<body><div id="plots"></div><script>{lib}</script><script>
const POINTS = {points}, PLOTS = {plots}, SERIES = 4;
function data(n) {{
  const cols = [new Float64Array(n)];
  for (let s = 0; s < SERIES; s++) cols.push(new Float64Array(n));
  for (let i = 0; i < n; i++) {{
    cols[0][i] = i;
    for (let s = 0; s < SERIES; s++) cols[s + 1][i] = Math.sin(i / 50 + s) * 10 + s * 5 + (i % 997 === 0 ? 40 : 0);
  }}
  return cols;
}}
const sets = []; for (let p = 0; p < PLOTS; p++) sets.push(data(POINTS));
const t0 = performance.now();
for (const cols of sets) {{
  const div = document.createElement("div");
  document.getElementById("plots").append(div);
  {draw}
}}
document.documentElement.dataset.ms = (performance.now() - t0).toFixed(1);
</script></body></html>"""

DRAW = {
    "uplot": """new uPlot({width: 1000, height: 250, series: [{}, ...[0,1,2,3].map(i => ({label: "s" + i, stroke: "#" + (i * 3 + 3) + "6c"}))]},
                 Array.from(cols, c => Array.from(c)), div);""",
    "dygraphs": """div.style.width = "1000px"; div.style.height = "250px";
                 const rows = new Array(cols[0].length);
                 for (let i = 0; i < rows.length; i++) rows[i] = [cols[0][i], cols[1][i], cols[2][i], cols[3][i], cols[4][i]];
                 new Dygraph(div, rows, {labels: ["x", "s0", "s1", "s2", "s3"]});""",
}


def render(chrome, html):
    p = subprocess.run([chrome, "--headless", "--no-sandbox", "--disable-gpu",
                        "--virtual-time-budget=60000", "--window-size=1100,800", "--dump-dom",
                        "file://" + html], capture_output=True, text=True, timeout=300)
    m = re.search(r'data-ms="([0-9.]+)"', p.stdout)
    if not m:
        raise SystemExit(f"{html} did not render: {p.stderr[-2000:]}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("uplot_dir")
    ap.add_argument("dygraphs_dir")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    chrome = shutil.which("chromium-headless-shell") or shutil.which("chromium")
    libs = {
        "uplot": (open(os.path.join(a.uplot_dir, "uPlot.iife.min.js")).read(),
                  open(os.path.join(a.uplot_dir, "uPlot.min.css")).read()),
        "dygraphs": (open(os.path.join(a.dygraphs_dir, "dygraph.min.js")).read(),
                     open(os.path.join(a.dygraphs_dir, "dygraph.min.css")).read()
                     if os.path.exists(os.path.join(a.dygraphs_dir, "dygraph.min.css")) else ""),
    }
    tmp = tempfile.mkdtemp(prefix="titan-plot-libs-")
    print(f"{'case':34} {'library':9} {'lib KiB':>8} {'median ms':>10} {'runs ms'}")
    for case, points, plots in (("24 plots x 4 series x 4,000 points", 4000, 24),
                                ("1 plot x 4 series x 1,000,000 points", 1_000_000, 1)):
        medians = {}
        for name, (js, css) in libs.items():
            html = os.path.join(tmp, f"{name}-{points}.html")
            with open(html, "w") as f:
                f.write(PAGE.format(css=css, lib=js, points=points, plots=plots, draw=DRAW[name]))
            times = []
            for _ in range(a.runs):  # interleaved would be fairer on a busy machine; runs are short
                times.append(render(chrome, html))
            medians[name] = statistics.median(times)
            print(f"{case:34} {name:9} {len(js) // 1024:8} {medians[name]:10.1f} "
                  f"{' '.join(f'{t:.0f}' for t in times)}")
        print(f"{'':34} dygraphs / uplot: {medians['dygraphs'] / medians['uplot']:.2f}x")
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
