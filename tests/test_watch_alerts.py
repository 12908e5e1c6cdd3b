"""`rankdoctor watch` alerting and metrics, end to end: test_watch.py's writer writes its
16-rank run live (rotation and copytruncate on the way; rank 5 dies, the others time out)
while `watch --alert-webhook --on-diagnosis --metrics-port` follows it. A real HTTP
receiver (http.server in this process) gets the webhook posts, answering the first one
with a 500; a real Prometheus server (the Debian package, `make prometheus`) scrapes the
watch every second and evaluates `rankdoctor rules --format prometheus`, and the test reads
the series and the firing alerts back through Prometheus's HTTP API.
"""

from __future__ import annotations

import http.server
import json
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from io import StringIO
from pathlib import Path

import pytest

from rankdoctor.watch.alerts import Alerts, diagnosis_key

from .test_watch import CLI, DEAD, RANKS, _reader, run_folder, stop

HERE = Path(__file__).parent
AM_FIELDS = {"version", "groupKey", "truncatedAlerts", "status", "receiver", "groupLabels", "commonLabels",
             "commonAnnotations", "externalURL", "alerts"}
ALERT_FIELDS = {"status", "labels", "annotations", "startsAt", "endsAt", "generatorURL", "fingerprint"}


class Receiver:
    """A webhook receiver: records every POST; answers with the next code of ``codes``
    (then 200)."""

    def __init__(self, codes: list[int] | None = None):
        self.codes = list(codes or [])
        self.posts: list[tuple[float, int, bytes]] = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                code = receiver.codes.pop(0) if receiver.codes else 200
                receiver.posts.append((time.time(), code, body))
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def accepted(self) -> list[dict]:
        return [json.loads(body) for _, code, body in self.posts if code == 200]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, timeout: float = 5) -> dict:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read())


class Prometheus:
    def __init__(self, tmp: Path, target: str, rules: Path):
        self.port = _free_port()
        cfg = tmp / "prometheus.yml"
        cfg.write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            f"rule_files: ['{rules}']\n"
            "scrape_configs:\n"
            f"  - job_name: rankdoctor\n    static_configs: [{{targets: ['{target}']}}]\n"
        )
        self.log = open(tmp / "prometheus.log", "wb")
        self.proc = subprocess.Popen(
            ["prometheus", f"--config.file={cfg}", f"--storage.tsdb.path={tmp / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT,
        )
        self.base = f"http://127.0.0.1:{self.port}"

    def ready(self, deadline: float) -> None:
        while time.time() < deadline:
            assert self.proc.poll() is None, "prometheus exited"
            try:
                with urllib.request.urlopen(self.base + "/-/ready", timeout=1) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.1)
        raise AssertionError("prometheus did not get ready")

    def query(self, q: str) -> list[dict]:
        doc = _get(self.base + "/api/v1/query?" + urllib.parse.urlencode({"query": q}))
        assert doc["status"] == "success", doc
        return doc["data"]["result"]

    def alerts(self) -> list[dict]:
        return _get(self.base + "/api/v1/alerts")["data"]["alerts"]

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def _until(check, deadline: float, every: float = 0.25):
    """The first truthy ``check()`` before ``deadline`` (the last value after it)."""
    while True:
        value = check()
        if value or time.time() >= deadline:
            return value
        time.sleep(every)


