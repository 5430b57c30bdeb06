"""titan as a user installs it: `cmake --install` into a prefix, and the .deb `cpack` builds.

Every check runs the installed files with the source and build trees hidden: a private mount
namespace (unshare, root) mounts an empty tmpfs over the source directory (and the build
directory when it lies elsewhere), so a path baked in at build time is simply not there.
Under CI (CI=true) a missing prerequisite (root, unshare, cpack, etcd) is a failure, not a skip.
"""
import os
import shutil
import subprocess
import tempfile

import pytest

SOURCE = os.environ.get("TITAN_SOURCE_DIR", "")
BUILD = os.environ.get("TITAN_BUILD_DIR", "")
PYTHON = os.environ.get("TITAN_PYTHON", "/usr/bin/python3")
IN_CI = os.environ.get("CI") == "true"


def require(ok, why):
    if not ok:
        if IN_CI:
            pytest.fail(why + " (CI=true: a missing prerequisite is a failure)")
        pytest.skip(why)


@pytest.fixture(scope="module")
def prefix():
    require(SOURCE and BUILD, "TITAN_SOURCE_DIR and TITAN_BUILD_DIR are not set (run under ctest)")
    require(os.geteuid() == 0 and shutil.which("unshare"), "hiding the trees needs root and unshare")
    with tempfile.TemporaryDirectory(prefix="titan-install-") as d:
        out = subprocess.run(["cmake", "--install", BUILD, "--prefix", d],
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
        yield d


def hidden(command, env=None, timeout=300):
    """Runs `command` (a shell line) with the source and build trees hidden."""
    trees = [SOURCE] + ([BUILD] if not BUILD.startswith(SOURCE.rstrip("/") + "/") else [])
    mounts = " && ".join(f"mount -t tmpfs none '{t}'" for t in trees)
    line = f"{mounts} && test -z \"$(ls -A '{SOURCE}')\" && {command}"
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", line],
                          capture_output=True, text=True, timeout=timeout, cwd="/",
                          env={**os.environ, **(env or {})})


def test_the_prefix_holds_titan_its_python_package_docs_and_examples(prefix):
    for path in ["bin/titan", "lib/python3/dist-packages/titan/__init__.py",
                 "lib/python3/dist-packages/titan/checkpoint.py",
                 "share/doc/titan/README.md", "share/doc/titan/run.md",
                 "share/titan/examples/train_tiny_lm.py", "share/titan/deploy/k8s/llmjob-crd.yaml"]:
        assert os.path.isfile(os.path.join(prefix, path)), path
    modules = os.listdir(os.path.join(prefix, "lib/python3/dist-packages/titan"))
    assert any(m.startswith("_titan") and m.endswith(".so") for m in modules), modules
    # Nothing of the build's own: no tests, fuzzers, benchmarks or static libraries.
    assert sorted(os.listdir(os.path.join(prefix, "bin"))) == ["titan"]
    for root, _, files in os.walk(prefix):
        assert not [f for f in files if f.endswith(".a")], root


def test_every_subcommand_and_the_python_package_run_from_the_prefix(prefix):
    titan = os.path.join(prefix, "bin/titan")
    listing = hidden(f"'{titan}' --help")
    assert listing.returncode == 0, listing.stderr
    subcommands = [line.split()[0] for line in listing.stdout.splitlines()
                   if line.startswith("  ") and len(line.split()) > 1]
    assert {"agent", "run", "demo", "gateway", "load", "trace", "ckpt", "report"} <= set(subcommands)
    for sub in subcommands:
        out = hidden(f"'{titan}' {sub} --help")
        assert out.returncode == 0, (sub, out.stderr)
        assert out.stdout.strip(), sub
    version = hidden(f"'{titan}' version")
    assert version.returncode == 0, version.stderr
    package = os.path.join(prefix, "lib/python3/dist-packages")
    imported = hidden(f"'{PYTHON}' -c 'import titan, titan.checkpoint, titan.client; "
                      "print(titan.__version__, titan.__file__)'", env={"PYTHONPATH": package})
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.split()[0] in version.stdout, (imported.stdout, version.stdout)
    assert imported.stdout.split()[1].startswith(package), imported.stdout


def test_the_installed_demo_runs_with_no_source_or_build_tree(prefix):
    require(os.path.exists("/usr/bin/etcd"), "the demo needs etcd (scripts/bootstrap.sh installs it)")
    with tempfile.TemporaryDirectory(prefix="titan-demo-") as out_dir:
        demo = hidden(f"'{prefix}/bin/titan' demo --steps 60 --out-dir '{out_dir}'", timeout=540)
        assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
        assert "titan demo succeeded" in demo.stdout, demo.stdout[-3000:]
        assert "EQUAL (bit-identical)" in demo.stdout, demo.stdout[-3000:]


def test_the_deb_package_declares_its_dependencies_and_runs_unpacked():
    require(SOURCE and BUILD, "TITAN_SOURCE_DIR and TITAN_BUILD_DIR are not set (run under ctest)")
    require(shutil.which("cpack") and shutil.which("dpkg-deb"), "needs cpack and dpkg-deb")
    require(os.geteuid() == 0 and shutil.which("unshare"), "hiding the trees needs root and unshare")
    with tempfile.TemporaryDirectory(prefix="titan-deb-") as d:
        out = subprocess.run(["cpack", "-G", "DEB", "-B", d, "--config",
                              os.path.join(BUILD, "CPackConfig.cmake")],
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stdout + out.stderr
        debs = [f for f in os.listdir(d) if f.endswith(".deb")]
        assert len(debs) == 1, os.listdir(d)
        deb = os.path.join(d, debs[0])
        info = subprocess.run(["dpkg-deb", "--field", deb, "Package", "Depends"],
                              capture_output=True, text=True, check=True).stdout
        assert "Package: titan" in info, info
        for dependency in ("python3", "libc6", "libcurl4", "libstdc++6"):
            assert dependency in info, info
        contents = subprocess.run(["dpkg-deb", "--contents", deb],
                                  capture_output=True, text=True, check=True).stdout
        assert "./usr/bin/titan" in contents
        assert "./usr/lib/python3/dist-packages/titan/__init__.py" in contents
        root = os.path.join(d, "root")
        subprocess.run(["dpkg-deb", "--extract", deb, root], check=True)
        ran = hidden(f"'{root}/usr/bin/titan' version && '{root}/usr/bin/titan' sim --help")
        assert ran.returncode == 0, ran.stderr
