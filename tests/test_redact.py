"""Redaction: secrets of every kind seeded into real logs never survive (redact, and
diagnose --redact in every format); the command line refuses what it must and never touches
its inputs; the pseudonyms are consistent."""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
import string
from collections import defaultdict
from pathlib import Path

import pytest

from rankdoctor import schemas
from rankdoctor.redact import new_redactor

from .conftest import SCENARIOS, run_cli

# real logs of several shapes: NCCL prefixes under mpirun, Ray, torchrun consoles, srun
REAL_LOGS = [
    SCENARIOS / "real/comms-06-dupgpu-horovod-localrank-zero",
    SCENARIOS / "real/crash2-26-verl-dapo-ray-node-oom-killer-rollout",
    SCENARIOS / "real/crash2-16-ml4m-multinode-rank12-uncorrectable-ecc",
    SCENARIOS / "real/comms2-11-rdzv-c10d-endpoint-ip-no-store-host",
    SCENARIOS / "lab/exception-rank2",
]
PER_KIND = 30  # seeded values of each kind (x 17 kinds: about 500 in all)


def _rand(rng: random.Random, n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    while True:  # upper, lower and digits, as real keys have
        s = "".join(rng.choice(alphabet) for _ in range(n))
        if alphabet != string.ascii_letters + string.digits or (re.search(r"[a-z]", s) and re.search(r"[A-Z]", s) and re.search(r"\d", s)):
            return s


def _seed(rng: random.Random) -> tuple[dict[str, list[str]], list[str]]:
    """Secrets by kind, and log lines that carry them in the forms real logs and configs
    print them."""
    kinds: dict[str, list[str]] = defaultdict(list)
    lines: list[str] = []
    hexd = "0123456789abcdef"
    for i in range(PER_KIND):
        host = f"gpu-{rng.choice(['a', 'b', 'h100', 'dgx'])}{rng.randint(10, 999)}-{_rand(rng, 5, string.ascii_lowercase)}"
        host2 = f"node{rng.randint(100, 9999)}.{_rand(rng, 6, string.ascii_lowercase)}.cluster.local"
        user = _rand(rng, 7, string.ascii_lowercase) + str(rng.randint(1, 99))
        ip = f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
        ip6 = "fd00:" + ":".join(f"{rng.randint(1, 0xffff):x}" for _ in range(7))
        email = f"{_rand(rng, 6, string.ascii_lowercase)}.{_rand(rng, 5, string.ascii_lowercase)}@{_rand(rng, 7, string.ascii_lowercase)}.com"
        aws = "AKIA" + _rand(rng, 16, string.ascii_uppercase + string.digits)
        aws_secret = _rand(rng, 40, string.ascii_letters + string.digits + "/+")
        gcp_key = "AIza" + _rand(rng, 35, string.ascii_letters + string.digits + "_-")
        gcp_pem = "MII" + _rand(rng, 60, string.ascii_letters + string.digits + "+/")
        gcp_key_id = _rand(rng, 40, hexd)
        hf = "hf_" + _rand(rng, 34, string.ascii_letters)
        ghp = "ghp_" + _rand(rng, 36)
        ghpat = "github_pat_" + _rand(rng, 22) + "_" + _rand(rng, 59)
        wandb = _rand(rng, 40, hexd)
        generic = _rand(rng, 32)
        bare = _rand(rng, 40)
        for k, v in [("host", host), ("host", host2), ("user", user), ("ipv4", ip), ("ipv6", ip6), ("email", email),
                     ("aws", aws), ("aws", aws_secret), ("gcp", gcp_key), ("gcp", gcp_pem), ("gcp", gcp_key_id), ("hf", hf),
                     ("github", ghp), ("github", ghpat), ("wandb", wandb), ("generic", generic), ("generic", bare)]:
            kinds[k].append(v)
        pid = rng.randint(1000, 99999)
        lines += [
            f"{host}:{pid}:{pid + 31} [0] NCCL INFO Bootstrap : Using eth0:{ip}<0>",
            f"[rank{i % 4}]:[W socket.cpp:464] [c10d] The client socket has failed to connect to [{host2}]:29500 (errno: 110 - Connection timed out).",
            f"  host      : {host}",
            f"ssh {host} 'nvidia-smi' failed; peer {host2} unreachable from {ip6}",
            f'  File "/home/{user}/project/train.py", line {rng.randint(10, 900)}, in <module>',
            f"Contact {email} about quota on {host}",
            f"AWS_ACCESS_KEY_ID={aws} aws_secret_access_key = {aws_secret}",
            f'{{"type": "service_account", "private_key_id": "{gcp_key_id}", "private_key": "-----BEGIN PRIVATE KEY-----\\n{gcp_pem}\\n-----END PRIVATE KEY-----\\n", "client_email": "{email}"}}',
            f"GOOGLE_API_KEY={gcp_key} python train.py",
            f"huggingface-cli login --token {hf}",
            f"git clone https://{ghp}@github.com/acme/train.git; GH_TOKEN={ghpat}",
            f"wandb login {wandb}",
            f"export SERVICE_TOKEN={generic}",
            f"[rank{i % 4}]: Authorization: Bearer {bare}",
        ]
    for i in range(PER_KIND):  # tokens that only detect-secrets' plugins know
        claims = json.dumps({"sub": _rand(rng, 12), "iat": 1796000000 + i}).encode()
        jwt = ".".join([_b64(b'{"alg":"HS256","typ":"JWT"}'), _b64(claims), _rand(rng, 43, string.ascii_letters + string.digits + "_-")])
        slack = f"xoxb-{rng.randint(10**11, 10**12 - 1)}-{rng.randint(10**12, 10**13 - 1)}-{_rand(rng, 24, string.ascii_lowercase + string.digits)}"
        stripe = "sk_live_" + _rand(rng, 24)
        gitlab = "glpat-" + _rand(rng, 20)
        for k, v in [("jwt", jwt), ("slack", slack), ("stripe", stripe), ("gitlab", gitlab)]:
            kinds[k].append(v)
        lines += [f"[rank{i % 4}]: GET /v1/runs 401 (Authorization: {jwt})", f"notify: SLACK_BOT={slack} STRIPE={stripe}",
                  f"CI_JOB_TOKEN {gitlab} rejected"]
    for i in range(PER_KIND):  # job ids: replaced with --job-ids only
        job, pod = str(rng.randint(1_000_000, 99_999_999)), f"llama-{_rand(rng, 5, string.ascii_lowercase)}-worker-{i}"
        kinds["job-id"].append(job)
        kinds["pod"].append(pod)
        lines += [f"SLURM_JOB_ID={job} SLURM_NODEID=0", f"[pod/{pod}/pytorch] [rank{i % 4}]: step {i} loss 2.31"]
    # a PEM key on lines of its own, as a mounted credential file cat'ed into a log
    pem_lines = [_rand(rng, 64, string.ascii_letters + string.digits + "+/") for _ in range(5)]
    kinds["private-key"].extend(pem_lines)
    lines += ["-----BEGIN RSA PRIVATE KEY-----", *pem_lines, "-----END RSA PRIVATE KEY-----"]
    return kinds, lines


def _b64(data: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _survivors(kinds: dict[str, list[str]], text: str) -> dict[str, int]:
    out = {}
    for kind, values in kinds.items():
        if kind == "ipv4":
            out[kind] = sum(1 for v in set(values) if re.search(r"(?<![\d.])" + re.escape(v) + r"(?!\d)", text))
        else:
            out[kind] = sum(1 for v in set(values) if v in text)
    return out


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    """Real logs under /home/<user>/runs/<host>/, with the seeded lines spread through them."""
    rng = random.Random(17)
    kinds, lines = _seed(rng)
    user, host = kinds["user"][0], kinds["host"][0]
    root = tmp_path_factory.mktemp("seeded") / "home" / user / "runs" / host
    n = 0
    for case in REAL_LOGS:
        for src in sorted(p for p in case.rglob("*") if p.is_file() and p.suffix in (".log", ".txt")):
            dst = root / case.name / src.relative_to(case)
            dst.parent.mkdir(parents=True, exist_ok=True)
            real = src.read_text(encoding="utf-8", errors="replace").splitlines()
            share = lines[n::7]  # each file gets a seventh of the seeded lines, a different seventh
            n = (n + 1) % 7
            for ln in share:
                real.insert(rng.randint(0, len(real)), ln)
            dst.write_text("\n".join(real) + "\n", encoding="utf-8")
    return root, kinds


def _all_text(folder: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in sorted(folder.rglob("*")) if p.is_file())


def test_seeded_secrets_do_not_survive_redact(seeded, tmp_path, capsys):
    root, kinds = seeded
    before = _survivors(kinds, _all_text(root))
    assert all(before[k] == len(set(v)) for k, v in kinds.items()), before  # every seeded value is in the input
    out = tmp_path / "out"
    r = run_cli("redact", str(root), "-o", str(out), "--format", "json", "--job-ids")
    assert r.returncode == 0, r.stderr.decode()
    doc = json.loads(r.stdout)
    schemas.validate("redact", doc)
    assert doc["written"] and not doc["skipped"]
    text = _all_text(out)
    left = _survivors(kinds, text)
    with capsys.disabled():
        print("\nseeded secrets (redact):  " + ", ".join(f"{k} {len(set(v))} -> {left[k]} left" for k, v in sorted(kinds.items())))
    assert sum(left.values()) == 0, left
    # the real log text around them is still there: NCCL's text and the rank prefixes
    assert "NCCL WARN Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 3b000" in text
    assert "[rank0]:" in text
    # one host, one pseudonym: the NCCL prefix and the free-text mention agree
    first = re.search(r"^(host-\d+):\d+:\d+ \[0\] NCCL INFO Bootstrap", text, re.M)[1]
    assert re.search(rf"^ssh {first} 'nvidia-smi'", text, re.M) or re.search(rf"^  host      : {first}$", text, re.M)


@pytest.mark.parametrize("fmt", ["json", "html", "markdown", "text", "github", "junit"])
def test_seeded_secrets_do_not_survive_diagnose(seeded, fmt, capsys):
    root, kinds = seeded
    r = run_cli("diagnose", str(root), "--redact-job-ids", "--format", fmt, "-q")
    assert r.returncode in (1, 3), r.stderr.decode()
    out = r.stdout.decode()
    left = _survivors(kinds, out)
    with capsys.disabled():
        print(f"\nseeded secrets (diagnose --redact --format {fmt}): {sum(len(set(v)) for v in kinds.values())} seeded, {sum(left.values())} left")
    assert sum(left.values()) == 0, left
    assert "rankdoctor-redact-" not in out  # the copies' temporary folder never shows
    assert "/home/user-1/runs/host-" in out  # the inputs' paths, redacted, still say where each line came from


@pytest.mark.parametrize("fmt", ["json", "html"])
def test_without_redact_the_report_does_carry_them(seeded, fmt, capsys):
    """The checks above are not empty: the plain report shows the user's home, host names,
    addresses and tokens from the seeded lines."""
    root, kinds = seeded
    out = run_cli("diagnose", str(root), "--format", fmt, "-q").stdout.decode()
    found = {k: n for k, n in _survivors(kinds, out).items() if n}
    with capsys.disabled():
        print(f"\nseeded values in the plain --format {fmt} report: {sum(found.values())} ({found})")
    assert found.get("user") and found.get("host")


# -- the command line ------------------------------------------------------------------------


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def run_dir(tmp_path):
    src = SCENARIOS / "real/comms-06-dupgpu-horovod-localrank-zero"
    d = tmp_path / "run"
    shutil.copytree(src, d)
    (d / "garbage.bin").write_bytes(bytes(range(256)) * 64)
    (d / "latin1.log").write_bytes(b"[rank1]: caf\xe9 \xff\xfe on gpu-node-17:29500\n[rank1]: RuntimeError: boom\n")
    return d


def test_out_inside_an_input_is_refused(run_dir):
    before = _digest(run_dir)
    for out in (run_dir, run_dir / "redacted", run_dir.parent):
        r = run_cli("redact", str(run_dir), "-o", str(out))
        assert r.returncode == 2
        err = r.stderr.decode()
        assert err.startswith("rankdoctor: error:") and err.count("\n") == 1 and "Traceback" not in err
    assert _digest(run_dir) == before


def test_out_that_holds_files_is_refused(run_dir, tmp_path):
    out = tmp_path / "full"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    r = run_cli("redact", str(run_dir), "-o", str(out))
    assert r.returncode == 2 and b"not an empty folder" in r.stderr
    assert (out / "keep.txt").read_text() == "mine"


def test_binary_and_invalid_utf8_inputs(run_dir, tmp_path):
    before = _digest(run_dir)
    out = tmp_path / "out"
    r = run_cli("redact", str(run_dir), "-o", str(out))
    assert r.returncode == 0, r.stderr.decode()
    assert b"garbage.bin: not a text log" in r.stdout
    assert not (out / "run" / "garbage.bin").exists()
    got = (out / "run" / "latin1.log").read_bytes()
    # the undecodable bytes travel unchanged; the host name does not
    assert re.fullmatch(rb"\[rank1\]: caf\xe9 \xff\xfe on host-\d+:29500\n\[rank1\]: RuntimeError: boom\n", got), got
    assert _digest(run_dir) == before  # inputs unchanged


def test_missing_input_and_stdin(tmp_path):
    r = run_cli("redact", str(tmp_path / "nope"), "-o", str(tmp_path / "out"))
    assert r.returncode == 2 and b"no such file or directory" in r.stderr
    r = run_cli("diagnose", "-", "--redact", "--format", "json", "-q",
                stdin=b"[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB on ip-10-0-3-7\n")
    doc = json.loads(r.stdout)
    assert doc["inputs"][0]["path"] == "<stdin>"
    assert "ip-10-0-3-7" not in r.stdout.decode()


def test_pseudonyms_are_consistent_and_keep_shapes():
    red = new_redactor(job_ids=True)
    texts = [
        "gpu-q-49:1234:5678 [3] NCCL WARN NET/Socket : peer 10.1.2.3<5432> closed; SLURM_JOB_ID=881234",
        "[rank0]: connecting to gpu-q-49:29500 from /home/alice/run; mail bob@corp.example.org",
        "[pod/trainer-worker-3/pytorch] [rank3]: Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE)",
    ]
    for t in texts:
        red.learn(t)
    red.seal()
    a, b, c = (red.apply(t) for t in texts)
    assert a == "host-1:1234:5678 [3] NCCL WARN NET/Socket : peer 192.0.2.1<5432> closed; SLURM_JOB_ID=job-1"
    assert b == "[rank0]: connecting to host-1:29500 from /home/usera/run; mail user-1@example.invalid"
    assert c == "[pod/pod-1/pytorch] [rank3]: Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE)"


def test_archives_compressed_logs_and_flight_recorder_dumps(tmp_path):
    """A .gz log is written unpacked, a tar.gz's members into a folder named after it, and
    Flight Recorder dumps in their own format with their strings redacted: the copies
    analyse as the originals do."""
    import gzip
    import pickle
    import tarfile

    import rankdoctor
    from rankdoctor.flightrec.load import _decode

    run = tmp_path / "run"
    (run / "fr").mkdir(parents=True)
    for dump in sorted((SCENARIOS / "lab/hang-killed/fr").iterdir()):
        obj = _decode(dump.read_bytes(), str(dump))
        for e in obj["entries"]:  # the job ran from a home folder: its frames say so
            for f in e.get("frames", []):
                f["filename"] = f["filename"].replace("/work/main/", "/home/alice9/work/")
        (run / "fr" / dump.name).write_bytes(pickle.dumps(obj))
    line = b"gpu-q-49:11:12 [0] NCCL WARN Call to connect returned Connection refused\n"
    (run / "rank1.log.gz").write_bytes(gzip.compress(line))
    (tmp_path / "m.log").write_bytes(line)
    with tarfile.open(run / "bundle.tar.gz", "w:gz") as tf:
        tf.add(tmp_path / "m.log", arcname="logs/m.log")
    out = tmp_path / "out"
    r = run_cli("redact", str(run), "-o", str(out))
    assert r.returncode == 0, r.stderr.decode()
    assert (out / "run/rank1.log").read_bytes() == (out / "run/bundle/logs/m.log").read_bytes() == \
        b"host-1:11:12 [0] NCCL WARN Call to connect returned Connection refused\n"
    assert all(b"alice9" not in p.read_bytes() for p in (out / "run/fr").iterdir())
    before, after = rankdoctor.fr([str(run / "fr")]).to_json(), rankdoctor.fr([str(out / "run/fr")]).to_json()
    assert after["verdict"] == before["verdict"] and after["ranks_found"] == before["ranks_found"]
    assert [(f["kind"], f["seq"], f["culprit_ranks"]) for f in after["findings"]] == \
        [(f["kind"], f["seq"], f["culprit_ranks"]) for f in before["findings"]]
    assert "/home/user-1/work/lab/_common.py:137" in json.dumps(after)  # the call sites, redacted


def test_python_api_redacts_too():
    import rankdoctor

    case = SCENARIOS / "real/comms-06-dupgpu-horovod-localrank-zero"
    plain, red = rankdoctor.diagnose([str(case)]), rankdoctor.diagnose([str(case)], redact=True)
    assert (red.verdict, red.diagnoses[0].entry) == (plain.verdict, plain.diagnoses[0].entry)
    assert "chifflot-7" in json.dumps(plain.to_json()) and "chifflot-7" not in json.dumps(red.to_json())
    assert red.to_json()["inputs"][0]["path"].startswith(str(case))  # the path as given (nothing private in it)


def test_flight_recorder_dumps_given_with_fr_are_redacted_copies_too():
    import rankdoctor

    case = SCENARIOS / "lab-pg2d" / "exception-tp2dp4-r5-s3"
    plain = rankdoctor.diagnose([str(case / "logs")], fr=str(case / "fr"))
    red = rankdoctor.diagnose([str(case / "logs")], fr=str(case / "fr"), redact=True)
    top, rtop = plain.diagnoses[0], red.diagnoses[0]
    assert (rtop.entry, rtop.klass, rtop.initiating_ranks) == (top.entry, top.klass, top.initiating_ranks)
    sources = {e.source for f in red.diagnoses for e in f.evidence}
    assert sources and all(s.startswith(str(case)) for s in sources), sources  # shown as the inputs, not the copies


# lines whose every character the diagnosis may read (formats from the scenario corpus)
INTACT = [
    "[rank3]:[E1202 00:08:28.533000 140 torch/distributed/c10d.py:123] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for 600037 milliseconds before timing out.",
    "[default3]:2026-11-30 05:30:51,079 WARNING train: rank 3: last enqueued work: 8, last completed work: 7",
    "3: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.15 GiB",
    "[1,3]<stderr>: NCCL WARN Duplicate GPU detected : rank 3 and rank 1 both on CUDA device 3b000",
    "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered at 0x7f3a2b4c5d6e (busId 1b000)",
    "2026-09-17T13:40:02.123456Z [rank: 3] Exception raised from c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout",
    "torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -9) local_rank: 3 (pid: 4242) of binary: /usr/bin/python3",
    # a mangled C++ symbol is the extension's ABI, not a key (InternLM/InternLM-XComposer#393)
    "ImportError: /opt/venv/lib/python3.10/site-packages/awq_inference_engine.cpython-310-x86_64-linux-gnu.so: undefined symbol: "
    "_ZN2at4_ops15sum_dim_IntList4callERKNS_6TensorEN3c1016OptionalArrayRefIlEEbNS5_8optionalINS5_10ScalarTypeEEE",
]


def test_what_the_diagnosis_reads_is_left_alone():
    from rankdoctor.ingest.prefix import parse_prefix

    red = new_redactor()
    nccl = "gpu-q-49:12345:12399 [3] NCCL INFO Channel 00/02 : 0[3] -> 1[3] via P2P/IPC"
    for t in [*INTACT, nccl]:
        red.learn(t)
    red.seal()
    assert [red.apply(t) for t in INTACT] == INTACT
    got = red.apply(nccl)
    assert got == "host-1:12345:12399 [3] NCCL INFO Channel 00/02 : 0[3] -> 1[3] via P2P/IPC"
    before, after = parse_prefix(nccl)[0], parse_prefix(got)[0]
    assert (after.host, after.pid, after.device) == ("host-1", before.pid, before.device)


def test_literal_pattern_of_very_long_and_deeply_nested_words():
    """A token of thousands of characters (a base64 DeepSpeed config on a launcher's command
    line, as in EleutherAI/gpt-neox#940) and a thousand words that are prefixes of each other
    both give a working pattern, never a RecursionError."""
    from rankdoctor.redact.redactor import _literal_pattern

    inside = re.compile(r"[\w.-]")
    long_word = "eyJ0cmFpbl9iYXRjaF9zaXplIjogMiwg" * 200
    p = _literal_pattern([long_word, "node12"], inside)
    assert p.search(f"cmd '{long_word}' on node12").group() == long_word
    nested = ["a" * i for i in range(1, 1200)]
    p = _literal_pattern(nested, inside)
    assert p.search(" aaaa ").group() == "aaaa"
    assert p.search(" aaaab ") is None  # bounded: not inside a longer word
