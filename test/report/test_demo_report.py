"""The README's first command ends with a report: `titan demo --with-agent` (real PyTorch DDP
workers under titan run, a real etcd and titan agent; fewer steps than the README's run) must
print the path of report.html, and the page must pass the browser checks of every report
(test_report_browser.check_page): ready, every plot drawn, no error, no network request, plot
pixels in the screenshot. It must hold both jobs, the agent's recorder and the injected faults."""
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_report_browser import TITAN, check_page, page_data  # noqa: E402


def test_demo_ends_with_a_report_that_opens():
    with tempfile.TemporaryDirectory(prefix="titan-demo-report-") as tmp:
        out = os.path.join(tmp, "demo")
        p = subprocess.run([TITAN, "demo", "--with-agent", "--steps", "80", "--out-dir", out],
                           capture_output=True, text=True, timeout=420)
        assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
        # One verdict line on the injected straggler (rank 3): titan run names it from the ranks'
        # compute marks, and titan agent, which receives the same marks, agrees.
        verdict = re.search(r"^verdict: rank (\d+) is the straggler.*$", p.stdout, re.M)
        assert verdict, p.stdout[-3000:]
        assert verdict.group(1) == "3", verdict.group(0)
        assert "titan agent agrees" in verdict.group(0), verdict.group(0)
        assert "rank 3 late against its peers" in verdict.group(0), verdict.group(0)
        print(verdict.group(0))
        m = re.search(r"^  report: (\S+report\.html) ", p.stdout, re.M)
        assert m, f"the demo did not print its report's path:\n{p.stdout[-3000:]}"
        html = m.group(1)
        data = page_data(html)
        titles = [s["title"] for s in data["sections"]]
        assert titles[:2] == ["Training run: job faulty", "Training run: job reference"], titles
        assert "Agent recorder dump" in titles, titles
        faulty = data["sections"][0]
        timeline = next(b for b in faulty["blocks"] if b.get("title", "").startswith("Timeline"))
        labels = " ".join(m["label"] for m in timeline["marks"])
        for fault in ("injected slow", "injected crash", "injected hang"):
            assert fault in labels, labels
        check_page(html, "demo", min_plots=10)
