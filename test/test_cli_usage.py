"""Every titan subcommand exits 2 on a usage error (an unknown flag, a value out of range, a
missing argument) with CLI11's message, and 0 on --help: one exit code for usage errors, as the
docs say, not CLI11's own (105 for a value out of range, 106 for a missing argument)."""
import os
import subprocess

import pytest

TITAN = os.environ["TITAN_BIN"]

USAGE_ERRORS = [
    (["run", "--nproc-per-node", "0", "--", "true"], "nproc-per-node"),
    (["run", "--checkpoint-dir", "/tmp/x", "--checkpoint-node-local", "--", "true"],
     "needs --checkpoint-mirror"),
    (["agent", "--window", "0"], "window"),
    (["trace", "analyze", "--threads", "0", "x.json"], "threads"),
    (["sim", "daly", "--replicas", "0"], "replicas"),
    (["demo", "--steps", "5"], "steps"),
    (["report"], "inputs"),
    (["load", "--no-such-flag"], "no-such-flag"),
    (["gateway", "--no-such-flag"], "no-such-flag"),
    (["serve-sim", "--no-such-flag"], "no-such-flag"),
    # Were accepted: NaN ran at the default rate, negative sizes were read as "not given".
    (["load", "--url", "http://127.0.0.1:9", "--rate", "nan"], "--rate"),
    (["gateway", "--replica", "http://127.0.0.1:9", "--max-body-bytes", "-1"], "--max-body-bytes"),
    (["gateway", "--replica", "http://127.0.0.1:9", "--token-budget", "-5"], "--token-budget"),
    (["ckpt", "verify"], "CKPT is required"),
    # Were accepted and ignored (a misspelt collector), or printed a 300-digit bound.
    (["agent", "--disable", "bogus", "--run-for", "1"],
     "--disable 'bogus': no collector named 'bogus'; known: cpu, memory"),
    (["agent", "--interval-of", "bogus=10ms", "--run-for", "1"],
     "--interval-of 'bogus=...': no collector named 'bogus'"),
    (["agent", "--run-for", "-1"], "'-1': expected a duration from 0s to 1000000000s"),
    # --users 100000000 grew to 5 GB before sending anything; 0 ran an open loop.
    (["load", "--url", "http://127.0.0.1:9", "--users", "100000000"], "--users"),
    (["load", "--url", "http://127.0.0.1:9", "--users", "0"], "--users"),
    # Was sent as is: every request got a 400 and the run exited 0.
    (["load", "--url", "http://127.0.0.1:9", "--extra-body", '"a":}'], "--extra-body"),
    # A missing input file exited 1 while a bad one exited 2.
    (["load", "--url", "http://127.0.0.1:9", "--trace", "/nonexistent/t.jsonl"],
     "/nonexistent/t.jsonl"),
    # Credentials were taken for a host ("cannot resolve", exit 1); a query was kept.
    (["gateway", "--replica", "http://u:p@127.0.0.1:9"], "user:password@"),
    (["gateway", "--replica", "http://127.0.0.1:9/?a=b"], "query or fragment"),
]


def test_a_trace_value_out_of_range_is_a_usage_error_like_a_malformed_one(tmp_path):
    """A time 366 days out, a negative time or an over-long line exited 1 while NaN or a bad
    length exited 2: every bad input file is a usage error (exit 2), as docs/load.md says."""
    for name, text in [("far", '{"timestamp": 0, "input_length": 1, "output_length": 1}\n'
                                '{"timestamp": 40000000000, "input_length": 1, "output_length": 1}\n'),
                       ("nan", '{"timestamp": NaN, "input_length": 1, "output_length": 1}\n')]:
        trace = tmp_path / f"{name}.jsonl"
        trace.write_text(text)
        p = subprocess.run([TITAN, "load", "--url", "http://127.0.0.1:9", "--trace", str(trace)],
                           capture_output=True, text=True, timeout=30)
        assert p.returncode == 2, (name, p.returncode, p.stderr)
        assert str(trace) in p.stderr, p.stderr


@pytest.mark.parametrize("args,named", USAGE_ERRORS,
                         ids=[f"{a[0][0]}-{i}" for i, a in enumerate(USAGE_ERRORS)])
