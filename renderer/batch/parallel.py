"""Running batch jobs: in this process, over local worker processes, or on an existing Dask cluster.

Each job is a pure function of its ``ModelJob`` and returns bytes, so where it runs does not change what is
written. Results come back in job order, each checked against its job (``ModelJob.token``) before it is used. A
job that raises (a bug, or a worker lost more often than Dask retries) becomes an error result for its model; the
others are unaffected.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

from renderer.batch.job import ModelJob, ModelResult, run_job
from renderer.core.errors import AnnographError, UsageError


def local_workers(requested: int | None) -> int:
    """``requested``, or the cores this process may use."""
    if requested is not None:
        if requested < 1:
            raise UsageError("--jobs must be 1 or more")
        return requested
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def run_local(jobs: list[ModelJob], workers: int) -> Iterator[ModelResult]:
    """Results in job order; several jobs run in worker processes (one job alone runs here)."""
    if workers <= 1 or len(jobs) <= 1:
        for job in jobs:
            yield run_job(job)
        return
    from concurrent.futures import ProcessPoolExecutor

    from renderer.core.progress import silence

    with ProcessPoolExecutor(max_workers=min(workers, len(jobs)), initializer=silence) as pool:
        futures = [pool.submit(run_job, job) for job in jobs]
        for job, future in zip(jobs, futures):
            yield _result(job, future)


def run_dask(jobs: list[ModelJob], address: str) -> Iterator[ModelResult]:
    """Results in job order from the Dask scheduler at ``address`` (a lost worker's task is re-run by Dask)."""
    try:
        from distributed import Client
    except ImportError:
        raise AnnographError("--dask needs dask.distributed: pip install 'annograph[dask]'") from None
    try:
        client = Client(address, timeout="20s", set_as_default=False)
    except (OSError, TimeoutError, ValueError) as e:
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise AnnographError(f"--dask {address}: cannot reach the scheduler ({why})") from None
    with client:
        # Dask treats tasks of equal keys as one: every key is new to this run (and its files may have changed
        # since an earlier run of the same jobs), so a batch never receives another batch's results.
        run = uuid.uuid4().hex
        keys = [f"annograph-batch-{run}-{i}-{job.token()[:16]}" for i, job in enumerate(jobs)]
        futures = client.map(run_job, jobs, pure=False, key=keys)
        for job, future in zip(jobs, futures):
            yield _result(job, future)


def _result(job: ModelJob, future) -> ModelResult:  # type: ignore[no-untyped-def]
    try:
        result = future.result()
    except Exception as e:  # noqa: BLE001  a bug, a crashed worker: this model fails, the batch goes on
        first = str(e).splitlines()[0] if str(e) else ""
        return ModelResult(job.model, error=f"{job.model}: failed in a worker: {type(e).__name__}: {first}")
    if not isinstance(result, ModelResult) or result.job != job.token():
        return ModelResult(job.model, error=f"{job.model}: the worker returned the result of another job; "
                                            "nothing of it was written")
    return result
