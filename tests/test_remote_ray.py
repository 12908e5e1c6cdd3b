"""``rankdoctor diagnose --engine ray`` on a real Ray cluster: a head node and a second node
started with ``ray start`` on this machine (1 CPU each), reading a 1,024-rank run from local
paths and from a real S3-compatible server (moto). The JSON report is the local engine's,
byte for byte. The cluster is this module's: started once, stopped at the end (its own
processes only)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .conftest import LOCAL_INPUTS, ROOT, S3_INPUTS
from .remote_support import LocalRayCluster, RayUnavailable, assert_one_line_error, rd


@pytest.fixture(scope="module")
def cluster(s3_server):
    """Two Ray nodes whose workers reach the S3 server (its endpoint and keys in their
    environment, as a real cluster's nodes have theirs). Launched first, waited for by the
    tests: the corpus and the local reports are made while the nodes start."""
    c = LocalRayCluster(nodes=2, cpus_per_node=1, env=s3_server.env())
    try:
        yield c.launch()
    except RayUnavailable as exc:  # installed (the Makefile installs it), but it cannot run here
        _unavailable(exc)
    finally:
        c.stop()


def ready(c: LocalRayCluster) -> str:
    try:
        return c.wait().address
    except RayUnavailable as exc:
        _unavailable(exc)


def _unavailable(exc: Exception) -> None:
    """The Makefile installs what a local cluster needs, so one that does not start is a failure
    (a missing dependency once hid here as a skip); RANKDOCTOR_RAY_MAY_SKIP=1 makes it a skip
    on a machine that cannot run Ray at all."""
    msg = f"a local Ray cluster cannot start on this machine: {exc}"
    if os.environ.get("RANKDOCTOR_RAY_MAY_SKIP") == "1":
        pytest.skip(msg)
    pytest.fail(msg)


def test_ray_report_is_the_local_one_from_local_paths(cluster, remote_corpus, local_reports):
    ray = rd("diagnose", *LOCAL_INPUTS, "--engine", "ray", "--address", ready(cluster), "--format", "json", cwd=remote_corpus)
    assert ray.returncode == 1, ray.stderr
    assert ray.stdout == local_reports["local"].stdout
    assert b'"count": 1024' in ray.stdout


def test_ray_report_is_the_local_one_from_s3(cluster, s3_corpus, local_reports):
    """The tasks read the objects themselves: the driver lists them and reads their heads."""
    ray = rd("diagnose", *S3_INPUTS, "--engine", "ray", "--address", ready(cluster), "--format", "json", env=s3_corpus.env())
    assert ray.returncode == 1, ray.stderr
    assert ray.stdout == local_reports["s3"].stdout


def test_no_cluster_at_the_address_is_one_line_exit_2(remote_corpus):
    from .remote_support import free_ports

    p = rd("diagnose", "console.log", "--engine", "ray", "--address", f"127.0.0.1:{free_ports(1)[0]}", cwd=remote_corpus)
    assert_one_line_error(p, "no Ray cluster answers at 127.0.0.1:")


def test_address_without_the_ray_engine_is_refused():
    assert_one_line_error(rd("diagnose", "x.log", "--address", "127.0.0.1:6379"), "--engine ray")


def test_without_ray_installed_it_says_what_to_install():
    """The base install has no Ray: --engine ray is one line naming the extra."""
    code = "import sys; sys.modules['ray'] = None; from rankdoctor.cli import main; sys.argv[0] = 'rankdoctor'; main()"
    p = subprocess.run([sys.executable, "-c", code, "diagnose", "--engine", "ray", "x.log"], capture_output=True, cwd=ROOT, timeout=60)
    assert_one_line_error(p, "rankdoctor[ray]")
