"""What the bot counts for /metrics: prometheus-client metrics in a registry of their own (never the global one).

A leaf like i18n: the worker, the Telegram layer and the HTTP server each record into one Metrics
made at start-up and passed down; `bot.http` renders it. Counts are this process's since it started
(sum them across replicas); `jobs_waiting` is read from the database at each scrape, so it is the
whole deployment's.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

#: seconds, from a fraction of a second (a fast task) to the job deadline
_TIME_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 40, 60, 120, 300, 600, 1200)
_POLL_BUCKETS = (1, 2, 3, 4, 5, 7, 10, 15, 20, 50)


class Metrics:
    """The bot's metrics, registered in `registry`."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        r = self.registry
        self.jobs_created = Counter("bot_jobs_created", "Jobs queued, by operation", ["operation"], registry=r)
        self.jobs_finished = Counter("bot_jobs_finished", "Jobs that reached a final state, by operation and state",
                                     ["operation", "state"], registry=r)
        self.queue_seconds = Histogram("bot_job_queue_seconds", "From queued to submitted to the service",
                                       ["operation"], buckets=_TIME_BUCKETS, registry=r)
        self.service_seconds = Histogram("bot_job_service_seconds", "From submitted to the result seen by a poll",
                                         ["operation"], buckets=_TIME_BUCKETS, registry=r)
        self.deliver_seconds = Histogram("bot_job_deliver_seconds", "From the result seen to the result sent",
                                         ["operation"], buckets=_TIME_BUCKETS, registry=r)
        self.service_calls = Counter("bot_service_calls", "Calls to the image service, by call and outcome",
                                     ["call", "outcome"], registry=r)
        self.polls_per_task = Histogram("bot_polls_per_task", "Status checks a task took until it ended",
                                        buckets=_POLL_BUCKETS, registry=r)
        self.callbacks = Counter("bot_service_callbacks", "Service callbacks received, by what they did",
                                 ["outcome"], registry=r)
        self.telegram_calls = Counter("bot_telegram_calls", "Bot API calls, by method", ["method"], registry=r)
        self.telegram_429 = Counter("bot_telegram_429", "Bot API calls answered 429 Too Many Requests",
                                    ["method"], registry=r)
        self.updates = Counter("bot_updates", "Telegram updates received, by way and what became of them",
                               ["source", "outcome"], registry=r)
        self.jobs_waiting = Gauge("bot_jobs_waiting", "Unfinished jobs in the database, by state", ["state"],
                                  registry=r)

    def render(self) -> bytes:
        """The text exposition format of every metric."""
        return generate_latest(self.registry)
