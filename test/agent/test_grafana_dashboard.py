"""The Grafana dashboard (docs/grafana/titan-agent.json) against what `titan agent` really exports.

Grafana itself cannot run here (it is not in Debian), so the dashboard is checked statically:
every PromQL `expr` in it (panels, panels nested in rows, templating queries such as
label_values(metric, label), annotations) is tokenised and its metric names are extracted:
identifiers that are not PromQL functions, aggregations or keywords, not label names inside
{...} or by/without/on/ignoring(...), not strings, numbers or durations, not Grafana variables.
Each must be a family of a golden /metrics exposition of the real agent,
test/fixtures/agent_metrics.golden (histogram/summary suffixes _bucket/_sum/_count are stripped
only when the golden says the family is a histogram/summary).

The golden is checked against a live agent in the same test run, so it cannot rot: the real
`titan agent` is started on an ephemeral port, fed training events (steps on two ranks, one
slow step that the default z-score rule detects as a transient, a checkpoint) over its Unix
socket, and every family of the golden must appear in its /metrics. The agent samples the real
/proc; the hardware this machine lacks is a test double: GPUs from the fake libnvidia-ml.so.1
(TITAN_FAKE_NVML, target titan_fake_nvml_full) and InfiniBand from test/fixtures/sys.

Run (or ctest -R grafana_dashboard_metrics):
  TITAN_BIN=build/release/tools/titan/titan /usr/bin/python3 -m pytest -q \
      test/agent/test_grafana_dashboard.py
Regenerate the golden (after a change to the agent's metrics):
  TITAN_BIN=build/release/tools/titan/titan /usr/bin/python3 \
      test/agent/test_grafana_dashboard.py --regenerate
Check another dashboard: TITAN_GRAFANA_DASHBOARD=path/to/dashboard.json (same commands).
"""
import difflib
import json
import os
import re
import select
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TITAN = os.environ.get("TITAN_BIN", "")
DASHBOARD = Path(os.environ.get("TITAN_GRAFANA_DASHBOARD",
                                ROOT / "docs" / "grafana" / "titan-agent.json"))
GOLDEN = ROOT / "test" / "fixtures" / "agent_metrics.golden"
SYS_FIXTURE = ROOT / "test" / "fixtures" / "sys"
IN_CI = os.environ.get("CI") == "true"
REGENERATE = ("TITAN_BIN=build/release/tools/titan/titan /usr/bin/python3 "
              "test/agent/test_grafana_dashboard.py --regenerate")


def fake_nvml_path():
    """The fake libnvidia-ml.so.1 (full variant): $TITAN_FAKE_NVML, else next to TITAN_BIN's tree
    (build/<preset>/tools/titan/titan -> build/<preset>/src/collectors/fake_nvml/full)."""
    if os.environ.get("TITAN_FAKE_NVML"):
        return Path(os.environ["TITAN_FAKE_NVML"])
    return (Path(TITAN).resolve().parents[2] / "src" / "collectors" / "fake_nvml" / "full" /
            "libnvidia-ml.so.1")


# ---------------------------------------------------------------------------------------------
# PromQL: a tokenizer and a metric-name extractor (not a full parser; Prometheus' own parser,
# via promtool, checks the syntax in test_every_expr_parses_with_promtool).

class PromQLError(ValueError):
    pass


# Prometheus 3.x functions (https://prometheus.io/docs/prometheus/latest/querying/functions/).
FUNCTIONS = frozenset("""
    abs absent absent_over_time acos acosh asin asinh atan atanh avg_over_time ceil changes clamp
    clamp_max clamp_min cos cosh count_over_time day_of_month day_of_week day_of_year days_in_month
    deg delta deriv double_exponential_smoothing exp first_over_time floor histogram_avg
    histogram_count histogram_fraction histogram_quantile histogram_stddev histogram_stdvar
    histogram_sum holt_winters hour idelta increase info irate label_join label_replace
    last_over_time ln log10 log2 mad_over_time max_over_time min_over_time minute month pi
    predict_linear present_over_time quantile_over_time rad rate resets round scalar sgn sin sinh
    sort sort_by_label sort_by_label_desc sort_desc sqrt stddev_over_time stdvar_over_time
    sum_over_time tan tanh time timestamp ts_of_first_over_time ts_of_last_over_time
    ts_of_max_over_time ts_of_min_over_time vector year
""".split())
AGGREGATIONS = frozenset("""
    avg bottomk count count_values group limit_ratio limitk max min quantile stddev stdvar sum topk
""".split())
LABEL_LIST_KEYWORDS = frozenset(["by", "without", "on", "ignoring", "group_left", "group_right"])
OTHER_KEYWORDS = frozenset(["and", "or", "unless", "atan2", "bool", "offset"])
NUMBER_WORDS = frozenset(["inf", "nan"])
AT_FUNCTIONS = frozenset(["start", "end"])  # only after '@'

