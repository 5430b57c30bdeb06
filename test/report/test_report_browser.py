"""titan report end to end, checked in a real browser (headless Chromium).

Every input is made by the real titan commands (titan load against serve-sim, titan load sweep,
titan trace analyze on ../shared's real PyTorch profiler traces, titan sim, titan run of a light
worker with an injected crash, a real titan agent's recorder dump), then drawn with
`titan report` and opened in headless Chromium:
  - the page sets data-titan-ready, data-titan-plots equals the number of plots in its data, and
    no error was caught on the page (window.onerror, console.error, CSP violations);
  - no network request: Chromium is pointed at a local proxy that counts every connection
    (loopback included) and it must see none;
  - a full-page screenshot has plot pixels (colored, non-gray).
Negative controls prove each check can fail: a page with a remote image reaches the proxy, a
blank page has no plot pixels, a page with broken data reports an error.

Set TITAN_REPORT_SCREENSHOTS=DIR to keep one screenshot per kind (docs/ uses them).
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SHARED = ROOT.parent / "shared"
TITAN = os.environ.get("TITAN_BIN", str(ROOT / "build/release/tools/titan/titan"))
PY = "/usr/bin/python3"
TRACES = SHARED / "data/traces/hta_trace_filter_2rank"
SCREENSHOTS = os.environ.get("TITAN_REPORT_SCREENSHOTS")
MAX_REPORT_BYTES = 10 * 1024 * 1024

sys.path.insert(0, str(ROOT / "test/agent"))
sys.path.insert(0, str(ROOT / "test/load"))
from test_grafana_dashboard import send_training_events  # noqa: E402  (the agent's wire format)
from test_load_e2e import serve_sim as start_serve_sim  # noqa: E402
sys.path.insert(0, str(ROOT / "test/gateway"))
from test_gateway_e2e import gateway as start_gateway  # noqa: E402


def chromium():
    for name in ("chromium-headless-shell", "chromium"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("no headless Chromium: apt-get install chromium-headless-shell "
                "(scripts/bootstrap.sh installs it)")


def run(cmd, timeout=120, ok=True, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    if ok and p.returncode != 0:
        raise AssertionError(f"{cmd} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


class CountingProxy:
    """A TCP listener that Chromium uses as its HTTP proxy: every request the page makes, to any
    host, arrives here as a connection. It answers nothing and counts."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.connections += 1
            conn.close()

    def close(self):
        self.stop = True
        self.thread.join()
        self.sock.close()


class Browsed:
    def __init__(self, attrs, connections, stderr, png):
        self.attrs, self.connections, self.stderr, self.png = attrs, connections, stderr, png


def browse(html, png):
    """Opens `html` in headless Chromium twice (DOM after the scripts ran; a full-page
    screenshot), both through a counting proxy."""
    proxy = CountingProxy()
    try:
        common = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                  "--disable-dev-shm-usage", "--no-first-run", "--disable-extensions",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--disable-default-apps",
                  f"--proxy-server=http://127.0.0.1:{proxy.port}",
                  "--proxy-bypass-list=<-loopback>",  # loopback goes through the proxy too
                  "--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000",
                  f"--user-data-dir={tempfile.mkdtemp(prefix='titan-chromium-')}"]
        url = Path(html).resolve().as_uri()
        dom = run(common + ["--dump-dom", url], timeout=120)
        shot = run(common + ["--window-size=1200,3200", f"--screenshot={png}", url], timeout=120)
        time.sleep(0.3)  # a late request would still be counted
        m = re.search(r"<html([^>]*)>", dom.stdout)
        assert m, f"no <html> in Chromium's DOM dump:\n{dom.stdout[:2000]}\n{dom.stderr[-2000:]}"
        attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', m.group(1)))
        return Browsed(attrs, proxy.connections, dom.stderr + shot.stderr, png)
    finally:
        proxy.close()