def test_alerts_and_metrics_of_a_live_run_reach_a_receiver_and_prometheus(tmp_path):
    if shutil.which("prometheus") is None:
        pytest.skip("prometheus is not installed (`make prometheus` installs the Debian package, as root, with apt-get)")
    t_start = time.time()
    folder = run_folder(tmp_path)
    rules = tmp_path / "rankdoctor.rules.yml"
    rules.write_text(subprocess.run([*CLI, "rules", "--format", "prometheus"], capture_output=True, text=True, check=True).stdout)
    receiver = Receiver(codes=[500])  # the first post fails: it must come again
    runs = tmp_path / "runs"
    runs.mkdir()
    command = f'env | grep ^RANKDOCTOR_ | sort > "{runs}/$(date +%s%N)-$$.env"; cp "$RANKDOCTOR_JSON" "{runs}/$$.json"'
    port = _free_port()
    watch = subprocess.Popen([*CLI, "watch", str(folder), "--format", "json", "--silent-after", "2",
                              "--metrics-port", str(port), "--alert-webhook", receiver.url, "--on-diagnosis", command],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    prom = Prometheus(tmp_path, f"127.0.0.1:{port}", rules)
    out: list[tuple[float, str]] = []
    err: list[tuple[float, str]] = []
    readers = [_reader(watch.stdout, out), _reader(watch.stderr, err)]
    try:
        deadline = time.time() + 30
        prom.ready(deadline)
        assert _until(lambda: out, deadline), f"no first document: {err}"
        writer = subprocess.run([sys.executable, str(HERE / "test_watch.py"), "write", str(folder)], capture_output=True, timeout=60)
        assert writer.returncode == 0, writer.stderr.decode()
        record = json.loads(writer.stdout)
        lines_written = sum(record["counts"].values())
        # what Prometheus scraped: every line read, every rank, the diagnosis naming rank 5
        deadline = time.time() + 15
        lines = _until(lambda: [s for s in prom.query("rankdoctor_lines_read_total") if float(s["value"][1]) == lines_written], deadline)
        assert lines, (prom.query("rankdoctor_lines_read_total"), lines_written)
        ages = prom.query("rankdoctor_rank_seconds_since_last_line")
        assert sorted(int(s["metric"]["rank"]) for s in ages) == list(range(RANKS))
        assert all(0 <= float(s["value"][1]) < 60 for s in ages)
        info = _until(lambda: prom.query('rankdoctor_diagnosis_info{initiating_ranks="5"}'), deadline)
        assert info and info[0]["metric"]["verdict"] in ("diagnosed", "inconclusive"), prom.query("rankdoctor_diagnosis_info")
        q = 'rankdoctor_fingerprint_hits_total{entry="nccl-watchdog-timeout",role="symptom"}'

        def every_waiting_rank():
            got = prom.query(q)
            return got if len(got) >= RANKS - 1 else []

        deadline = time.time() + 30  # on a loaded machine the watch's next round and the next scrape come later
        watchdog = _until(every_waiting_rank, deadline) or prom.query(q)
        assert sorted(int(s["metric"]["rank"]) for s in watchdog) == sorted(set(range(RANKS)) - {DEAD})
        assert {s["metric"]["class"] for s in watchdog} == {"straggler-timeout"}
        assert prom.query("rankdoctor_ranks_seen")[0]["value"][1] == str(RANKS)
        assert prom.query("process_resident_memory_bytes")  # the watch's own CPU and memory
        # the exported rules, evaluated by Prometheus on those series
        firing = _until(lambda: [a for a in prom.alerts() if a["labels"]["alertname"] == "RankdoctorDiagnosis" and a["state"] == "firing"], deadline)
        assert firing and firing[0]["labels"]["initiating_ranks"] == str(DEAD), prom.alerts()
        # the receiver: the first post answered 500 came again
        got = _until(lambda: len(receiver.accepted()) >= 2, deadline)
        assert got, receiver.posts
    finally:
        try:
            rc = stop(watch, readers)
        finally:
            prom.close()
            receiver.close()
    assert rc == 0, err
    stderr = "".join(line for _, line in err)
    assert "webhook: HTTP 500; trying again in 1 s (1/5)" in stderr, stderr
    assert receiver.posts[0][1] == 500 and receiver.posts[1][2] == receiver.posts[0][2]  # the same body, again

    posts = receiver.accepted()
    for p in posts:
        assert AM_FIELDS <= set(p) and p["version"] == "4" and p["status"] in ("firing", "resolved"), p
        assert isinstance(p["text"], str) and p["text"]  # what Slack-compatible receivers show
        for a in p["alerts"]:
            assert ALERT_FIELDS <= set(a) and a["labels"]["alertname"].startswith("Rankdoctor"), a
            assert a["startsAt"].endswith("Z") and (a["endsAt"] == "0001-01-01T00:00:00Z") == (a["status"] == "firing")
    # deduplicated: one post per change of (verdict, entry, class, initiating ranks), in the
    # order the JSON lines changed; the other posts are changes of silence
    docs = [json.loads(line) for _, line in out]
    changes: list[tuple] = []
    for d in docs:
        key = diagnosis_key(d)
        if (changes and changes[-1] == key) or (not changes and d["verdict"] == "no-failure-found"):
            continue
        changes.append(key)
    new_diagnoses = []
    for p in posts:
        for a in p["alerts"]:
            if a["fingerprint"] in p["rankdoctor"]["new"] and a["labels"]["alertname"] == "RankdoctorDiagnosis":
                lab = a["labels"]
                new_diagnoses.append((lab["verdict"], lab.get("entry"), lab.get("class"), tuple(int(r) for r in lab.get("initiating_ranks", "").split(",") if r)))
    assert new_diagnoses == changes, (new_diagnoses, changes)
    assert changes and changes[-1][3] == (DEAD,)
    bodies = [json.dumps([(a["fingerprint"], a["status"]) for a in p["alerts"]]) for p in posts]
    assert len(bodies) == len(set(bodies)), bodies  # no post repeats the one before
    for p in posts:  # a silence alert names the rank that died, or says all ranks are silent
        for a in p["alerts"]:
            if a["labels"]["alertname"] == "RankdoctorRankSilent":
                assert a["labels"]["silent_ranks"] == str(DEAD), a

    # --on-diagnosis ran once per change of diagnosis (and when ranks went silent), with the
    # diagnosis in its environment and a file
    envs = [dict(line.split("=", 1) for line in e.read_text().splitlines()) for e in sorted(runs.glob("*.env"))]
    on_diagnosis = [e for e in envs if e["RANKDOCTOR_EVENT"] == "diagnosis"]
    assert len(on_diagnosis) == len(changes), envs
    assert all(e["RANKDOCTOR_SILENT_RANKS"] in ("", str(DEAD)) for e in envs), envs
    last = on_diagnosis[-1]
    assert (last["RANKDOCTOR_VERDICT"], last["RANKDOCTOR_ENTRY"], last["RANKDOCTOR_CLASS"], last["RANKDOCTOR_RANKS"]) == (
        changes[-1][0], changes[-1][1], changes[-1][2], str(DEAD))
    copied = [json.loads(p.read_text()) for p in runs.glob("*.json")]
    assert any(diagnosis_key(d) == changes[-1] for d in copied)
    print(f"\n{len(posts)} post(s) accepted, {len(changes)} change(s) of diagnosis: {changes}; test took {time.time() - t_start:.1f} s")


def test_a_refused_post_is_not_retried_and_a_failing_receiver_is_given_up_on():
    receiver = Receiver(codes=[400, 503, 503, 503])
    err = StringIO()
    alerts = Alerts(["logs/"], webhook=receiver.url, err=err, attempts=3, backoff=0.05)
    try:
        assert alerts._post(b'{"text": "one"}') is False  # 400: the receiver refuses this body
        assert len(receiver.posts) == 1
        assert alerts._post(b'{"text": "two"}') is False  # 503 three times: given up
        assert [code for _, code, _ in receiver.posts] == [400, 503, 503, 503]
        waits = [b[0] - a[0] for a, b in zip(receiver.posts[1:], receiver.posts[2:])]
        assert waits[1] > waits[0] >= 0.05  # backoff doubles
        assert alerts._post(b'{"text": "three"}') is True and alerts.posted == 1
    finally:
        alerts.close()
        receiver.close()
    said = err.getvalue()
    assert "HTTP 400: the receiver refused the alert; not tried again" in said
    assert "gave up after 3 attempts" in said
    # nobody listening: the connection error is retried the same way
    dead = f"http://127.0.0.1:{_free_port()}/hook"
    alerts = Alerts(["logs/"], webhook=dead, err=err, attempts=2, backoff=0.01)
    assert alerts._post(b"{}") is False
    alerts.close()
    assert err.getvalue().count("gave up after 2 attempts") == 1
