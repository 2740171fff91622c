"""A task's life: created at status 0, its work done in the background, finished once its time is up."""

from __future__ import annotations

import asyncio
import io
import logging
import time
from collections.abc import Callable

from PIL import Image

from bot.sandbox.callbacks import CallbackSender
from bot.sandbox.config import SandboxConfig
from bot.sandbox.faults import FaultInjector
from bot.sandbox.inputs import ImageLoader
from bot.sandbox.operations import InputError, Rendering, render
from bot.sandbox.payloads import TaskSpec
from bot.sandbox.responses import avatar_url
from bot.sandbox.state import PRUNE_EVERY, AvatarGroup, Outcome, SandboxState, SandboxTask, new_task_id, now_ms

logger = logging.getLogger("bot.sandbox")

NSFW_TRIGGER = "sandbox-nsfw"
FAIL_TRIGGER = "sandbox-fail"
#: Pillow jobs at once; more would only queue for the same two cores and hold more images in memory
RENDER_CONCURRENCY = 2


class TaskRunner:
    """Creates tasks, does their work off the event loop, and moves them to status 1 or 2."""

    def __init__(self, state: SandboxState, config: SandboxConfig, faults: FaultInjector,
                 loader: ImageLoader, file_url: Callable[[str], str]) -> None:
        self._state = state
        self._config = config
        self._faults = faults
        self._loader = loader
        self._file_url = file_url
        self._render_slots = asyncio.Semaphore(RENDER_CONCURRENCY)
        self._jobs: set[asyncio.Task[None]] = set()
        self._created = 0
        self._callbacks: CallbackSender | None = None

    def create(self, spec: TaskSpec) -> SandboxTask:
        """Register a task at status 0 and start its work."""
        task_id = new_task_id()
        created = time.monotonic()
        self._created += 1
        if self._created % PRUNE_EVERY == 0:
            # finished tasks are forgotten after a while, or the task list grows for as long as the sandbox runs
            self._state.forget_finished(created)
        # a duration that depends on the input's size is set once the input is loaded (_prepare);
        # the task cannot finish before that anyway
        duration = 0.0 if self._config.duration_needs_input else self._config.duration_of(spec.operation, task_id)
        task = SandboxTask(task_id=task_id, operation=spec.operation, created_at=created, due_at=created + duration)
        self._state.tasks[task_id] = task
        injected_failure = self._faults.fails_task()
        job = asyncio.create_task(self._run(task, spec, injected_failure), name=f"sandbox-task-{task_id}")
        self._jobs.add(job)
        job.add_done_callback(self._jobs.discard)
        logger.info("sandbox task %s created (%s)", task_id, spec.operation)
        return task

    def settle(self, task: SandboxTask) -> None:
        """Finish the task if its time is up and its work is done; otherwise leave it at status 0."""
        if task.status != 0 or task.outcome is None or time.monotonic() < task.due_at:
            return
        outcome = task.outcome
        task.updated_ms = now_ms()
        task.completed_at = time.monotonic()
        if outcome.failure is not None:
            task.status = 2
            task.reason = outcome.failure
            task.nsfw = outcome.nsfw
            logger.info("sandbox task %s failed: %s", task.task_id, outcome.failure)
            self._call_back(task)
            return
        task.status = 1
        task.result_files = list(outcome.files) + [name for group in outcome.avatar_groups for name in group.files]
        if task.is_headshot:
            task.result_urls = [avatar_url(name) for name in task.result_files]
        else:
            task.result_urls = [self._file_url(name) for name in task.result_files]
        task.credits_increment = outcome.cost
        self._state.charge(outcome.cost)
        logger.info("sandbox task %s completed with %d image(s)", task.task_id, outcome.image_count)
        self._call_back(task)

    @property
    def callbacks(self) -> CallbackSender | None:
        """What sends task callbacks (once a webhook URL is configured and a task ended)."""
        return self._callbacks

    def _call_back(self, task: SandboxTask) -> None:
        url = self._config.webhook_url
        if not url:
            return
        if self._callbacks is None or self._callbacks.url != url:
            self._callbacks = CallbackSender(url, self._config.webhook_faults)
        self._callbacks.task_ended(task)

    async def close(self) -> None:
        """Cancel the work still running."""
        jobs = list(self._jobs)
        for job in jobs:
            job.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)
        if self._callbacks is not None:
            await self._callbacks.close()

    async def _run(self, task: SandboxTask, spec: TaskSpec, injected_failure: bool) -> None:
        task.outcome = await self._prepare(task, spec, injected_failure)
        delay = task.due_at - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        self.settle(task)

    async def _prepare(self, task: SandboxTask, spec: TaskSpec, injected_failure: bool) -> Outcome:
        if not self._config.duration_needs_input:
            return await self._outcome(task, spec, injected_failure)
        inputs: dict[str, bytes] = {}
        try:
            inputs = {role: await self._loader.load(reference) for role, reference in spec.images.items()}
        except InputError:
            pass  # the outcome below loads them again and fails the task with the reason
        task.due_at = task.created_at + self._config.duration_of(spec.operation, task.task_id, _largest_pixels(inputs))
        return await self._outcome(task, spec, injected_failure, inputs or None)

    async def _outcome(self, task: SandboxTask, spec: TaskSpec, injected_failure: bool,
                       loaded: dict[str, bytes] | None = None) -> Outcome:
        if NSFW_TRIGGER in spec.prompt:
            return Outcome(failure="content rejected as NSFW", nsfw=True)
        if FAIL_TRIGGER in spec.prompt:
            return Outcome(failure="generation failed")
        if injected_failure:
            return Outcome(failure="generation failed (injected fault)")
        try:
            inputs = loaded or {role: await self._loader.load(reference) for role, reference in spec.images.items()}
            async with self._render_slots:
                rendering = await asyncio.to_thread(render, spec.operation, spec.params, inputs,
                                                    self._config.extra_operations)
        except InputError as error:
            return Outcome(failure=str(error))
        except Exception:
            logger.exception("sandbox task %s: unexpected error in %s", task.task_id, spec.operation)
            return Outcome(failure="internal error")
        return self._store(rendering)

    def _store(self, rendering: Rendering) -> Outcome:
        files = tuple(self._state.results.add(item.data, item.suffix) for item in rendering.images)
        groups = tuple(AvatarGroup(template_id, tuple(self._state.results.add(item.data, item.suffix)
                                                      for item in items))
                       for template_id, items in rendering.groups)
        return Outcome(files=files, avatar_groups=groups, tokens=rendering.tokens)


def _largest_pixels(inputs: dict[str, bytes]) -> int | None:
    """The pixel count of the largest readable input image (its header only), None without one."""
    sizes = []
    for data in inputs.values():
        try:
            with Image.open(io.BytesIO(data)) as image:
                sizes.append(image.width * image.height)
        except (OSError, ValueError, Image.DecompressionBombError):
            continue
    return max(sizes, default=None)