_UNIT = r"(?:ms|[smhdwy])"
_TOKEN = re.compile(r"""
    (?P<ws>\s+|\#[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`[^`]*`)
  | (?P<var>\$\{[^}]*\}|\$\w+|\[\[[^\]]+\]\])
  | (?P<number>0[xX][0-9a-fA-F]+|(?:\d+""" + _UNIT + r""")+(?![\w.])
              |(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<ident>[a-zA-Z_][a-zA-Z0-9_:]*|:[a-zA-Z_][a-zA-Z0-9_:]*)
  | (?P<op>==|!=|=~|!~|<=|>=|[-+*/%^<>=(){}\[\],:@])
""", re.VERBOSE)


def tokenize(expr):
    """[(kind, text, offset)]: kind in string, var, number, ident, op. Raises PromQLError."""
    tokens, pos = [], 0
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m:
            raise PromQLError(f"unexpected character {expr[pos]!r} at offset {pos}")
        kind = m.lastgroup
        if kind == "number" and m.end() < len(expr) and re.match(r"[\w.]", expr[m.end()]):
            raise PromQLError(f"bad number or duration at offset {pos}: "
                              f"{expr[pos:m.end() + 1]!r}")
        if kind != "ws":
            tokens.append((kind, m.group(), pos))
        pos = m.end()
    return tokens


