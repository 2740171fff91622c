"""Settings of the embedded sandbox: timing, credits, rate limit, size caps and fault injection."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from bot.sandbox.callbacks import CallbackFaults
from bot.sandbox.state import UPLOAD_SLOT_SECONDS

FAULT_KINDS: tuple[str, ...] = ("500", "429", "timeout", "drop", "malformed")


@dataclass
class FaultConfig:
    """Which faults the sandbox injects into /v1 requests, and how often (off by default)."""

    rate: float = 0.0
    kinds: tuple[str, ...] = FAULT_KINDS
    timeout_seconds: float = 30.0
    fail_task_rate: float = 0.0
    seed: int | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError("fault rate must be between 0 and 1")
        if not 0.0 <= self.fail_task_rate <= 1.0:
            raise ValueError("fail_task_rate must be between 0 and 1")
        if self.timeout_seconds < 0:
            raise ValueError("timeout_seconds must not be negative")
        unknown = [kind for kind in self.kinds if kind not in FAULT_KINDS]
        if unknown or (self.rate > 0 and not self.kinds):
            raise ValueError(f"fault kinds must be a non-empty selection of {', '.join(FAULT_KINDS)}")


@dataclass
class SandboxConfig:
    """How the sandbox behaves; the defaults model a healthy service with slow-ish tasks."""

    api_key: str = field(default="sandbox-key", repr=False)
    task_seconds: float = 3.0
    #: (operation, task_id) -> seconds a task stays at status 0; overrides task_seconds when set
    task_duration: Callable[[str, str], float] | None = None
    #: (operation, task_id, input_pixels) -> seconds, called once the task's images are loaded with the largest
    #: one's pixel count (None without a readable image), so time can grow with size; overrides task_duration
    task_duration_by_size: Callable[[str, str, int | None], float] | None = None
    credits: int = 1000
    #: None turns rate limiting off; otherwise a token bucket with burst max(1, rate)
    rate_limit_per_s: float | None = None
    max_image_bytes: int = 25 * 1024 * 1024
    #: seconds a signed upload URL takes PUTs (repeats replace the bytes); then it answers 403
    upload_slot_seconds: float = UPLOAD_SLOT_SECONDS
    faults: FaultConfig = field(default_factory=FaultConfig)
    #: where to POST a task's callback when it ends (None: no callbacks); may be set after start
    webhook_url: str | None = None
    #: the root URL clients reach the sandbox at, for the URLs it hands out (uploads, results), when that is
    #: not the address it listens on (0.0.0.0 in a container: `http://sandbox:8090`)
    public_url: str | None = None
    #: lost, late and duplicated callbacks
    webhook_faults: CallbackFaults = field(default_factory=CallbackFaults)
    #: say "sandbox" in every /v1 answer (a header), so a client marks its test pictures as such; off only
    #: where the sandbox stands in for the real service, as in the tests of what users of the real one see
    announce: bool = True
    #: operations from outside the bot's package (bot.operations.registry.Extra)
    extra_operations: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if not self.api_key:
            raise ValueError("api_key must not be empty")
        if self.task_seconds < 0:
            raise ValueError("task_seconds must not be negative")
        if self.rate_limit_per_s is not None and self.rate_limit_per_s <= 0:
            raise ValueError("rate_limit_per_s must be positive (or None for no limit)")
        if self.max_image_bytes <= 0:
            raise ValueError("max_image_bytes must be positive")
        if self.upload_slot_seconds <= 0:
            raise ValueError("upload_slot_seconds must be positive")

    @property
    def duration_needs_input(self) -> bool:
        """Whether a task's duration waits for its input's size (task_duration_by_size)."""
        return self.task_duration_by_size is not None

    def duration_of(self, operation: str, task_id: str, input_pixels: int | None = None) -> float:
        """Seconds the task stays in progress before it finishes."""
        if self.task_duration_by_size is not None:
            duration = self.task_duration_by_size(operation, task_id, input_pixels)
        elif self.task_duration is not None:
            duration = self.task_duration(operation, task_id)
        else:
            return self.task_seconds
        return max(0.0, float(duration))
