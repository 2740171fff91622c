"""What the sandbox remembers: received requests, tasks, credits, result files and uploads.

A long-running sandbox (the embedded one runs as long as the bot) must not grow without end: it keeps
the last RECEIVED_LIMIT requests, the bodies of the most recent ones only (RECEIVED_BODY_BYTES in
all), finished tasks for TASK_RETENTION_S (and at most TASK_LIMIT of them), and result files
within FILE_STORE_LIMIT; a forgotten task's result files go with it.
"""

from __future__ import annotations

import secrets
import time
from collections import Counter, OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

RECORDED_BODY_LIMIT = 64 * 1024
#: requests kept in `received`; a long-running sandbox forgets the oldest beyond this
RECEIVED_LIMIT = 10_000
#: bytes of request bodies kept in all; older requests keep their method, path and headers only
RECEIVED_BODY_BYTES = 32 * 1024 * 1024
#: seconds a finished task can still be queried before it is forgotten (the service's own lifetime is
#: not documented; the bot reads a result within seconds of its completion)
TASK_RETENTION_S = 3600.0
#: finished tasks kept at most; the oldest are forgotten first
TASK_LIMIT = 20_000
#: finished tasks are looked for once every this many new tasks (a pass reads every task)
PRUNE_EVERY = 256
#: bytes of result and upload files kept in memory before the oldest are forgotten
FILE_STORE_LIMIT = 128 * 1024 * 1024
BUSINESS_ID = "sandbox-business"
#: seconds an upload slot takes PUTs, like the provider's presigned upload URLs
UPLOAD_SLOT_SECONDS = 15 * 60.0

CONTENT_TYPES = {"jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "webp": "image/webp",
                 "mp4": "video/mp4"}


def now_ms() -> int:
    """Wall-clock milliseconds, the scale of createTime and updateTime."""
    return int(time.time() * 1000)


def new_task_id() -> str:
    """A task id in the service's format: 32 lowercase hex characters."""
    return secrets.token_hex(16)


class HeaderDict(dict[str, str]):
    """Request headers keyed by lower-case name; lookups ignore case."""

    def __init__(self, items: Iterable[tuple[str, str]] = ()) -> None:
        super().__init__((name.lower(), value) for name, value in items)

    def __getitem__(self, name: str) -> str:
        return super().__getitem__(name.lower())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and super().__contains__(name.lower())

    def get(self, name: str, default: str | None = None) -> str | None:  # type: ignore[override]
        return super().get(name.lower(), default)


@dataclass(frozen=True)
class ReceivedRequest:
    """One request as the sandbox received it (headers and body stay out of the repr).

    `body_dropped` once the body was forgotten to keep memory bounded (see RECEIVED_BODY_BYTES).
    """

    method: str
    path: str
    query_string: str
    headers: HeaderDict = field(repr=False)
    body: bytes = field(repr=False)
    body_dropped: bool = False


@dataclass(frozen=True)
class AvatarGroup:
    """The headshot files made for one template."""

    template_id: str
    files: tuple[str, ...]


@dataclass(frozen=True)
class Outcome:
    """What a task reports once its time is up: result files, or why it failed."""

    files: tuple[str, ...] = ()
    avatar_groups: tuple[AvatarGroup, ...] = ()
    failure: str | None = None
    nsfw: bool = False
    #: tokens a successful task costs when not one per output image (videos)
    tokens: int | None = None

    @property
    def image_count(self) -> int:
        """Output images."""
        return len(self.files) + sum(len(group.files) for group in self.avatar_groups)

    @property
    def cost(self) -> int:
        """What a successful task costs in tokens: its own figure, else one per output image."""
        return self.image_count if self.tokens is None else self.tokens


@dataclass
class SandboxTask:
    """One task: status 0 until due_at has passed and its outcome is ready, then 1 or 2."""

    task_id: str
    operation: str
    created_at: float
    due_at: float
    created_ms: int = field(default_factory=now_ms)
    updated_ms: int = 0
    status: int = 0
    outcome: Outcome | None = None
    result_files: list[str] = field(default_factory=list)
    result_urls: list[str] = field(default_factory=list)
    reason: str | None = None
    nsfw: bool = False
    polls: int = 0
    completed_at: float | None = None
    #: tokens the finished task cost, reported as creditsIncrement
    credits_increment: int | None = None

    def __post_init__(self) -> None:
        if not self.updated_ms:
            self.updated_ms = self.created_ms

    @property
    def type(self) -> str:
        """The task type the query reports ("avatar" for headshots, else the operation)."""
        return self.operation

    @property
    def is_headshot(self) -> bool:
        """Whether results come in avatarResult rather than resultUrl."""
        return self.operation == "avatar"


@dataclass(frozen=True)
class StoredFile:
    """Bytes served over HTTP with their content type."""

    data: bytes
    content_type: str


