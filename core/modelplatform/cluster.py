"""``platform serve --workers N``: N server processes behind the same ports.

The parent process (the supervisor) serves no requests. It starts N worker
processes, each a complete server binding the HTTP and gRPC ports with
SO_REUSEPORT (the kernel spreads new connections over them), and owns a
unix socket in a private temporary folder through which the workers talk:

- **Model operations.** A load or unload that reaches a worker through any
  API (``ModelManager.load``/``unload``, as the repository plugin calls them)
  is applied there, then sent to the supervisor, which relays it to every
  other worker and answers once all have applied it: the caller's answer
  comes after every worker holds the same models. Uploaded model folders
  (temporary ones) are copied for each sibling first, since each worker
  deletes its own copy when done with it. Start-up loads and poll-mode
  rescans are not relayed: every worker does those itself.
- **Statistics.** A worker asked for statistics asks every sibling for its
  own counters of the same query (through the supervisor) and answers the
  sums, so clients see one server whichever worker their connection hit.
- **Readiness.** Each worker reports its own readiness when it changes; the
  supervisor tells all workers whether every one of them is ready, and a
  worker reports itself not ready (a drain reason) until they all are.

Messages are length-prefixed pickles between processes of one user on one
machine. A worker that exits stops the whole server (no silent half-service).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import multiprocessing
import os
import pickle
import shutil
import signal
import struct
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from .errors import InvalidArgument, ModelPlatformError
from .models import LoadOverride, ModelManager
from .settings import Settings
from .stats import ModelStats

log = structlog.get_logger("modelplatform.cluster")

_LENGTH = struct.Struct("!I")
#: The drain reason a worker shows while a sibling is not ready.
WAITING = "waiting for every worker to be ready"
#: How often a worker looks at its own readiness.
READINESS_EVERY_S = 0.05
#: How long a relayed model operation may take on the siblings.
OPERATION_TIMEOUT_S = 600.0
#: How long a worker waits for its siblings' statistics before answering its own.
STATISTICS_TIMEOUT_S = 10.0


async def _send(writer: asyncio.StreamWriter, message: tuple[Any, ...]) -> None:
    data = pickle.dumps(message)
    writer.write(_LENGTH.pack(len(data)) + data)
    await writer.drain()


async def _receive(reader: asyncio.StreamReader) -> tuple[Any, ...]:
    (length,) = _LENGTH.unpack(await reader.readexactly(_LENGTH.size))
    return pickle.loads(await reader.readexactly(length))


# ------------------------------------------------------------------ supervisor


@dataclass(eq=False)
class _Operation:
    origin: int
    waiting: set[int]
    errors: list[str]


class Supervisor:
    """Starts the workers, relays model operations, aggregates readiness."""

    def __init__(self, settings: Settings, worker: Callable[[Settings, int, str], None]) -> None:
        self.settings = settings
        self.count = settings.workers
        self._worker = worker
        self._folder = Path(tempfile.mkdtemp(prefix="modelplatform-cluster-"))
        self.path = str(self._folder / "cluster.sock")
        self._writers: dict[int, asyncio.StreamWriter] = {}
        self._ready: dict[int, bool] = {}
        self._all_ready = False
        self._operations: dict[int, _Operation] = {}
        self._queries: dict[int, _Query] = {}
        self._processes: list[multiprocessing.process.BaseProcess] = []

    async def run(self) -> int:
        server = await asyncio.start_unix_server(self._serve_worker, path=self.path)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        context = multiprocessing.get_context("spawn")  # no inherited loop, threads or gRPC state
        for index in range(self.count):
            process = context.Process(
                target=self._worker, args=(self.settings, index, self.path), name=f"worker-{index}"
            )
            process.start()
            self._processes.append(process)
        log.info("workers_started", workers=self.count, pids=[p.pid for p in self._processes])
        exited = asyncio.ensure_future(self._first_exit())
        stopped = asyncio.ensure_future(stop.wait())
        await asyncio.wait({exited, stopped}, return_when=asyncio.FIRST_COMPLETED)
        code = 0 if stopped.done() else 1
        if not stopped.done():
            log.error("worker_exited", code=exited.result())
        exited.cancel()
        stopped.cancel()
        await self._stop_workers()
        server.close()
        shutil.rmtree(self._folder, ignore_errors=True)
        return code

    async def _first_exit(self) -> int | None:
        while all(p.is_alive() for p in self._processes):
            await asyncio.sleep(0.2)
        return next(p.exitcode for p in self._processes if not p.is_alive())

    async def _stop_workers(self) -> None:
        for process in self._processes:
            if process.is_alive() and process.pid is not None:
                os.kill(process.pid, signal.SIGTERM)
        for process in self._processes:
            await asyncio.to_thread(process.join, 30)
            if process.is_alive():
                process.kill()

    async def _serve_worker(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        index = -1
        try:
            _, index = await _receive(reader)
            self._writers[index] = writer
            while True:
                await self._handle(index, await _receive(reader))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._writers.pop(index, None)
            self._ready.pop(index, None)
            await self._publish_readiness()
            for op_id in [i for i, op in self._operations.items() if index in op.waiting]:
                await self._done(op_id, index, f"worker {index} went away")
            for query_id in [i for i, q in self._queries.items() if index in q.waiting]:
                await self._answered(query_id, index, [])

    async def _handle(self, index: int, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "ready":
            self._ready[index] = message[1]
            await self._publish_readiness()
        elif kind == "operation":
            await self._relay(index, message[1], message[2])
        elif kind == "done":
            await self._done(message[1], index, message[2])
        elif kind == "stats_query":
            await self._ask(index, message[1], message[2], message[3])
        elif kind == "stats_answer":
            await self._answered(message[1], index, message[2])

    async def _publish_readiness(self) -> None:
        ready = len(self._ready) == self.count and all(self._ready.values())
        if ready == self._all_ready:
            return
        self._all_ready = ready
        log.info("workers_readiness_changed", ready=ready)
        for writer in list(self._writers.values()):
            with contextlib.suppress(ConnectionError):
                await _send(writer, ("all_ready", ready))

    async def _relay(self, origin: int, op_id: int, payloads: list[tuple[Any, ...]]) -> None:
        siblings = [i for i in sorted(self._writers) if i != origin]
        self._operations[op_id] = _Operation(origin, set(siblings), [])
        for sibling, payload in zip(siblings, itertools.cycle(payloads) if payloads else ()):
            await _send(self._writers[sibling], ("apply", op_id, payload))
        if not siblings:
            await self._done(op_id, origin, None)

    async def _done(self, op_id: int, index: int, error: str | None) -> None:
        operation = self._operations.get(op_id)
        if operation is None:
            return
        operation.waiting.discard(index)
        if error:
            operation.errors.append(f"worker {index}: {error}")
        if operation.waiting:
            return
        del self._operations[op_id]
        writer = self._writers.get(operation.origin)
        if writer is not None:
            with contextlib.suppress(ConnectionError):
                await _send(writer, ("result", op_id, operation.errors))


    async def _ask(self, origin: int, query_id: int, name: str, version: str) -> None:
        siblings = [i for i in sorted(self._writers) if i != origin]
        self._queries[query_id] = _Query(origin, set(siblings), [])
        for sibling in siblings:
            await _send(self._writers[sibling], ("stats_query", query_id, name, version))
        if not siblings:
            await self._answered(query_id, origin, [])

    async def _answered(self, query_id: int, index: int, stats: list[Any]) -> None:
        query = self._queries.get(query_id)
        if query is None:
            return
        query.waiting.discard(index)
        if stats:
            query.parts.append(stats)
        if query.waiting:
            return
        del self._queries[query_id]
        writer = self._writers.get(query.origin)
        if writer is not None:
            with contextlib.suppress(ConnectionError):
                await _send(writer, ("stats_result", query_id, query.parts))


@dataclass(eq=False)
class _Query:
    origin: int
    waiting: set[int]
    parts: list[list[Any]]


# ------------------------------------------------------------------ worker


class Member:
    """A worker's link to the supervisor: relays its model operations, tracks readiness.

    Installed as ``ModelManager.replicator``: the manager calls :meth:`replicate`
    after applying a load or unload that arrived through an API.
    """

    def __init__(self, index: int, count: int, models: ModelManager, local_ready: Callable[[], bool],
                 drain_reasons: set[str],
                 local_statistics: Callable[[str, str], list[ModelStats]] | None = None) -> None:
        self.index = index
        self.count = count
        self._models = models
        self._local_ready = local_ready
        self._drain = drain_reasons
        self._ids = itertools.count(index * 1_000_000_000)
        self._results: dict[int, asyncio.Future[list[str]]] = {}
        self._local_statistics = local_statistics
        self._answers: dict[int, asyncio.Future[list[list[ModelStats]]]] = {}
        self._writer: asyncio.StreamWriter | None = None
        self._tasks: list[asyncio.Task[None]] = []

    async def join(self, path: str) -> None:
        self._drain.add(WAITING)
        reader, self._writer = await asyncio.open_unix_connection(path)
        await _send(self._writer, ("hello", self.index))
        self._tasks = [
            asyncio.ensure_future(self._read(reader)),
            asyncio.ensure_future(self._watch_readiness()),
        ]
        self._models.replicator = self

    async def leave(self) -> None:
        self._models.replicator = None
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._writer is not None:
            self._writer.close()

    async def replicate(self, operation: str, name: str, override: LoadOverride | None,
                        copies: list[Path]) -> None:
        """Apply ``operation`` on every sibling; raises if one of them failed."""
        if self._writer is None or self.count < 2:
            return
        payloads = [(operation, name, _portable(override, copy)) for copy in copies] or [
            (operation, name, _portable(override, None))
        ]
        op_id = next(self._ids)
        result: asyncio.Future[list[str]] = asyncio.get_running_loop().create_future()
        self._results[op_id] = result
        try:
            await _send(self._writer, ("operation", op_id, payloads))
            errors = await asyncio.wait_for(result, OPERATION_TIMEOUT_S)
        finally:
            self._results.pop(op_id, None)
        if errors:
            raise InvalidArgument(f"{operation} of '{name}' failed on a sibling worker: {'; '.join(errors)}")

    async def statistics(self, name: str, version: str) -> list[list[ModelStats]]:
        """Every sibling's own statistics for this query (DataPlane sums them)."""
        if self._writer is None or self.count < 2:
            return []
        query_id = next(self._ids)
        answer: asyncio.Future[list[list[ModelStats]]] = asyncio.get_running_loop().create_future()
        self._answers[query_id] = answer
        try:
            await _send(self._writer, ("stats_query", query_id, name, version))
            return await asyncio.wait_for(answer, STATISTICS_TIMEOUT_S)
        except asyncio.TimeoutError:
            log.warning("sibling_statistics_timed_out", model=name, version=version)
            return []
        finally:
            self._answers.pop(query_id, None)

    async def sibling_copies(self, override: LoadOverride) -> list[Path]:
        """One copy of an uploaded (temporary) model folder per sibling."""
        if not override.temporary or override.model_dir is None or self.count < 2:
            return []
        source = override.model_dir
        return await asyncio.to_thread(_copies, source, self.count - 1)

    async def _read(self, reader: asyncio.StreamReader) -> None:
        while True:
            message = await _receive(reader)
            if message[0] == "all_ready":
                (self._drain.discard if message[1] else self._drain.add)(WAITING)
            elif message[0] == "result":
                future = self._results.get(message[1])
                if future is not None and not future.done():
                    future.set_result(message[2])
            elif message[0] == "apply":
                asyncio.ensure_future(self._apply(message[1], message[2]))
            elif message[0] == "stats_query":
                await self._answer(message[1], message[2], message[3])
            elif message[0] == "stats_result":
                pending = self._answers.get(message[1])
                if pending is not None and not pending.done():
                    pending.set_result(message[2])

    async def _answer(self, query_id: int, name: str, version: str) -> None:
        stats: list[ModelStats] = []
        if self._local_statistics is not None:
            with contextlib.suppress(ModelPlatformError):  # not loaded here: nothing to add
                stats = self._local_statistics(name, version)
        if self._writer is not None:
            await _send(self._writer, ("stats_answer", query_id, stats))

    async def _apply(self, op_id: int, payload: tuple[Any, ...]) -> None:
        operation, name, override = payload
        error: str | None = None
        try:
            if operation == "load":
                await self._models.load(name, _restored(override), replicate=False)
            else:
                await self._models.unload(name, replicate=False)
        except ModelPlatformError as failure:
            error = failure.message
        except Exception as failure:  # noqa: BLE001 - reported to the origin, never lost
            error = f"{type(failure).__name__}: {failure}"
        log.info("model_operation_relayed", operation=operation, model=name, error=error)
        if self._writer is not None:
            await _send(self._writer, ("done", op_id, error))

    async def _watch_readiness(self) -> None:
        reported: bool | None = None
        while True:
            ready = self._local_ready()
            if ready != reported and self._writer is not None:
                await _send(self._writer, ("ready", ready))
                reported = ready
            await asyncio.sleep(READINESS_EVERY_S)


def _copies(source: Path, count: int) -> list[Path]:
    copies = []
    for _ in range(count):
        target = Path(tempfile.mkdtemp(prefix="modelplatform-upload-")) / source.name
        shutil.copytree(source, target)
        copies.append(target)
    return copies


def _portable(override: LoadOverride | None, model_dir: Path | None) -> tuple[Any, ...] | None:
    """A LoadOverride as plain picklable values (the config as serialised protobuf)."""
    if override is None:
        return None
    config = override.config.SerializeToString() if override.config is not None else None
    folder = model_dir if model_dir is not None else override.model_dir
    return config, str(folder) if folder else None, override.temporary and model_dir is not None


def _restored(portable: tuple[Any, ...] | None) -> LoadOverride | None:
    if portable is None:
        return None
    from .protos import model_config_pb2 as pb

    config_bytes, folder, temporary = portable
    config = pb.ModelConfig.FromString(config_bytes) if config_bytes is not None else None
    return LoadOverride(config, Path(folder) if folder else None, temporary)
