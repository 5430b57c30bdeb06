"""titan trace summarize per node + titan trace analyze of the summaries == one titan trace
analyze of all the files, byte for byte, on real traces (../shared/data/traces).

Two jobs: the real 2-rank set (hta_trace_filter_2rank) on 2 "nodes", and a 4-rank set built from
the real A100 rank by bench/trace_make_set.py (rank 2 arrives 2 ms late at every NCCL kernel) on
3 "nodes" (ranks 0+1, 2, 3). A node is a directory of symlinks to the traces; the single run
reads the same paths, node directory by node directory, as `titan trace analyze node0 node1 ...`.

Compared byte for byte: stdout of the text report (default and --full) and of --json, every
--csv file, the --report page, stderr and the exit status. Two things differ between any two runs, even of the same
command, and are masked (each exactly once): the elapsed time ("seconds" in --json, "in X s" in
the text header) and the report page's generation timestamp.
"""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TITAN = os.environ.get("TITAN_BIN", "")
SOURCE = Path(os.environ.get("TITAN_SOURCE_DIR", Path(__file__).resolve().parents[2]))
TRACES = SOURCE.parent / "shared" / "data" / "traces"
IN_CI = os.environ.get("CI") == "true"

pytestmark = pytest.mark.skipif(not TITAN or not os.path.exists(TITAN),
                                reason="TITAN_BIN (the titan binary) is not built")


def need_traces():
    if not TRACES.is_dir():
        if IN_CI:
            pytest.fail(f"{TRACES} is missing (CI has ../shared beside the clone)")
        pytest.skip(f"{TRACES} not here")


