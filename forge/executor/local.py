"""Local executor: a process pool compiles in parallel; one device slot measures serially.

When the device *is* this machine's CPU (`Backend.measures_on_host`), a compiler running beside a
measurement would steal its cores, so measurement and compilation take turns: before a
measurement starts, new builds are held back and the running ones finish; after it, the held
builds go out together.
"""
from __future__ import annotations

import os
import platform
import queue
import signal
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from forge.backends.base import Artifact, Backend
from forge.executor.base import Executor, Job, Outcome, after_build, build, measure, precheck


class LocalExecutor(Executor):
    def __init__(self, backend: Backend, cache_dir: Path, build_workers: int | None = None):
        super().__init__(backend, cache_dir, build_workers or max(1, len(os.sched_getaffinity(0))))
        self.pool = self._new_pool()
        self.device_queue: queue.Queue = queue.Queue()
        self.out: queue.Queue = queue.Queue()
        self._pending = 0
        self._lock = threading.Lock()
        self._exclusive = bool(getattr(backend, "measures_on_host", False))
        self._gate = threading.Condition()
        self._building = 0
        self._measuring = False
        self._held: list[Job] = []
        self._closed = False
        self.device = threading.Thread(target=self._device_loop, name="forge-device-slot", daemon=True)
        self.device.start()

    def _new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=self.build_workers, initializer=_worker_signals)

    def submit(self, job: Job) -> None:
        with self._lock:
            self._pending += 1
        early = precheck(self.backend, job)
        if early:
            self.out.put(early)
            return
        with self._gate:
            if self._exclusive and self._measuring:
                self._held.append(job)
                return
            self._dispatch(job)

    def _dispatch(self, job: Job) -> None:
        """Start one build (the caller holds the gate). After close() nothing new starts: the run
        is stopping, and a job dropped here was never measured, so a resume proposes it again."""
        if self._closed:
            return
        self._building += 1
        try:
            fut = self.pool.submit(build, self.backend, job.variant, self.cache_dir)
        except BrokenProcessPool:
            self.pool = self._new_pool()
            fut = self.pool.submit(build, self.backend, job.variant, self.cache_dir)
        fut.add_done_callback(lambda f, job=job: self._built(job, f))

    def _built(self, job: Job, fut: Future) -> None:
        try:
            artifact = fut.result()
        except Exception as exc:  # the build worker itself died
            artifact = Artifact(job.variant.key(), "", ok=False, error=f"build worker lost: {type(exc).__name__}: {exc}")
        with self._gate:
            self._building -= 1
            self._gate.notify_all()
        self.device_queue.put((job, artifact))

    def _measure_alone(self, job: Job, artifact: Artifact):
        if not self._exclusive:
            return measure(self.backend, job, artifact)
        with self._gate:
            self._measuring = True
            self._gate.wait_for(lambda: self._building == 0)
        try:
            return measure(self.backend, job, artifact)
        finally:
            with self._gate:
                self._measuring = False
                held, self._held = self._held, []
                for j in held:
                    self._dispatch(j)

    def _device_loop(self) -> None:
        while True:
            item = self.device_queue.get()
            if item is None:
                return
            job, artifact = item
            verdict = self.backend.check(job.variant)
            outcome = after_build(job, verdict, artifact)
            if outcome is None:
                outcome = Outcome(job, verdict, artifact, self._measure_alone(job, artifact))
            outcome.host = platform.node()
            self.out.put(outcome)

    def pending(self) -> int:
        with self._lock:
            return self._pending

    def next_result(self, timeout: float | None = None) -> Outcome | None:
        try:
            outcome = self.out.get(timeout=timeout)
        except queue.Empty:
            return None
        with self._lock:
            self._pending -= 1
        return outcome

    def close(self) -> None:
        with self._gate:
            self._closed = True
            running = self._building
        self.device_queue.put(None)
        # Waited for, not left to shut down in the background: a pool shut down with wait=False
        # can still be closing its wake-up pipe when the interpreter's exit hook writes to it
        # ("OSError: Bad file descriptor" at exit, the CPython gh-83279 family of races). Builds
        # still running (after Ctrl-C; workers ignore SIGINT) are stopped first so the wait is
        # short: a build publishes its cache entry by rename, so a stopped one leaves no half entry.
        if running:
            for proc in list((getattr(self.pool, "_processes", None) or {}).values()):
                proc.terminate()
        self.pool.shutdown(wait=True, cancel_futures=True)


def _worker_signals() -> None:
    """Build workers leave Ctrl-C to the parent, which stops the run and keeps what is recorded;
    otherwise every worker prints its own KeyboardInterrupt traceback. SIGTERM gets its default
    back (the CLI turns it into an interrupt in the parent): the pool stops a worker with it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with_parent()


def _die_with_parent() -> None:
    """A worker outlives a parent killed by SIGKILL, waiting on its task pipe forever; Linux can
    send it SIGKILL when the parent goes (prctl PR_SET_PDEATHSIG). Elsewhere nothing is done."""
    if platform.system() != "Linux":
        return
    import ctypes

    pr_set_pdeathsig = 1
    try:
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:          # the parent died before the call: nothing would signal us
        os._exit(1)
