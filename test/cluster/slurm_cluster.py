"""A real Slurm cluster on loopback for titan's tests: munged, one slurmctld and three slurmd
(nodes n1..n3, all on 127.0.0.1), no systemd, no accounting, started from the settings in
../shared/recipes/slurm.conf.template (read there, not copied) in a temporary directory.

    with SlurmCluster() as cluster:          # 3 nodes idle, SLURM_CONF exported
        job = cluster.sbatch(["-N3"], "srun hostname")
        cluster.wait_job(job)

The cluster's ports are the template's (slurmctld 16817, slurmd 17001-17003), so one cluster
runs at a time on a machine. Every daemon started here is killed at exit, also when the test
fails; a munged that was already running is left alone.
"""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEMPLATE = os.path.join(os.path.dirname(ROOT), "shared", "recipes", "slurm.conf.template")
NODES = ["n1", "n2", "n3"]
MUNGE_SOCKET = "/run/munge/munge.socket.2"


class SlurmError(RuntimeError):
    pass


def available():
    """None when a cluster can be started here, else why not."""
    for tool in ("slurmctld", "slurmd", "munged", "sbatch", "scontrol"):
        if shutil.which(tool) is None and not os.path.exists(f"/usr/sbin/{tool}"):
            return f"{tool} is not installed (Debian packages slurmctld slurmd slurm-client munge)"
    if not os.path.exists(TEMPLATE):
        return f"{TEMPLATE} is missing (the shared/ folder beside the clone)"
    if os.geteuid() != 0:
        return "slurmd runs jobs as root here (SlurmdUser=root): run the test as root"
    return None


class SlurmCluster:
    def __init__(self, slurmd_timeout_s=5):
        self.slurmd_timeout_s = slurmd_timeout_s
        self.procs = {}
        self.dir = None

    # ---- lifecycle ---------------------------------------------------------------------------
    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="titan-slurm-")
        for sub in ("state", "spool", "log"):
            os.makedirs(os.path.join(self.dir, sub))
        with open(TEMPLATE) as f:
            conf = f.read().replace("$D", self.dir).replace("$HOST", socket.gethostname().split(".")[0])
        # Faster node-failure detection than the template's 30 s, and no mail program.
        conf = conf.replace("SlurmdTimeout=30", f"SlurmdTimeout={self.slurmd_timeout_s}")
        conf += "MailProg=/bin/true\n"
        self.conf = os.path.join(self.dir, "slurm.conf")
        with open(self.conf, "w") as f:
            f.write(conf)
        os.environ["SLURM_CONF"] = self.conf
        try:
            self._start_munge()
            self._spawn("slurmctld", ["slurmctld", "-D", "-f", self.conf])
            for node in NODES:
                self.start_slurmd(node)
            self.wait_nodes(lambda states: all(s.startswith("IDLE") for s in states.values()),
                            "all nodes idle")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        for name in reversed(list(self.procs)):
            proc = self.procs[name]
            # The whole process group (each runs in its own session): runuser forks munged,
            # which outlived a SIGKILL of runuser alone and was left behind after every run.
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
        # Job steps (slurmstepd) outlive a killed slurmd; nothing of the cluster may outlive it
        # (the cluster is the only one on the machine: its ports are fixed).
        subprocess.run(["pkill", "-9", "slurmstepd"], check=False)
        os.environ.pop("SLURM_CONF", None)
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def _spawn(self, name, argv):
        log = open(os.path.join(self.dir, "log", f"{name}.out"), "w")
        self.procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)

    def _start_munge(self):
        if os.path.exists(MUNGE_SOCKET) and subprocess.run(
                ["munge", "-n"], stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL).returncode == 0:
            return  # a munged is already serving
        os.makedirs("/run/munge", exist_ok=True)
        shutil.chown("/run/munge", "munge")
        self._spawn("munged", ["runuser", "-u", "munge", "--", "munged", "-F", "--force"])
        deadline = time.time() + 10
        while not os.path.exists(MUNGE_SOCKET):
            if time.time() > deadline or self.procs["munged"].poll() is not None:
                raise SlurmError("munged did not start: " + self.log("munged"))
            time.sleep(0.05)

    def start_slurmd(self, node):
        self._spawn(f"slurmd-{node}", ["slurmd", "-D", "-N", node, "-f", self.conf])

    def kill_slurmd(self, node):
        proc = self.procs[f"slurmd-{node}"]
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    def log(self, name):
        try:
            with open(os.path.join(self.dir, "log", f"{name}.out")) as f:
                return f.read()[-3000:]
        except OSError:
            return ""

    # ---- queries -----------------------------------------------------------------------------
    def scontrol(self, *args):
        r = subprocess.run(["scontrol", *args], capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            raise SlurmError(f"scontrol {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout

    def node(self, name):
        """{'State': ..., 'Reason': ...} of one node."""
        line = self.scontrol("-o", "show", "node", name)
        fields = {}
        for key in ("State", "Reason"):
            start = line.find(f" {key}=")
            if start >= 0:
                rest = line[start + len(key) + 2:]
                fields[key] = rest.split(" [")[0] if key == "Reason" else rest.split(" ")[0]
        return fields

    def wait_nodes(self, predicate, what, timeout=60):
        deadline = time.time() + timeout
        while True:
            states = {n: self.node(n).get("State", "") for n in NODES}
            if predicate(states):
                return states
            if time.time() > deadline:
                raise SlurmError(f"waited {timeout} s for {what}; states {states}\n"
                                 + self.log("slurmctld"))
            time.sleep(0.2)

    def resume(self, node):
        """Back to service after a drain or a failure (its slurmd must run)."""
        if self.procs[f"slurmd-{node}"].poll() is not None:
            self.start_slurmd(node)
        self.scontrol("update", f"NodeName={node}", "State=RESUME")
        self.wait_nodes(lambda s: s[node].startswith("IDLE"), f"{node} idle")

    # ---- jobs --------------------------------------------------------------------------------
    def sbatch(self, options, script):
        path = os.path.join(self.dir, f"job-{len(os.listdir(self.dir))}.sh")
        with open(path, "w") as f:
            f.write("#!/bin/bash\n" + script + "\n")
        r = subprocess.run(["sbatch", "--parsable", *options, path], capture_output=True,
                           text=True, timeout=30)
        if r.returncode != 0:
            raise SlurmError(f"sbatch: {r.stderr.strip()}")
        return r.stdout.strip().split(";")[0]

    def job(self, job_id):
        line = self.scontrol("-o", "show", "job", job_id)
        return dict(f.split("=", 1) for f in line.split() if "=" in f)

    def wait_job(self, job_id, timeout=240):
        """The job's fields once it ended (COMPLETED, FAILED, ...)."""
        deadline = time.time() + timeout
        while True:
            info = self.job(job_id)
            if info.get("JobState") not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING",
                                             "REQUEUED", "RESIZING", "SUSPENDED"):
                return info
            if time.time() > deadline:
                subprocess.run(["scancel", job_id], check=False)
                raise SlurmError(f"job {job_id} still {info.get('JobState')} after {timeout} s")
            time.sleep(0.5)