class FileStore:
    """Named files in memory; the oldest are dropped once the total passes a byte limit."""

    def __init__(self, limit_bytes: int = FILE_STORE_LIMIT) -> None:
        self._files: OrderedDict[str, StoredFile] = OrderedDict()
        self._limit = limit_bytes
        self._total = 0

    def put(self, name: str, data: bytes, content_type: str) -> None:
        """Store a file under name, replacing any file of that name."""
        old = self._files.pop(name, None)
        if old is not None:
            self._total -= len(old.data)
        self._files[name] = StoredFile(data, content_type)
        self._total += len(data)
        while self._total > self._limit and len(self._files) > 1:
            _, dropped = self._files.popitem(last=False)
            self._total -= len(dropped.data)

    def add(self, data: bytes, suffix: str) -> str:
        """Store a file under a fresh random name ending in suffix; return the name."""
        name = f"{secrets.token_hex(16)}.{suffix}"
        self.put(name, data, CONTENT_TYPES.get(suffix, "application/octet-stream"))
        return name

    def get(self, name: str) -> StoredFile | None:
        """The file stored under name, if it is still kept."""
        return self._files.get(name)

    def discard(self, name: str) -> None:
        """Forget the file stored under name, if any."""
        dropped = self._files.pop(name, None)
        if dropped is not None:
            self._total -= len(dropped.data)

    @property
    def total_bytes(self) -> int:
        """Bytes of all the files kept."""
        return self._total

    def __contains__(self, name: object) -> bool:
        return name in self._files

    def __len__(self) -> int:
        return len(self._files)


class UploadSlots:
    """Upload tokens, each bound to the file name its bytes are served under, usable until it expires.

    Like an S3 presigned URL, a live token takes any number of PUTs, each replacing the bytes, so a
    client may repeat a PUT whose answer it lost.
    """

    def __init__(self, lifetime_s: float = UPLOAD_SLOT_SECONDS) -> None:
        if lifetime_s <= 0:
            raise ValueError("upload slot lifetime must be positive")
        self._lifetime = lifetime_s
        # every slot lives equally long, so insertion order is expiry order
        self._live: dict[str, tuple[str, float]] = {}

    def open(self, suffix: str) -> tuple[str, str]:
        """A new (token, file name) pair, live for the slot lifetime."""
        self._forget_expired()
        token = secrets.token_urlsafe(24)
        name = f"{secrets.token_hex(16)}.{suffix}"
        self._live[token] = (name, time.monotonic() + self._lifetime)
        return token, name

    def name_for(self, token: str) -> str | None:
        """The file name of a live token; None for an unknown or expired one."""
        entry = self._live.get(token)
        if entry is None:
            return None
        name, expires_at = entry
        if time.monotonic() >= expires_at:
            del self._live[token]
            return None
        return name

    def __len__(self) -> int:
        return len(self._live)

    def _forget_expired(self) -> None:
        # a long-running sandbox signs many slots that are never used; drop them once they expire
        now = time.monotonic()
        while self._live:
            token, (_, expires_at) = next(iter(self._live.items()))
            if expires_at > now:
                break
            del self._live[token]


@dataclass
class SandboxState:
    """Everything the sandbox's routes read and change."""

    credits_total: int
    credits_remaining: int
    received: list[ReceivedRequest] = field(default_factory=list)
    tasks: dict[str, SandboxTask] = field(default_factory=dict)
    results: FileStore = field(default_factory=FileStore)
    uploads: FileStore = field(default_factory=FileStore)
    upload_slots: UploadSlots = field(default_factory=UploadSlots)
    faults_injected: Counter[str] = field(default_factory=Counter)
    #: bytes of the bodies still kept in `received`, and where they start (earlier ones were dropped)
    body_bytes: int = field(default=0, repr=False)
    _bodies_from: int = field(default=0, repr=False)

    def remember(self, request: ReceivedRequest) -> None:
        """Record a received request; past RECEIVED_BODY_BYTES the oldest bodies are dropped, past
        RECEIVED_LIMIT the oldest requests."""
        self.received.append(request)
        self.body_bytes += len(request.body)
        # the newest request keeps its body whatever its size: a test reads the one it just sent
        while self.body_bytes > RECEIVED_BODY_BYTES and self._bodies_from < len(self.received) - 1:
            old = self.received[self._bodies_from]
            if old.body:
                self.body_bytes -= len(old.body)
                self.received[self._bodies_from] = replace(old, body=b"", body_dropped=True)
            self._bodies_from += 1
        if len(self.received) > RECEIVED_LIMIT:
            # trim in batches so a busy sandbox does not shift the list on every request
            cut = len(self.received) - RECEIVED_LIMIT + RECEIVED_LIMIT // 10
            self.body_bytes -= sum(len(old.body) for old in self.received[self._bodies_from:cut])
            del self.received[:cut]
            self._bodies_from = max(0, self._bodies_from - cut)

    def forget_finished(self, now: float, *, retention_s: float | None = None, limit: int | None = None) -> int:
        """Forget finished tasks (and their result files) done more than `retention_s` (TASK_RETENTION_S)
        ago (monotonic `now`), then the oldest finished ones past `limit` (TASK_LIMIT); tasks still
        running stay. Returns how many were forgotten."""
        retention_s = TASK_RETENTION_S if retention_s is None else retention_s
        limit = TASK_LIMIT if limit is None else limit
        finished = [task for task in self.tasks.values() if task.completed_at is not None]
        expired = [task for task in finished if now - task.completed_at >= retention_s]
        kept = len(finished) - len(expired)
        if kept > limit:
            expired += sorted((task for task in finished if now - task.completed_at < retention_s),
                              key=lambda task: task.completed_at)[: kept - limit]
        for task in expired:
            del self.tasks[task.task_id]
            for name in task.result_files:
                self.results.discard(name)
        return len(expired)

    def charge(self, tokens: int) -> None:
        """Take tokens for a successful task; the balance never goes below zero."""
        self.credits_remaining = max(0, self.credits_remaining - tokens)