def extract_metrics(expr):
    """The metrics an expression selects: [(name, is_regex)]; is_regex for {__name__=~"..."}.
    Raises PromQLError for unbalanced brackets, an unknown function, or a selector where none can
    be (e.g. two label sets in a row, `m{a="1"}{b="2"}`)."""
    tokens = tokenize(expr)
    found = []
    stack = []  # open brackets: "call", "paren", "labels" (by/on/... lists), "matchers", "range"
    prev = None  # the previous token in expression context, as (kind, text, role)

    def peek(j):
        return tokens[j] if j < len(tokens) else (None, None, None)

    i = 0
    while i < len(tokens):
        kind, text, pos = tokens[i]
        top = stack[-1] if stack else None
        if top == "matchers":  # label matchers: name op "value", ... or a quoted metric name
            if text == "}":
                stack.pop()
                prev = ("op", "}", "selector_end")
            elif kind in ("ident", "string"):
                nxt = peek(i + 1)
                name = text if kind == "ident" else text[1:-1]
                if nxt[0] == "op" and nxt[1] in ("=", "!=", "=~", "!~"):
                    value = peek(i + 2)
                    if value[0] != "string":
                        raise PromQLError(f"label matcher {name}{nxt[1]} without a string value "
                                          f"at offset {pos}")
                    if name == "__name__" and nxt[1] in ("=", "=~"):
                        found.append((value[1][1:-1], nxt[1] == "=~"))
                    i += 3
                    continue
                if kind == "string":  # Prometheus 3: {"metric.name", label="value"}
                    found.append((name, False))
                else:
                    raise PromQLError(f"label {name!r} without a matcher at offset {pos}")
            elif text != ",":
                raise PromQLError(f"unexpected {text!r} in a label selector at offset {pos}")
            i += 1
            continue
        if top == "labels":  # by (a, b), on (c), group_left (d): label names only
            if text == ")":
                stack.pop()
                prev = ("op", ")", "labels_end")
            elif kind not in ("ident", "string") and text != ",":
                raise PromQLError(f"unexpected {text!r} in a label list at offset {pos}")
            i += 1
            continue
        if top == "range":  # [5m], [1h:1m], [$__rate_interval]
            if text == "]":
                stack.pop()
                prev = ("op", "]", "range_end")
            elif text == "[":
                raise PromQLError(f"nested '[' at offset {pos}")
            i += 1
            continue

        role = kind
        nxt = peek(i + 1)
        if kind == "ident":
            word = text.lower()  # PromQL keywords are case-insensitive, function names not
            if word in LABEL_LIST_KEYWORDS:
                role = "keyword"
                if nxt[1] == "(":
                    stack.append("labels")
                    i += 2
                    prev = ("op", "(", "labels_start")
                    continue
                if word in ("by", "without", "on", "ignoring"):
                    raise PromQLError(f"{text} without a label list at offset {pos}")
            elif word in OTHER_KEYWORDS:
                role = "keyword"
            elif word in NUMBER_WORDS:
                role = "number"
            elif word in AGGREGATIONS and (nxt[1] == "(" or
                                           str(nxt[1]).lower() in ("by", "without")):
                role = "function"
                if nxt[1] == "(":
                    stack.append("call")
                    i += 1
            elif nxt[1] == "(":
                if text in FUNCTIONS or (word in AT_FUNCTIONS and prev and prev[1] == "@"):
                    role = "function"
                    stack.append("call")
                    i += 1
                else:
                    raise PromQLError(f"unknown function {text!r} at offset {pos}")
            else:
                role = "metric"
                found.append((text, False))
        elif kind == "op":
            if text == "{":
                if prev and prev[2] in ("selector_end", "range_end", "call_end", "number",
                                        "string"):
                    raise PromQLError(f"unexpected '{{' at offset {pos} (after {prev[1]!r}): a "
                                      "selector has one label set, e.g. m{a=\"1\", b=\"2\"}")
                stack.append("matchers")
            elif text == "[":
                stack.append("range")
            elif text == "(":
                stack.append("paren")
            elif text in (")", "]", "}"):  # ']' and '}' close in their own contexts above
                if text != ")" or top not in ("call", "paren"):
                    raise PromQLError(f"unbalanced {text!r} at offset {pos}")
                stack.pop()
                role = "call_end"
        prev = (kind, text, role)
        i += 1
    if stack:
        raise PromQLError(f"unclosed bracket(s) at the end: {stack}")
    return found


# Grafana's Prometheus templating functions (variable queries).
_GRAFANA_QUERY = re.compile(r"^\s*(label_values|label_names|metrics|query_result)\s*\((.*)\)\s*$",
                            re.DOTALL)


def _split_top_level_comma(text):
    """text split at its last comma outside brackets and strings: (before, after), or (text,
    None) when there is none."""
    depth, last = 0, None
    for kind, tok, pos in tokenize(text):
        if kind == "op" and tok in "([{":
            depth += 1
        elif kind == "op" and tok in ")]}":
            depth -= 1
        elif kind == "op" and tok == "," and depth == 0:
            last = pos
    if last is None:
        return text, None
    return text[:last], text[last + 1:]


def extract_query_metrics(query):
    """Metrics of a templating variable's query: a Grafana function or a PromQL expression."""
    m = _GRAFANA_QUERY.match(query)
    if not m:
        return extract_metrics(query)
    function, args = m.group(1), m.group(2)
    if function == "label_values":  # label_values(label) or label_values(selector, label)
        selector, label = _split_top_level_comma(args)
        return [] if label is None else extract_metrics(selector)
    if function == "label_names":  # label_names() or label_names(selector)
        return extract_metrics(args) if args.strip() else []
    if function == "metrics":  # metrics(regex): any metric name matching
        return [(args.strip().strip("\"'"), True)]
    return extract_metrics(args)  # query_result(expr)


# ---------------------------------------------------------------------------------------------
# The dashboard and the golden.