def plot_pixels(png):
    """Pixels of plot color: saturated (not white, gray or black text)."""
    from PIL import Image  # Debian python3-pil
    img = Image.open(png).convert("RGB")
    small = img.resize((img.width // 2, img.height // 2))
    return sum(1 for r, g, b in small.getdata() if max(r, g, b) - min(r, g, b) > 60)


def page_data(html):
    text = Path(html).read_text()
    m = re.search(r'<script id="titan-report-data" type="application/json">(.*?)</script>', text,
                  re.S)
    assert m, "the page has no report data"
    return json.loads(m.group(1))


def drawn_blocks(data):
    return sum(1 for s in data["sections"] for b in s["blocks"] if b["type"] in ("plot", "heatmap"))


def check_page(html, kind, min_plots, min_pixels=2000):
    """The checks every report kind must pass in the browser. `min_pixels`: plot-colored pixels
    the screenshot must have (a blank page has 0); lower only for plots of a few points."""
    size = os.path.getsize(html)
    assert size <= MAX_REPORT_BYTES, f"{html}: {size} bytes"
    data = page_data(html)
    expected = drawn_blocks(data)
    assert expected >= min_plots, f"{kind}: {expected} plots in the data, expected >= {min_plots}"
    png = os.path.join(os.path.dirname(html), f"{kind}.png")
    b = browse(html, png)
    assert b.attrs.get("data-titan-ready") == "1", f"{kind}: page not ready: {b.attrs}\n{b.stderr[-3000:]}"
    assert "data-titan-errors" not in b.attrs, f"{kind}: errors on the page: {b.attrs['data-titan-errors']}"
    assert int(b.attrs.get("data-titan-plots", -1)) == expected, f"{kind}: {b.attrs}"
    assert b.connections == 0, f"{kind}: the page made {b.connections} network connection(s)"
    assert "Uncaught" not in b.stderr, b.stderr[-3000:]
    pixels = plot_pixels(png)
    assert pixels > min_pixels, f"{kind}: screenshot has {pixels} plot pixels: blank?"
    if SCREENSHOTS:
        os.makedirs(SCREENSHOTS, exist_ok=True)
        shutil.copy(png, os.path.join(SCREENSHOTS, f"report-{kind}.png"))
    return b


def report(inputs, out, *extra, ok=True):
    return run([TITAN, "report", *map(str, inputs), "-o", str(out), *extra], ok=ok)


# ---------------------------------------------------------------------------------------------
# Inputs, made once by the real titan commands.

@pytest.fixture(scope="module")
def work():
    with tempfile.TemporaryDirectory(prefix="titan-report-") as tmp:
        yield Path(tmp)


@pytest.fixture(scope="module")
def serve_sim():
    with start_serve_sim("--max-num-seqs", "8", "--itl-base", "5ms") as (url, _):
        yield url


@pytest.fixture(scope="module")
def load_json(work, serve_sim):
    out = work / "load.json"
    run([TITAN, "load", "--url", serve_sim, "--arrivals", "burst:quiet=2s,size=40,repeat=2,rate=10",
         "--duration", "6s", "--input-tokens", "32", "--output-tokens", "16",
         "--slo", "p99_ttft=300ms", "--json", str(out), "--report", str(work / "load-own.html"),
         "-q"], ok=False, timeout=60)
    assert out.exists()
    return out


@pytest.fixture(scope="module")
def sweep_json(work, serve_sim):
    out = work / "sweep.json"
    run([TITAN, "load", "sweep", "--url", serve_sim, "--slo", "p99_ttft=150ms", "--start-rate", "20",
         "--probe-duration", "2s", "--repeats", "1", "--output-tokens", "16", "--input-tokens", "32",
         "--json", str(out)], ok=False, timeout=120)
    assert out.exists()
    return out


@pytest.fixture(scope="module")
def trace_json(work):
    if not TRACES.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{TRACES} is missing (CI has ../shared beside the clone)")
        pytest.skip(f"{TRACES} not here")
    out = work / "trace.json"
    p = run([TITAN, "trace", "analyze", "--json", str(TRACES), "--report",
             str(work / "trace-own.html")])
    out.write_text(p.stdout)
    return out


@pytest.fixture(scope="module")
def sim_json(work):
    out = work / "sim.json"
    out.write_text(run([TITAN, "sim", "llama3-16k", "--replicas", "40", "--json"]).stdout)
    sweep = work / "sim_sweep.json"
    sweep.write_text(run([TITAN, "sim", "llama3-16k", "--replicas", "40", "--json",
                          "--sweep", "gpus=1024,4096,16384,65536"]).stdout)
    return out, sweep


@pytest.fixture(scope="module")
def run_dir(work):
    """A real titan run: 2 light workers (titan.client step events, no PyTorch), a crash of
    rank 1 injected at step 30 and recovered."""
    d = work / "run"
    d.mkdir()
    ckpt = work / "run-ckpt"
    ckpt.mkdir()
    run([TITAN, "run", "--run-dir", str(d), "--checkpoint-dir", str(ckpt), "--quiet",
         "--nproc-per-node", "2", "--failure-grace", "1", "--inject", "crash@rank=1,step=30",
         "--", PY, str(ROOT / "bench/run_light_worker.py"), "--step-ms", "20", "--seconds", "8"],
        timeout=120)
    assert (d / "events.jsonl").exists() and (d / "ledger.json").exists()
    return d


@pytest.fixture(scope="module")
def agent_dump(work):
    """A real titan agent's recorder dump (GET /recorder) after training events with a slow
    step (a transient) and a checkpoint."""
    sock = str(work / "agent.sock")
    proc = subprocess.Popen([TITAN, "agent", "--listen", "127.0.0.1", "--port", "0", "--socket",
                             sock, "--interval", "50ms", "--recorder", "1m", "--run-for", "60"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        port = None
        deadline = time.time() + 15
        while port is None and time.time() < deadline:
            line = proc.stdout.readline()
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            if m:
                port = int(m.group(1))
            elif not line:
                break
        assert port, "titan agent did not start"
        send_training_events(sock)
        time.sleep(2.5)
        out = work / "agent-dump.json"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/recorder?last=60s", timeout=10) as r:
            out.write_bytes(r.read())
        return out
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def gateway_log(work):
    """A real titan gateway in front of three serve-sims, one turning 5x slower after 2 s (it is
    ejected), with a queue too small for the bursts that titan load sends (requests are shed)."""
    with start_serve_sim("--itl-base", "2ms") as (a, _), start_serve_sim("--itl-base", "2ms") as (b, _), \
            start_serve_sim("--itl-base", "2ms", "--fault", "slow=5@2s") as (slow, _):
        with start_gateway("--replica", a, "--replica", b, "--replica", slow, "--routing",
                           "round_robin", "--outlier-interval", "500ms", "--max-inflight", "4",
                           "--max-queue", "8", ready=3) as (gw, _, events):
            run([TITAN, "load", "--url", gw, "--arrivals", "burst:quiet=1s,size=60,repeat=4,rate=20",
                 "--duration", "7s", "--output-tokens", "20", "--input-tokens", "16", "-q"],
                ok=False, timeout=60)
            evs = events()
    out = work / "gateway-events.jsonl"
    out.write_text("".join(json.dumps(e) + "\n" for e in evs))
    return out


# ---------------------------------------------------------------------------------------------
# Each kind in the browser.

def test_load_run_report(work, load_json):
    out = work / "load.html"
    p = report([load_json], out)
    assert "wrote" in p.stdout
    data = page_data(out)
    titles = [b.get("title") for s in data["sections"] for b in s["blocks"]]
    assert "Latency distribution (by percentile)" in titles
    rates = next(b for s in data["sections"] for b in s["blocks"] if b.get("title") == "Requests per second")
    assert any(m["label"] == "burst" for m in rates["marks"]), "the bursts are not marked"
    check_page(out, "load", min_plots=3)


def test_load_sweep_report(work, sweep_json):
    out = work / "sweep.html"
    report([sweep_json], out)
    data = page_data(out)
    ttft = next(b for s in data["sections"] for b in s["blocks"] if b.get("title") == "TTFT against offered load")
    assert ttft["hlines"] and ttft["hlines"][0]["y"] == 150, "the SLO line is missing"
    sweep = json.loads(sweep_json.read_text())
    if sweep["knee_found"]:
        assert ttft["marks"][0]["label"] == "knee"
    check_page(out, "sweep", min_plots=3)


def test_load_and_trace_analyze_write_their_own_report(work, load_json, trace_json):
    """`titan load --report` and `titan trace analyze --report` draw the same page as titan
    report on their JSON."""
    for own, kind in ((work / "load-own.html", "load-own"), (work / "trace-own.html", "trace-own")):
        assert own.exists(), f"{own} was not written"
        check_page(own, kind, min_plots=3)


def test_the_page_prints(work, sim_json):
    """Print to PDF (what a browser's print does): several pages, with the plots on them."""
    html = work / "sim-print.html"
    report([sim_json[1]], html)
    pdf = work / "sim.pdf"
    run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=10000",
         "--no-pdf-header-footer", f"--print-to-pdf={pdf}", html.resolve().as_uri()])
    data = pdf.read_bytes()
    pages = len(re.findall(rb"/Type\s*/Page[^s]", data))
    assert data.startswith(b"%PDF") and pages >= 2, (len(data), pages)
    assert len(re.findall(rb"/Subtype\s*/Image", data)) >= 3, "the plots (canvases) are not in the PDF"


def test_trace_report(work, trace_json):
    out = work / "trace.html"
    report([trace_json], out)
    data = page_data(out)
    heatmaps = [b for s in data["sections"] for b in s["blocks"] if b["type"] == "heatmap"]
    assert heatmaps and len(heatmaps[0]["rows"]) == 2, "no ranks x collectives heatmap"
    check_page(out, "trace", min_plots=4)


def test_sim_reports(work, sim_json):
    one, sweep = sim_json
    check_page(report([one], work / "sim.html") and work / "sim.html", "sim", min_plots=2)
    out = work / "sim_sweep.html"
    report([sweep], out)
    data = page_data(out)
    ettr = next(b for s in data["sections"] for b in s["blocks"] if b.get("title", "").startswith("ETTR"))
    assert ettr["bands"], "no confidence band"
    assert ettr["data"][0] == [1024, 4096, 16384, 65536]
    check_page(out, "sim-sweep", min_plots=3)


def test_run_report(work, run_dir):
    out = work / "run.html"
    report([run_dir / "events.jsonl", run_dir / "ledger.json"], out)
    data = page_data(out)
    timeline = next(b for s in data["sections"] for b in s["blocks"] if b.get("title", "").startswith("Timeline"))
    labels = " ".join(m["label"] for m in timeline["marks"])
    assert "injected crash" in labels and "crash" in labels and "restart" in labels, labels
    steps = next(b for s in data["sections"] for b in s["blocks"] if b.get("title") == "Step time per rank")
    assert len(steps["series"]) == 2, steps["series"]
    # The ranks mark their compute (client.mark("compute")): plotted per rank too.
    compute = next(b for s in data["sections"] for b in s["blocks"] if b.get("title") == "Compute time per rank")
    assert len(compute["series"]) == 2, compute["series"]
    check_page(out, "run", min_plots=4)


def test_agent_dump_report(work, agent_dump):
    out = work / "agent.html"
    report([agent_dump], out)
    data = page_data(out)
    blocks = [b for s in data["sections"] for b in s["blocks"]]
    transients = next(b for b in blocks if b.get("title") == "Transients")
    assert transients["rows"], "the slow step's transient is not in the report"
    steps = next(b for b in blocks if b.get("title") == "Step time per rank")
    assert max(v for v in steps["data"][2] if v is not None) >= 290, "the 300 ms step is lost"
    check_page(out, "agent", min_plots=3)


def test_diagnosis_report(work):
    """titan diagnose --json drawn: the incident's lines across ranks on one clock, root marked."""
    logs = work / "diag-logs"
    logs.mkdir(exist_ok=True)
    (logs / "dmesg.log").write_text(
        "[Mon May  6 10:00:04 2024] NVRM: Xid (PCI:0000:3b:00): 79, pid=777, name=python3, "
        "GPU has fallen off the bus.\n")
    (logs / "rank0.log").write_text("".join(
        f"2024-05-06 10:10:0{r} [rank{r}]:[E ProcessGroupNCCL.cpp:607] [Rank {r}] Watchdog caught "
        f"collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
        f"Timeout(ms)=600000) ran for 600010 milliseconds before timing out.\n" for r in range(4)))
    diagnosis = work / "diagnosis.json"
    run([TITAN, "diagnose", str(logs), "--json", str(diagnosis), "-q"])
    out = work / "diagnosis.html"
    report([diagnosis], out)
    data = page_data(out)
    blocks = [b for s in data["sections"] if s["title"] == "Diagnosis" for b in s["blocks"]]
    timeline = next(b for b in blocks if b.get("title") == "Incident 1: its lines across ranks")
    assert [m["label"] for m in timeline["marks"]] == ["root"]
    lines = next(b for b in blocks if b.get("title", "").startswith("Incident 1: gpu_hardware"))
    assert lines["rows"][0][0] == "ROOT" and "Xid" in lines["rows"][0][4], lines["rows"][0]
    # Five points and the root's mark line: a few hundred plot pixels (367 measured), not the
    # thousands of the line plots' pages.
    check_page(out, "diagnosis", min_plots=1, min_pixels=200)


def test_gateway_report(work, gateway_log):
    out = work / "gateway.html"
    report([gateway_log], out)
    data = page_data(out)
    section = data["sections"][0]
    assert section["title"].startswith("Gateway: 3 replicas"), section["title"]
    plot = next(b for b in section["blocks"] if b.get("title", "").startswith("Shed, retried and hedged"))
    assert sum(v for v in plot["data"][1] if v) > 0, "no shed request counted"
    assert any(m["label"].startswith("eject ") for m in plot["marks"]), plot["marks"]
    check_page(out, "gateway", min_plots=1)


def test_directory_report(work, run_dir, agent_dump, load_json):
    d = work / "combined"
    shutil.copytree(run_dir, d / "run")
    shutil.copy(agent_dump, d / "agent-dump.json")
    shutil.copy(load_json, d / "load.json")
    (d / "notes.json").write_text('{"not": "titan"}')
    out = work / "combined.html"
    report([d], out)
    data = page_data(out)
    titles = [s["title"] for s in data["sections"]]
    assert any(t.startswith("Training run") for t in titles), titles
    assert any(t.startswith("Load test") for t in titles), titles
    assert "Agent recorder dump" in titles and titles[-1] == "Other files", titles
    check_page(out, "directory", min_plots=8)


# ---------------------------------------------------------------------------------------------
# The checks themselves can fail (negative controls).

def test_the_proxy_sees_a_page_that_fetches(work):
    page = work / "fetches.html"
    page.write_text('<html><body><img src="http://198.51.100.7/x.png">'
                    '<script>fetch("http://127.0.0.1:9/y")</script></body></html>')
    b = browse(page, str(work / "fetches.png"))
    assert b.connections > 0


def test_a_blank_page_has_no_plot_pixels(work):
    page = work / "blank.html"
    page.write_text("<html><body><p>nothing drawn</p></body></html>")
    b = browse(page, str(work / "blank.png"))
    assert plot_pixels(b.png) == 0


def test_a_page_with_broken_data_reports_its_error(work, sim_json):
    good = work / "sim.html"
    report([sim_json[0]], good)
    broken = work / "broken.html"
    text = good.read_text()
    start = text.index('<script id="titan-report-data"')
    end = text.index("</script>", start)
    broken.write_text(text[:start] + '<script id="titan-report-data" type="application/json">'
                      '{"title":"x","sections":[{"title":"s","blocks":[{"type":"plot"}]}]}'
                      + text[end:])
    b = browse(broken, str(work / "broken.png"))
    assert "data-titan-errors" in b.attrs, b.attrs


# ---------------------------------------------------------------------------------------------
# Bad input: clear errors, nothing written.

def test_bad_inputs_get_clear_errors_and_leave_the_output_alone(work, load_json):
    out = work / "kept.html"
    out.write_text("OLD")
    unknown = work / "unknown.json"
    unknown.write_text('{"hello": "world"}')
    truncated = work / "truncated.json"
    truncated.write_text(load_json.read_text()[:500])
    mismatched = work / "mismatched.json"
    mismatched.write_text('{"kind": "titan.load.run", "latency": 3}')
    for path, expect in [(unknown, "not a titan result"), (truncated, "ends early"),
                         (mismatched, "field"), (work / "absent.json", "absent.json")]:
        p = report([path], out, ok=False)
        assert p.returncode == 1, (path, p.stdout, p.stderr)
        assert str(path.name) in p.stderr and expect in p.stderr, p.stderr
        assert out.read_text() == "OLD", "a failed report touched the output"
    leftovers = [f for f in os.listdir(work) if f.startswith("kept.html") and f != "kept.html"]
    assert not leftovers, leftovers
    empty = work / "empty-dir"
    empty.mkdir()
    p = report([empty], out, ok=False)
    assert p.returncode == 1 and "no titan result" in p.stderr
