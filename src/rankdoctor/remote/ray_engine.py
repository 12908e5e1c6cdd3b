"""``rankdoctor diagnose --engine ray``: the scan's work items as Ray tasks on a cluster.

The work is planned exactly as the local process pool plans it (``parallel.plan_scan``:
batches of whole sources, byte ranges of large plain files cut at the chunk boundaries
the single-process reader uses), each item runs as one Ray task, and the results are put
back together by the same ``parallel.merge_plan`` — so the scan, the rank table and the
diagnosis are the ones a local run gives, byte for byte in the JSON report.

A task gets the names of what it reads, never the bytes: a batch of sources (a local
path, or an object in storage: ``ingest.storage.RemoteFile``) or one byte range, and
opens it itself, close to the data. Inputs given by URL (s3://, gs://) are read by the
workers from storage with the workers' own credentials; local paths must be readable at
the same path on every node (a shared filesystem; relative paths from the driver's
working directory). The pattern table travels once (the
object store); each worker process compiles its scanner once and keeps it. Standard input
is read here, in this process. Every node needs rankdoctor installed (the same version),
with the extras for the URLs it reads.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import socket
import sys
from collections.abc import Callable

# Ray is imported before anything imports hyperscan (``..scan``): Ray loads its core library
# with RTLD_GLOBAL, and loaded after hyperscan's extension that aborts the process ("free():
# invalid pointer", ray 2.60.0 with hyperscan 0.7.21); the other way round both work (as in a
# Ray worker, which imports ray first).
_TOO_LATE = "hyperscan" in sys.modules and "ray" not in sys.modules
_ray = None
if not _TOO_LATE:
    try:
        import ray as _ray
    except ImportError:
        pass

from ..events import ScanResult  # noqa: E402
from ..ingest.sources import CHUNK, Source, InputError  # noqa: E402
from ..parallel import Progress, _scan_range, merge_plan, plan_scan, submit_plan  # noqa: E402
from ..scan import Row, Scanner, scan_sources  # noqa: E402


class EngineError(InputError):
    """The cluster cannot be used (Ray missing, no cluster at the address, a task failed):
    one line for the terminal, exit status 2."""


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return (lines[-1] if lines else text)[:300]


def import_ray():
    """The ray module, or EngineError saying how to install it."""
    if _ray is None:
        if _TOO_LATE:
            raise EngineError("internal: rankdoctor.remote.ray_engine must be imported before hyperscan")
        raise EngineError("--engine ray needs Ray on this machine and the cluster's: pip install 'rankdoctor[ray]'")
    return _ray


# -- what runs on the workers ---------------------------------------------------------------

_SCANNERS: dict[str, Scanner] = {}  # one per worker process and pattern table


def _scanner(key: str, table: list[Row]) -> Scanner:
    scanner = _SCANNERS.get(key)
    if scanner is None:
        _SCANNERS.clear()
        scanner = _SCANNERS[key] = Scanner(table=table)
    return scanner


def _at(cwd: str) -> None:
    """Relative local paths are the driver's: read them from its working directory (the
    same folder on a shared filesystem; no such folder here: the paths stay unreadable and
    the report says so)."""
    if os.getcwd() != cwd:
        try:
            os.chdir(cwd)
        except OSError:
            pass


def _scan_batch(key: str, table: list[Row], cwd: str, sources: list[Source], chunk_size: int) -> ScanResult:
    _at(cwd)
    return scan_sources(None, sources, _scanner(key, table), chunk_size=chunk_size)


def _scan_one_range(key: str, table: list[Row], cwd: str, r, dialect, chunk_size: int):
    _at(cwd)
    return _scan_range(r, dialect, chunk_size, _scanner(key, table))


# -- the driver ------------------------------------------------------------------------------


def connect(address: str | None):
    """Connect to the Ray cluster at ``address`` (None: ``$RAY_ADDRESS``, else the cluster
    started on this machine with ``ray start``, else a new local one) quietly: nothing of
    Ray's on stdout, only errors on stderr."""
    ray = import_ray()
    if ray.is_initialized():
        return ray
    _probe(address or os.environ.get("RAY_ADDRESS"))
    try:
        ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)
    except Exception as exc:  # ConnectionError, ValueError (a bad address), RuntimeError...
        where = f"at {address}" if address else "(none given: $RAY_ADDRESS, the local one, or a new one)"
        raise EngineError(f"cannot use the Ray cluster {where}: {_one_line(exc)}") from None
    return ray


def _probe(address: str | None, timeout: float = 5) -> None:
    """Fail in one line when nothing listens at a ``host:port`` address (ray.init would
    wait for it for many minutes)."""
    if not address or "://" in address or address in ("auto", "local"):
        return
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise EngineError(f"--address {address}: expected HOST:PORT of the cluster's head (ray start --head prints it), or auto")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise EngineError(f"no Ray cluster answers at {address}: {exc.strerror or exc}") from None


def cluster_cpus(ray) -> int:
    try:
        return max(1, int(ray.cluster_resources().get("CPU", 1)))
    except Exception:  # pragma: no cover - a cluster that does not answer: one task at a time
        return 1


def scan_ray(
    sources: list[Source],
    table: list[Row],
    address: str | None = None,
    jobs: int | None = None,
    progress: Progress | None = None,
    *,
    scanner: Scanner | None = None,
    chunk_size: int = CHUNK,
    range_bytes: int | None = None,
    meanwhile: Callable[[], object] | None = None,
) -> ScanResult:
    """``scan_sources`` of ``sources`` with the patterns of ``table``, computed by Ray tasks
    on the cluster at ``address``: the same result. ``jobs`` (default: the cluster's CPUs)
    sizes the work items, as ``--jobs`` does for the local pool."""
    ours = not (import_ray().is_initialized())  # a caller that connected itself keeps its connection
    ray = connect(address)
    try:
        jobs = jobs or cluster_cpus(ray)
        plan = plan_scan(sources, jobs, chunk_size, range_bytes)
        key = hashlib.sha256(pickle.dumps(table, protocol=4)).hexdigest()
        table_ref = ray.put(table)
        batch = ray.remote(num_cpus=1)(_scan_batch)
        one_range = ray.remote(num_cpus=1)(_scan_one_range)
        cwd = os.getcwd()
        handles = submit_plan(
            plan, lambda indexes: batch.remote(key, table_ref, cwd, [sources[i] for i in indexes], chunk_size),
            lambda r, dialect: one_range.remote(key, table_ref, cwd, r, dialect, chunk_size))
        if meanwhile is not None:
            meanwhile()
        scanner = scanner or Scanner(table=table)
        return merge_plan(scanner, sources, plan, handles, _getter(ray), chunk_size, progress)
    finally:
        if ours:
            ray.shutdown()


def _getter(ray) -> Callable[[object], object]:
    def get(ref):
        try:
            return ray.get(ref)
        except ray.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None) or exc
            raise EngineError(f"a Ray task failed: {type(cause).__name__}: {_one_line(cause)}") from None
        except ray.exceptions.RayError as exc:  # a worker or node died, the object was lost...
            raise EngineError(f"the Ray cluster failed the scan: {type(exc).__name__}: {_one_line(exc)}") from None

    return get


__all__ = ["scan_ray", "connect", "import_ray", "EngineError"]