def dashboard_queries(dashboard):
    """[(where, kind, expr)] for every query in a dashboard; kind is "panel" or "variable"."""
    queries = []

    def walk(panels, row=None):
        for panel in panels or []:
            title = panel.get("title") or "(untitled)"
            where = f'panel "{title}" (id {panel.get("id")}' + (f', row "{row}")' if row else ")")
            for target in panel.get("targets") or []:
                if isinstance(target, dict) and target.get("expr"):
                    queries.append((f"{where} target {target.get('refId', '?')}", "panel",
                                    target["expr"]))
            if panel.get("type") == "row":
                walk(panel.get("panels"), title)
            else:
                walk(panel.get("panels"), row)

    walk(dashboard.get("panels"))
    walk(dashboard.get("rows"))  # pre-5.0 dashboards: rows[].panels[]
    for variable in (dashboard.get("templating") or {}).get("list") or []:
        if variable.get("type") != "query":
            continue
        query = variable.get("query")
        if isinstance(query, dict):  # newer Grafana: {"query": "...", "refId": ...}
            query = query.get("query")
        if query:
            queries.append((f'variable "${variable.get("name")}"', "variable", query))
    for annotation in (dashboard.get("annotations") or {}).get("list") or []:
        if annotation.get("expr"):
            queries.append((f'annotation "{annotation.get("name")}"', "panel", annotation["expr"]))
    return queries


def parse_exposition(text):
    """{family: type} from the # TYPE lines of a Prometheus text exposition."""
    families = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(None, 3)
            families[name] = kind.strip()
    return families


def read_golden(path=GOLDEN):
    families = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, kind = line.split()
            families[name] = kind
    return families


def resolve(name, families):
    """The family a PromQL metric name belongs to, or None. _bucket/_sum/_count are a
    histogram's series (_sum/_count a summary's) only when the family has that type."""
    if name in families:
        return name
    suffixes = {"histogram": ("_bucket", "_sum", "_count"), "summary": ("_sum", "_count")}
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[:-len(suffix)]
        if name.endswith(suffix) and suffix in suffixes.get(families.get(base), ()):
            return base
    return None


def series_names(families):
    """Every series name the families expose (a histogram's _bucket/_sum/_count)."""
    names = set()
    for name, kind in families.items():
        names.add(name)
        if kind == "histogram":
            names.update(name + s for s in ("_bucket", "_sum", "_count"))
        elif kind == "summary":
            names.update(name + s for s in ("_sum", "_count"))
    return names