def test_usage_errors_exit_2_and_say_what(args, named):
    p = subprocess.run([TITAN, *args], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2, (args, p.returncode, p.stderr)
    assert named in p.stderr, p.stderr


@pytest.mark.parametrize("sub", ["run", "agent", "trace", "sim", "demo", "report", "load",
                                 "gateway", "serve-sim", "ckpt"])
def test_help_exits_0(sub):
    p = subprocess.run([TITAN, sub, "--help"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, (sub, p.returncode, p.stderr)
    assert "Usage" in p.stdout or "usage" in p.stdout, p.stdout[:500]


def test_an_output_that_names_an_input_is_refused_and_the_input_kept(tmp_path):
    """`titan report X -o X` wrote its HTML over its input and exited 0 (a probe found it);
    also through a symbolic link to the input."""
    load = tmp_path / "load.json"
    load.write_text('{"kind": "titan-load"}')
    (tmp_path / "link.html").symlink_to(load)
    for out in (load, tmp_path / "link.html"):
        p = subprocess.run([TITAN, "report", str(load), "-o", str(out)], capture_output=True,
                           text=True, timeout=30)
        assert p.returncode == 2, (p.returncode, p.stderr)
        assert "is one of the inputs" in p.stderr, p.stderr
        assert load.read_text() == '{"kind": "titan-load"}'


def test_the_version_is_one_version():
    """`titan version` and the Python module report the project() version of CMakeLists.txt
    (the module's was a second copy in __init__.py)."""
    out = subprocess.run([TITAN, "version"], capture_output=True, text=True, timeout=10)
    assert out.returncode == 0
    cmake = open(os.path.join(os.path.dirname(__file__), "..", "CMakeLists.txt")).read()
    version = cmake.split("project(titan VERSION ", 1)[1].split()[0]
    assert out.stdout.strip() == f"titan {version}"
    stage = os.path.join(os.environ["TITAN_PYTHONPATH"], "titan")
    if not os.path.isdir(stage) or not any(f.startswith("_titan") for f in os.listdir(stage)):
        pytest.skip("the Python module is not built (TITAN_PYTHON=OFF)")
    py = subprocess.run(["/usr/bin/python3", "-c", "import titan; print(titan.__version__)"],
                        capture_output=True, text=True, timeout=60,
                        env={**os.environ, "PYTHONPATH": os.environ["TITAN_PYTHONPATH"]})
    assert py.returncode == 0, py.stderr
    assert py.stdout.strip() == version


def test_no_output_overwrites_an_input_or_another_output(tmp_path):
    """A probe found outputs written over inputs, each exiting 0: `trace summarize -o` and
    `trace analyze --report` over the trace, `titan load --records` over its --prompts,
    `titan run --ledger-json` over the worker script, and two outputs on one file. Each is now
    a usage error (exit 2) before anything runs, and the input is untouched."""
    trace = tmp_path / "rank0.json"
    trace.write_text('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, '
                     '"dur": 2, "pid": 1, "tid": 1}]}')
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt": "hello"}\n')
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    url = ["--url", "http://127.0.0.1:9", "--requests", "1"]
    cases = [
        (["trace", "summarize", str(trace), "-o", str(trace)], "-o"),
        (["trace", "summarize", str(tmp_path), "-o", str(trace)], "-o"),
        (["trace", "analyze", str(trace), "--report", str(trace)], "--report"),
        (["load", *url, "--prompts", str(prompts), "--records", str(prompts)], "--records"),
        (["load", *url, "--json", str(tmp_path / "a.json"), "--timeline",
          str(tmp_path / "a.json")], "--timeline"),
        (["run", "--run-dir", str(tmp_path / "run"), "--ledger-json", str(script), "--no-python",
          str(script)], "--ledger-json"),
        (["run", "--run-dir", str(tmp_path / "run"), "--event-log", str(tmp_path / "e.json"),
          "--ledger-json", str(tmp_path / "e.json"), "--no-python", str(script)],
         "--ledger-json"),
    ]
    # A probe appended the gateway's access and event logs to its config (the next reload
    # failed), and wrote --records and --json to one file spelt "x" and "./x".
    config = tmp_path / "gw.yaml"
    config.write_text("replicas:\n  - url: http://127.0.0.1:9\n")
    cases += [
        (["gateway", "--config", str(config), "--access-log", str(config)], "--access-log"),
        (["gateway", "--config", str(config), "--event-log", str(tmp_path / "." / "gw.yaml")],
         "--event-log"),
        (["gateway", "--replica", "http://127.0.0.1:9", "--access-log", str(tmp_path / "a.log"),
          "--event-log", str(tmp_path / "a.log")], "--event-log"),
    ]
    before = {p: p.read_bytes() for p in (trace, prompts, script, config)}
    for args, flag in cases:
        p = subprocess.run([TITAN, *args], capture_output=True, text=True, timeout=60)
        assert p.returncode == 2, (args, p.returncode, p.stderr)
        assert flag in p.stderr and ("is one of the inputs" in p.stderr
                                     or "its own file" in p.stderr), (args, p.stderr)
        assert {p: p.read_bytes() for p in before} == before, args
    assert not (tmp_path / "a.json").exists()


def test_a_fifo_config_is_refused_at_once(tmp_path):
    """`titan gateway --config FIFO` blocked at start (and a SIGHUP reload onto a FIFO blocked
    the signal thread, so SIGTERM was never seen); the config must be a regular file."""
    fifo = tmp_path / "g.yaml"
    os.mkfifo(fifo)
    p = subprocess.run([TITAN, "gateway", "--config", str(fifo)], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode != 0
    assert "is not a regular file (a FIFO)" in p.stderr, p.stderr


def test_commands_start_without_libcurl_and_load_it_when_they_need_it(tmp_path):
    """libcurl and its ~27 libraries cost every start 7 ms; only the HTTP clients (etcd, S3,
    Kubernetes) need it, and they load it on first use (src/base/lazy_libcurl.cc). A command
    that uses one still gets libcurl: here an S3 request to a closed port fails as a connection
    error from libcurl, not as a missing library."""
    env = dict(os.environ, LD_DEBUG="files")
    p = subprocess.run([TITAN, "--version"], capture_output=True, text=True, timeout=30, env=env)
    assert p.returncode == 0, p.stderr
    assert "file=libcurl.so.4" not in p.stderr, "libcurl was loaded at start"
    s3 = dict(env, AWS_ACCESS_KEY_ID="k", AWS_SECRET_ACCESS_KEY="s",
              AWS_ENDPOINT_URL="http://127.0.0.1:9", TITAN_S3_MAX_ATTEMPTS="1")
    p = subprocess.run([TITAN, "ckpt", "ls", "s3://bucket/run"], capture_output=True, text=True,
                       timeout=60, env=s3)
    assert "file=libcurl.so.4" in p.stderr, "the S3 client did not load libcurl"
    assert "cannot load libcurl" not in p.stderr, p.stderr
    assert "Couldn't connect to server" in p.stderr, p.stderr  # libcurl's own words
    assert p.returncode != 0
