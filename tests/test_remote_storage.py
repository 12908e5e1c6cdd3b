"""Inputs named by URL (ingest/storage.py): s3:// from a real S3-compatible server (moto's
server mode) and file://, read in ranges through fsspec by the local engine. The same files
give the same report as local paths, only the names shown differ (each object's URL); what
cannot be read is one line on stderr and exit status 2, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .conftest import ROOT
from .remote_support import assert_one_line_error, rd


def test_s3_prefix_gives_the_report_of_the_same_local_files(local_reports):
    local, s3 = local_reports["local"], local_reports["s3"]
    assert local.returncode == 1, local.stderr
    assert s3.returncode == 1, s3.stderr
    assert s3.stderr == b""
    assert b'"count": 1024' in local.stdout and b'"initiating_rank": 592' in local.stdout
    # the names shown are the objects' URLs: s3://rd-logs/nodes/node_074.log for nodes/node_074.log
    assert b"s3://rd-logs/nodes/node_074.log" in s3.stdout
    assert s3.stdout.decode().replace("s3://rd-logs/", "") == local.stdout.decode()


def test_file_url_and_a_folder_of_archives(remote_corpus, tmp_path):
    """file:// goes through fsspec too: a tar.gz, a .gz and a plain log read from it give
    what the same local files give."""
    import gzip
    import tarfile

    with tarfile.open(tmp_path / "run.tar.gz", "w:gz") as tf:
        for n in (0, 1, 74, 127):
            tf.add(remote_corpus / "nodes" / f"node_{n:03d}.log", f"logs/node_{n:03d}.log")
    (tmp_path / "console.log.gz").write_bytes(gzip.compress((remote_corpus / "console.log").read_bytes()[: 3 << 20], 1))
    local = rd("diagnose", "run.tar.gz", "console.log.gz", "--format", "json", cwd=tmp_path)
    url = rd("diagnose", f"file://{tmp_path}/run.tar.gz", f"file://{tmp_path}/console.log.gz", "--format", "json")
    assert local.returncode in (1, 3), local.stderr
    assert url.stdout.decode().replace(f"file://{tmp_path}/", "") == local.stdout.decode()


@pytest.mark.parametrize("url, words", [
    ("foo://bucket/logs", ["foo://bucket/logs", "scheme 'foo'", "s3://"]),
    ("s3://", ["no bucket"]),
    ("s3://no-such-bucket/logs/", ["s3://no-such-bucket/logs/", "bucket does not exist"]),
    ("s3://rd-logs/nothing-here/", ["s3://rd-logs/nothing-here/", "no such file or directory"]),
])
def test_bad_urls_are_one_line_exit_2(s3_corpus, url, words):
    assert_one_line_error(rd("diagnose", url, env=s3_corpus.env()), *words)


def test_no_credentials_is_one_line_exit_2(s3_corpus, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ENDPOINT_URL=s3_corpus.endpoint, AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
               AWS_CONFIG_FILE=str(tmp_path / "none"), AWS_EC2_METADATA_DISABLED="true", AWS_DEFAULT_REGION="us-east-1")
    p = subprocess.run([sys.executable, "-m", "rankdoctor.cli", "diagnose", "s3://rd-logs/nodes/"], capture_output=True,
                       cwd=ROOT, env=env, timeout=120)
    assert_one_line_error(p, "s3://rd-logs/nodes/", "credentials")


def test_without_the_s3_extra_it_says_what_to_install():
    """Where s3fs is not installed (the base install), an s3:// URL is one line naming the extra."""
    code = "import sys; sys.modules['s3fs'] = None; from rankdoctor.cli import main; sys.argv[0] = 'rankdoctor'; main()"
    p = subprocess.run([sys.executable, "-c", code, "diagnose", "s3://bucket/logs/"], capture_output=True, cwd=ROOT, timeout=60)
    assert_one_line_error(p, "s3fs", "rankdoctor[s3]")