def check_dashboard(dashboard, families):
    """(problems, found): problems is a list of messages naming the query's place and the
    missing metric; found maps each query's place to the metric names extracted from it."""
    problems, found = [], {}
    for where, kind, expr in dashboard_queries(dashboard):
        try:
            refs = extract_query_metrics(expr) if kind == "variable" else extract_metrics(expr)
        except PromQLError as e:
            problems.append(f"{where}: cannot parse {expr!r}: {e}")
            continue
        found[where] = [name for name, _ in refs]
        if kind == "panel" and not refs:
            problems.append(f"{where}: no metric found in {expr!r} (the extractor missed it?)")
        for name, is_regex in refs:
            if is_regex:
                try:
                    pattern = re.compile(name)
                except re.error as e:
                    problems.append(f"{where}: bad metric-name regex {name!r}: {e}")
                    continue
                if not any(pattern.fullmatch(s) for s in series_names(families)):
                    problems.append(f"{where}: no exported metric matches {name!r} in {expr!r}")
            elif resolve(name, families) is None:
                close = difflib.get_close_matches(name, sorted(series_names(families)), n=1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                problems.append(f"{where}: metric {name} is not exported by titan agent{hint}; "
                                f"expr: {expr}")
    return problems, found


# ---------------------------------------------------------------------------------------------
# The live agent.

WIRE = struct.Struct("<IHHiiqqq24s")  # src/client/wire.h: 64 bytes, little-endian
MAGIC, HELLO, STEP_BEGIN, STEP_END, CKPT_BEGIN, CKPT_END = 0x314E5454, 1, 2, 3, 4, 5


def send_training_events(sock_path):
    """Two ranks, 60 steps each of 10 ms, rank 1's step 40 of 300 ms (a transient for the
    default z-score rule), and a checkpoint on each rank; stamped in the recent past, so that no
    sleeping is needed."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    # Blocking sends wait while the agent's receive queue is full (net.unix.max_dgram_qlen may
    # be 10), so nothing is dropped; the timeout stops a wait on an agent that hangs.
    s.settimeout(10)
    try:
        def send(kind, rank, step, t, value=0, name=b""):
            s.sendto(WIRE.pack(MAGIC, 1, kind, rank, os.getpid(), step, t, value, name), sock_path)

        t = time.time_ns() - 3_000_000_000
        for rank in (0, 1):
            send(HELLO, rank, -1, t, name=b"grafana-golden")
        for step in range(60):
            for rank in (0, 1):
                length = 300 if (step == 40 and rank == 1) else 10
                send(STEP_BEGIN, rank, step, t)
                send(STEP_END, rank, step, t + length * 1_000_000)
            t += (400 if step == 40 else 20) * 1_000_000
        for rank in (0, 1):
            send(CKPT_BEGIN, rank, 60, t, name=b"ckpt")
            send(CKPT_END, rank, 60, t + 50_000_000, 1 << 20, b"ckpt")
    finally:
        s.close()


def scrape(port):
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics",
                                     headers={"Accept": "text/plain; version=0.0.4"})
    with urllib.request.urlopen(request, timeout=5) as r:
        return r.read().decode()


class Agent:
    """The real `titan agent` on an ephemeral loopback port (--port 0; the port is read from its
    "listening on" line, so nothing can take it in between), fed training events. A context
    manager: the process is terminated (then killed) on exit, whatever happens."""

    def __init__(self, titan, fake_nvml):
        self.titan, self.fake_nvml = titan, fake_nvml

    def __enter__(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="titan-grafana-")
        self.log_path = os.path.join(self.tmp.name, "agent.log")
        self.socket = os.path.join(self.tmp.name, "agent.sock")
        env = {k: v for k, v in os.environ.items() if k != "TITAN_FAKE_NVML_SCRIPT"}
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [self.titan, "agent", "--listen", "127.0.0.1", "--port", "0", "--socket", self.socket,
             "--nvml-library", str(self.fake_nvml), "--sys-root", str(SYS_FIXTURE),
             "--interval", "50ms", "--recorder", "1m", "--recorder-memory-mb", "64",
             "--run-for", "60"],  # a last resort against an orphan
            stdout=subprocess.PIPE, stderr=self.log, stdin=subprocess.DEVNULL, env=env, text=True)
        try:
            self.port = self._read_port(timeout=10)
            send_training_events(self.socket)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _read_port(self, timeout):
        deadline, line = time.time() + timeout, ""
        while time.time() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.1)
            if ready:
                line = self.proc.stdout.readline()
                m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
                if m:
                    return int(m.group(1))
                if not line:
                    break  # EOF: the agent exited
        raise AssertionError(f"titan agent did not start (stdout {line!r}):\n{self.log_text()}")

    def log_text(self):
        self.log.flush()
        return Path(self.log_path).read_text()[-4000:]

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.log.close()
        self.tmp.cleanup()
        return False


def write_golden(families, path=GOLDEN):
    lines = [f"# Metric families of `titan agent` /metrics (fake GPUs, test/fixtures/sys "
             f"InfiniBand, training events); regenerate: {REGENERATE}"]
    lines += [f"{name} {kind}" for name, kind in sorted(families.items())]
    path.write_text("\n".join(lines) + "\n")


def capture_golden(titan):
    with Agent(titan, fake_nvml_path()) as agent:
        time.sleep(2.0)  # a few sampling rounds; the transient and straggler scores are in
        return parse_exposition(scrape(agent.port))


# ---------------------------------------------------------------------------------------------
# Tests.

def have_titan():
    return bool(TITAN) and os.path.exists(TITAN)


@pytest.fixture(scope="module")
def golden():
    assert GOLDEN.exists(), f"{GOLDEN} is missing; create it with: {REGENERATE}"
    return read_golden()


@pytest.fixture(scope="module")
def dashboard():
    return json.loads(DASHBOARD.read_text())


def test_every_dashboard_metric_is_in_the_golden(dashboard, golden):
    problems, _ = check_dashboard(dashboard, golden)
    assert not problems, (f"{DASHBOARD}: queries the agent cannot answer:\n  " +
                          "\n  ".join(problems))


def test_the_extractor_found_metrics_in_every_panel(dashboard):
    queries = dashboard_queries(dashboard)
    panel_queries = [q for q in queries if q[1] == "panel"]
    assert len(panel_queries) >= 10, f"only {len(panel_queries)} panel queries found in {DASHBOARD}"
    _, found = check_dashboard(dashboard, {})
    empty = [where for where, kind, _ in panel_queries if not found.get(where)]
    assert not empty, f"no metric extracted from: {empty}"
    distinct = {name for names in found.values() for name in names}
    assert len(distinct) >= len(panel_queries) // 2, sorted(distinct)
    assert any(kind == "variable" for _, kind, _ in queries), "the $instance variable is not seen"


@pytest.mark.skipif(not have_titan(), reason="TITAN_BIN (the titan binary) is not built")
def test_the_golden_matches_the_live_agent(golden):
    fake = fake_nvml_path()
    assert fake.exists(), (f"{fake} (the fake NVML for GPU families) is not built: cmake --build "
                           "build/release --target titan_fake_nvml_full, or set TITAN_FAKE_NVML")
    with Agent(TITAN, fake) as agent:
        # Poll until every golden family is there (cpu utilisation needs two samples, the
        # transient a moment for the detector's pipeline), at most 8 s.
        deadline, live = time.time() + 8, {}
        while True:
            live = parse_exposition(scrape(agent.port))
            missing = sorted(set(golden) - set(live))
            if not missing or time.time() > deadline:
                break
            time.sleep(0.1)
        log = agent.log_text()
    retyped = sorted(f"{n}: golden {golden[n]}, live {live[n]}"
                     for n in set(golden) & set(live) if golden[n] != live[n])
    extra = sorted(set(live) - set(golden))
    if extra:
        print(f"the live agent exports {len(extra)} families the golden lacks (regenerate to add "
              f"them: {REGENERATE}):\n  " + "\n  ".join(extra))
    assert not missing and not retyped, (
        f"{GOLDEN} no longer matches titan agent's /metrics.\n"
        f"In the golden, not exported any more ({len(missing)}):\n  " + "\n  ".join(missing) +
        f"\nType changed ({len(retyped)}):\n  " + "\n  ".join(retyped) +
        f"\nIf the change is intended, regenerate the golden: {REGENERATE}\n"
        f"(and fix {DASHBOARD.name} if test_every_dashboard_metric_is_in_the_golden then fails)"
        f"\nagent log:\n{log}")


def test_every_expr_parses_with_promtool(dashboard, tmp_path):
    """Prometheus' own parser (promtool check rules) on every panel expr, Grafana variables
    replaced: $__rate_interval and the like by 5m inside [...], others by 1 outside strings."""
    promtool = shutil.which("promtool")
    if not promtool:
        if IN_CI:
            pytest.fail("promtool is not installed (scripts/bootstrap.sh installs prometheus)")
        pytest.skip("promtool is not installed")
    rules, places = [], []
    for where, kind, expr in dashboard_queries(dashboard):
        if kind != "panel":
            continue
        text, depth, out, last = expr, 0, [], 0
        for tok_kind, tok, pos in tokenize(text):
            if tok == "[":
                depth += 1
            elif tok == "]":
                depth -= 1
            elif tok_kind == "var":
                out.append(text[last:pos] + ("5m" if depth else "1"))
                last = pos + len(tok)
        out.append(text[last:])
        rules.append({"record": f"grafana:expr{len(rules)}", "expr": "".join(out)})
        places.append(where)
    path = tmp_path / "rules.yml"
    path.write_text(json.dumps({"groups": [{"name": "grafana", "rules": rules}]}))  # JSON is YAML
    result = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True,
                            text=True, timeout=30)
    report = result.stdout + result.stderr
    for i, where in enumerate(places):  # 'rule 3, "grafana:expr2": ...' -> the panel's place
        report = report.replace(f'"grafana:expr{i}"', f"{where} ({rules[i]['expr']})")
    assert result.returncode == 0, report


# Unit tests of the extractor and of the check itself (a dashboard with a wrong metric fails).

@pytest.mark.parametrize("expr, metrics", [
    ('rate(titan_x_total[5m])', ["titan_x_total"]),
    ('sum by (signal, direction) (increase(titan_t_total{job="a", b=~"c|d"}[1m]))',
     ["titan_t_total"]),
    ('sum(rate(a_total[1m])) without (cpu) / ignoring(mode) group_left(node) b',
     ["a_total", "b"]),
    ('histogram_quantile(0.99, sum by (le) (rate(h_seconds_bucket{x="y"}[$__rate_interval])))',
     ["h_seconds_bucket"]),
    ('label_replace(up, "dst", "$1", "src", "(.*)") offset 5m > bool 1e3', ["up"]),
    ('topk(5, m1) and on() m2 or m3 unless m4 atan2 Inf', ["m1", "m2", "m3", "m4"]),
    ('max_over_time(g{instance=~"$instance"}[1h:1m] @ start()) - vector(0) * NaN', ["g"]),
    ('{__name__="by_name", job="j"} + {__name__=~"re_.*"}', ["by_name", "re_.*"]),
    ('count_values("v", job:rate5m:sum) # a comment naming not_a_metric', ["job:rate5m:sum"]),
    ('sum by (le) (x_bucket) / on (instance) ${scale}', ["x_bucket"]),
])
def test_extractor(expr, metrics):
    assert [name for name, _ in extract_metrics(expr)] == metrics


@pytest.mark.parametrize("expr", [
    'm{cpu="total"}{instance=~"x"}',  # two label sets: Prometheus says 'unexpected "{"'
    'rte(m[5m])',  # unknown function
    'sum(m',  # unbalanced
    'm[5m',
    'sum by m',
])
def test_extractor_rejects(expr):
    with pytest.raises(PromQLError):
        extract_metrics(expr)


def test_query_variables():
    assert extract_query_metrics("label_values(titan_collector_up, instance)") == [
        ("titan_collector_up", False)]
    assert extract_query_metrics('label_values(m{a="b,c"}, instance)') == [("m", False)]
    assert extract_query_metrics("label_values(instance)") == []
    assert extract_query_metrics("query_result(sum(q))") == [("q", False)]


def test_a_missing_metric_is_reported_with_its_panel():
    families = {"titan_ok": "gauge", "titan_h_seconds": "histogram", "titan_g_count": "gauge"}
    dashboard = {
        "templating": {"list": [{"name": "v", "type": "query",
                                 "query": {"query": "label_values(titan_var_gone, x)"}}]},
        "panels": [
            {"id": 1, "title": "Fine", "targets": [
                {"refId": "A", "expr": 'rate(titan_h_seconds_count[1m]) + titan_ok'}]},
            {"id": 2, "type": "row", "title": "Row", "panels": [
                {"id": 3, "title": "Bogus panel", "targets": [
                    {"refId": "B", "expr": 'sum by (titan_ok) (rate(titan_bogus_total[1m]))'}]},
            ]},
            {"id": 4, "title": "Not a histogram", "targets": [
                {"refId": "C", "expr": 'titan_ok_count + titan_g_count'}]},
        ],
    }
    problems, _ = check_dashboard(dashboard, families)
    assert len(problems) == 3, problems
    assert 'variable "$v"' in problems[2] and "titan_var_gone" in problems[2]
    assert 'panel "Bogus panel" (id 3, row "Row") target B' in problems[0]
    assert "metric titan_bogus_total is not exported" in problems[0]
    # _count is stripped only for a histogram/summary family: titan_ok is a gauge.
    assert 'panel "Not a histogram"' in problems[1] and "titan_ok_count" in problems[1]


if __name__ == "__main__":
    if sys.argv[1:] != ["--regenerate"]:
        sys.exit(f"usage: {REGENERATE}\n(or run the tests with pytest)")
    if not have_titan():
        sys.exit("set TITAN_BIN to the titan binary (build/release/tools/titan/titan)")
    captured = capture_golden(TITAN)
    write_golden(captured)
    print(f"wrote {GOLDEN.relative_to(ROOT)}: {len(captured)} families")