def run(args, ok=True):
    p = subprocess.run([TITAN, *map(str, args)], capture_output=True, text=True, timeout=300)
    if ok and p.returncode != 0:
        raise AssertionError(f"titan {args} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def make_nodes(root, files_per_node):
    """node<i>/ directories of symlinks; returns their paths."""
    nodes = []
    for i, files in enumerate(files_per_node):
        d = root / f"node{i}"
        d.mkdir()
        for f in files:
            (d / f.name).symlink_to(f)
        nodes.append(d)
    return nodes


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("trace_split")


@pytest.fixture(scope="module")
def job_2rank(work):
    need_traces()
    src = TRACES / "hta_trace_filter_2rank"
    files = sorted(src.glob("*.json.gz"))
    assert len(files) == 2, files
    root = work / "2rank"
    root.mkdir()
    return make_nodes(root, [[files[0]], [files[1]]])


@pytest.fixture(scope="module")
def job_4rank(work):
    need_traces()
    src = TRACES / "hta_a100_2rank_ncclargs" / "a100_2rankjob_rank0_ncclargs.json.gz"
    assert src.exists(), src
    root = work / "4rank"
    subprocess.run([sys.executable, SOURCE / "bench" / "trace_make_set.py", src, root / "set",
                    "--ranks", "4", "--late-rank", "2", "--late-us", "2000"],
                   check=True, capture_output=True, timeout=300)
    f = [root / "set" / f"rank{r}.json.gz" for r in range(4)]
    return make_nodes(root, [[f[0], f[1]], [f[2]], [f[3]]])


def summarize(nodes, out_dir, extra=(), job="job-1"):
    out_dir.mkdir(exist_ok=True)
    summaries = []
    for node in nodes:
        out = out_dir / f"{node.name}.summary.json"
        p = run(["trace", "summarize", node, "-o", out, "--job", job, *extra])
        assert p.stdout.startswith(f"wrote {out}: "), p.stdout
        summaries.append(out)
    return summaries


def mask_seconds(text):
    """The elapsed time, the one field that differs between two runs of the same command."""
    text, n_json = re.subn(r'^  "seconds": [0-9.eE+-]+(,?)$', r'  "seconds": X\1', text,
                           flags=re.M)
    text, n_text = re.subn(r"^(titan trace: .* of trace JSON) in [0-9.]+ s$", r"\1 in X s", text,
                           flags=re.M)
    assert n_json + n_text == 1, text[:400]
    return text


def mask_timestamp(html):
    html, n = re.subn(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", "TIME", html)
    assert n == 1
    return html


def outputs(inputs, out_dir, extra=()):
    """Every output of `titan trace analyze INPUTS`: text (summarised and --full), --json, CSV
    files, report page."""
    out_dir.mkdir()
    text = run(["trace", "analyze", *inputs, *extra])
    full = run(["trace", "analyze", *inputs, *extra, "--full"])
    js = run(["trace", "analyze", *inputs, *extra, "--json", "--csv", out_dir / "csv",
              "--report", out_dir / "report.html"])
    result = {
        "text": mask_seconds(text.stdout),
        "text stderr": text.stderr,
        "text --full": mask_seconds(full.stdout),
        "json": mask_seconds(js.stdout),
        "report": mask_timestamp((out_dir / "report.html").read_text()),
        "exit": (text.returncode, js.returncode),
    }
    for f in sorted((out_dir / "csv").iterdir()):
        result["csv " + f.name] = f.read_bytes()
    return result


def assert_same(single, split):
    assert single.keys() == split.keys()
    for key in single:
        assert split[key] == single[key], f"{key} differs between the split and the single run"


@pytest.mark.parametrize("job", ["job_2rank", "job_4rank"])
@pytest.mark.parametrize("hta", [False, True], ids=["titan", "hta-compat"])
def test_split_equals_single_run(request, work, job, hta):
    nodes = request.getfixturevalue(job)
    extra = ["--hta-compat"] if hta else []
    tag = f"{job}_{'hta' if hta else 'plain'}"
    single = outputs(nodes, work / f"single_{tag}", extra)
    summaries = summarize(nodes, work / f"summaries_{tag}", extra)
    split = outputs(summaries, work / f"split_{tag}", extra)
    assert_same(single, split)
    # The default text summarises the idle gaps (5 of 10 or 20 kept); --full prints them all.
    assert "more: see --full or --csv (idle_gaps.csv)" in single["text"]
    assert "more: see --full" not in single["text --full"]
    doc = json.loads(split["json"].replace('"seconds": X', '"seconds": 0'))
    assert doc["ranks_analysed"] == (2 if job == "job_2rank" else 4)
    assert doc["cross_rank"]["matched"] > 0
    if job == "job_4rank":
        assert [s["rank"] for s in doc["cross_rank"]["stragglers"]] == [2]
    if hta:
        assert "hta.temporal_breakdown.csv" in " ".join(split)


def test_a_directory_of_summaries_is_analysed_too(work, job_4rank):
    summaries = summarize(job_4rank, work / "as_dir")
    from_files = run(["trace", "analyze", "--json", *summaries]).stdout
    from_dir = run(["trace", "analyze", "--json", work / "as_dir"]).stdout
    assert mask_seconds(from_dir) == mask_seconds(from_files)


def test_summaries_are_small(work, job_4rank):
    summaries = summarize(job_4rank, work / "sizes")
    raw = sum(len(subprocess.run(["gzip", "-dc", f], capture_output=True, check=True).stdout)
              for node in job_4rank for f in node.iterdir())
    size = sum(s.stat().st_size for s in summaries)
    assert size * 100 < raw, (size, raw)  # under 1% of the raw JSON
    doc = json.loads(summaries[0].read_text())
    assert (doc["kind"], doc["version"], doc["job"]) == ("titan-trace-summary", 1, "job-1")
    assert "traceEvents" not in summaries[0].read_text()


def test_a_merge_that_drops_collectives_is_caught(work, job_4rank):
    """The comparison is able to fail: node1's summary (rank 2, the late one) without its
    collectives gives another result, and rank 2 is no longer found as the straggler."""
    single = outputs(job_4rank, work / "neg_single")
    summaries = summarize(job_4rank, work / "neg_summaries")
    doc = json.loads(summaries[1].read_text())
    assert [r["rank"] for r in doc["ranks"]] == [2]
    assert doc["ranks"][0]["collectives"]
    doc["ranks"][0]["collectives"] = []
    summaries[1].write_text(json.dumps(doc))
    split = outputs(summaries, work / "neg_split")
    assert split["json"] != single["json"]
    assert split["text"] != single["text"]
    assert json.loads(split["json"].replace('"seconds": X', '"seconds": 0'))[
        "cross_rank"]["stragglers"] == []


def test_bad_merges_are_refused_naming_the_files(work, job_4rank):
    summaries = summarize(job_4rank, work / "bad")
    # A rank in two summaries.
    copy = work / "bad" / "copy_of_node1.json"
    shutil.copy(summaries[1], copy)
    p = run(["trace", "analyze", *summaries, copy], ok=False)
    assert p.returncode == 1 and p.stdout == ""
    assert f"rank 2 is in two summaries: {summaries[1]}" in p.stderr, p.stderr
    assert f"and {copy}" in p.stderr, p.stderr
    # Another job.
    other = summarize(job_4rank[2:], work / "bad_other", job="job-2")[0]
    p = run(["trace", "analyze", summaries[0], summaries[1], other], ok=False)
    assert p.returncode == 1
    assert f"{summaries[0]}" in p.stderr and f"{other}" in p.stderr, p.stderr
    assert "is job 'job-1' but" in p.stderr and "is job 'job-2'" in p.stderr, p.stderr
    assert "different jobs" in p.stderr
    # Another format version.
    newer = work / "bad" / "newer.json"
    newer.write_text(summaries[2].read_text().replace('"version":1', '"version":2', 1))
    p = run(["trace", "analyze", summaries[0], summaries[1], newer], ok=False)
    assert p.returncode == 1
    assert f"{newer}: summary format version 2, but this titan reads version 1" in p.stderr
    # Traces and summaries mixed.
    trace = next(job_4rank[2].iterdir())
    p = run(["trace", "analyze", summaries[0], trace], ok=False)
    assert p.returncode == 2
    assert f"{summaries[0]} is a node summary but {trace} is a trace" in p.stderr, p.stderr
    # Options the summaries were not written with.
    p = run(["trace", "analyze", *summaries, "--hta-compat"], ok=False)
    assert p.returncode == 1
    assert "has no HTA-compatible results: run titan trace summarize with --hta-compat" in p.stderr


def test_rank_option_names_the_rank_of_one_file(work, job_2rank):
    """--rank sets a single file's rank (over distributedInfo.rank, with a warning); it is a usage
    error with several files or with summaries."""
    one, other = next(job_2rank[0].iterdir()), next(job_2rank[1].iterdir())
    out = work / "rank_option"
    p = run(["trace", "analyze", "--hta-compat", "--csv", out, "--rank", "7", one])
    assert (out / "hta.temporal_breakdown.csv").read_text().splitlines()[1].startswith("7,")
    assert "rank 7 used as --rank says" in p.stdout, p.stdout
    p = run(["trace", "analyze", "--rank", "7", one, other], ok=False)
    assert p.returncode == 2 and "--rank names the rank of one trace file" in p.stderr, p.stderr
