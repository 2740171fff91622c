"""ORM models: the jobs, chats and users tables, portable between SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Dialect,
    Float,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

from bot.store.records import JobState

# Named constraints keep Alembic's batch mode (SQLite table rebuilds) and PostgreSQL in step.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# SQLite only auto-increments a column declared exactly INTEGER PRIMARY KEY.
BigIntId = BigInteger().with_variant(Integer(), "sqlite")


class UTCDateTime(TypeDecorator[datetime]):
    """Timestamps that go in and come out timezone-aware UTC on every backend."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Refuse naive datetimes (their zone is a guess) and store UTC."""
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError("naive datetime given to the store; pass a timezone-aware one")
        value = value.astimezone(UTC)
        # SQLite keeps text without an offset: strip it so every stored value compares as UTC.
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Read naive values as UTC and convert aware ones to UTC."""
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class JobStateType(TypeDecorator[JobState]):
    """A JobState stored as its plain string value (no native enum to migrate)."""

    impl = String(16)
    cache_ok = True

    def process_bind_param(self, value: JobState | str | None, dialect: Dialect) -> str | None:
        """Store the value, rejecting strings that are not a state."""
        return None if value is None else JobState(value).value

    def process_result_value(self, value: str | None, dialect: Dialect) -> JobState | None:
        """Turn the stored string back into a JobState."""
        return None if value is None else JobState(value)


class Base(DeclarativeBase):
    """Declarative base holding the shared metadata."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Job(Base):
    """A user's request to the image service, from queued to a final state."""

    __tablename__ = "jobs"
    __table_args__ = (
        Index(None, "state", "next_check_at"),  # claiming due work
        Index(None, "chat_id", "state"),  # a chat's active jobs, /status and /cancel
        Index(None, "user_id", "created_at"),  # per-user quotas
        Index(None, "task_id"),  # a service callback names its task
    )

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True, autoincrement=True)
    chat_id: Mapped[int] = mapped_column(BigInteger)
    user_id: Mapped[int | None] = mapped_column(BigInteger)
    chat_type: Mapped[str] = mapped_column(String(16))
    reply_to_message_id: Mapped[int | None] = mapped_column(BigInteger)
    status_message_id: Mapped[int | None] = mapped_column(BigInteger)
    operation: Mapped[str] = mapped_column(String(64))
    args: Mapped[dict[str, Any]] = mapped_column(JSON)
    inputs: Mapped[list[str]] = mapped_column(JSON)
    task_id: Mapped[str | None] = mapped_column(String(255))
    state: Mapped[JobState] = mapped_column(JobStateType())
    attempts: Mapped[int] = mapped_column(Integer)
    next_check_at: Mapped[datetime] = mapped_column(UTCDateTime())
    deadline_at: Mapped[datetime] = mapped_column(UTCDateTime())
    lease_owner: Mapped[str | None] = mapped_column(String(255))
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime())
    result_urls: Mapped[list[str]] = mapped_column(JSON)
    #: why the job failed, in words a user may read (the kind of failure is in failure_kind)
    error: Mapped[str | None] = mapped_column(Text)
    sent_message_ids: Mapped[list[int]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    submitted_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    #: pixels of the largest input image as submitted (the poll schedule places checks by input size)
    input_pixels: Mapped[int | None] = mapped_column(BigInteger)
    #: the request was refused in the chat (bad arguments or input) and never queued; kept for the record
    refused: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    #: the kind of failure once one is decided (the worker's FailureKind); on an unfinished job it means
    #: the failure is decided but the user is not told yet, which is all that job's next step does
    failure_kind: Mapped[str | None] = mapped_column(String(16))
    #: the language its results and notices are written in (bot.i18n.LANGUAGES)
    language: Mapped[str] = mapped_column(String(8), default="en", server_default="en")
    #: the Telegram files the result was delivered as ({"id": file id, "kind": "photo" or "document"}), in order
    result_files: Mapped[list[dict[str, str]]] = mapped_column(JSON, default=list, server_default="[]")
    #: the status text last shown for the job (its status message is edited only when this changes)
    progress: Mapped[str | None] = mapped_column(String(255))
    #: credits reserved for the job when it was queued (bot.credits): charged on delivery, else given back
    credits: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    #: the inline message (inline mode) that shows the job and is edited into its result; None: a chat job
    inline_message_id: Mapped[str | None] = mapped_column(String(255))
    #: when the service's callback for its task arrived (any replica's poll rule counts it heard or lost)
    callback_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    #: what the task cost at the service in its tokens (`creditsIncrement`), once a finished task reports it
    service_cost: Mapped[int | None] = mapped_column(Integer)


class Chat(Base):
    """A chat the bot has seen."""

    __tablename__ = "chats"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    type: Mapped[str] = mapped_column(String(16))
    title: Mapped[str | None] = mapped_column(String(255))
    first_seen: Mapped[datetime] = mapped_column(UTCDateTime())
    last_seen: Mapped[datetime] = mapped_column(UTCDateTime())
    #: the language chosen for the chat's own texts (a group's); unset: each person's
    language: Mapped[str | None] = mapped_column(String(8))
    #: the chat's settings (a group's defaults), by name
    settings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, server_default="{}")


class User(Base):
    """A user the bot has seen."""

    __tablename__ = "users"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    username: Mapped[str | None] = mapped_column(String(64))
    first_name: Mapped[str | None] = mapped_column(String(255))
    first_seen: Mapped[datetime] = mapped_column(UTCDateTime())
    last_seen: Mapped[datetime] = mapped_column(UTCDateTime())
    #: the language the user chose with /language; unset: Telegram's language_code
    language: Mapped[str | None] = mapped_column(String(8))
    #: the user's settings (defaults for operations), by name
    settings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, server_default="{}")


class Conversation(Base):
    """What a conversation needs across messages (a face swap's first photo, an album being collected, a
    style picker's photos, a menu already answered), so any replica can take the next message."""

    __tablename__ = "conversations"
    __table_args__ = (
        Index(None, "expires_at"),  # cleanup
        Index(None, "due_at"),  # albums whose quiet time is over
    )

    chat_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    #: what the row is: "pending" (key: the sender), "picker" (key: the picker's message), "menu" (menu:step)
    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    #: a row past this is gone (cleanup deletes it; readers ignore it)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    #: set on an album being collected: when it is complete unless another item comes first
    due_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class Replica(Base):
    """A running bot process, seen recently: replicas split the bot's Telegram budget between those alive."""

    __tablename__ = "replicas"

    id: Mapped[str] = mapped_column(String(255), primary_key=True)
    seen_at: Mapped[datetime] = mapped_column(UTCDateTime())


class ChatSend(Base):
    """A chat's next free moment to post in, shared by all replicas (Telegram's per-chat limit is the bot's)."""

    __tablename__ = "chat_sends"

    chat_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    #: the theoretical arrival time of the next call (GCRA), in seconds of the database's clock
    tat: Mapped[float] = mapped_column(Float)
    #: how many calls have been taken in the chat (the number of the last one)
    taken: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    #: which of the last calls still await their answer: bit i stands for call number `taken - i`
    flying: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class CreditAccount(Base):
    """A balance of credits: a user's bought ones ("user"), their daily free allowance ("free"), a group's pool
    ("pool"), a subscriber's credits of the current period ("plan"), the free credits given on a day ("budget").

    `balance` always equals the sum of the account's ledger rows: both change in one transaction.
    """

    __tablename__ = "credit_accounts"
    __table_args__ = (
        PrimaryKeyConstraint("kind", "owner_id"),
        CheckConstraint("balance >= 0", name="balance_not_negative"),
    )

    kind: Mapped[str] = mapped_column(String(8))
    #: a user id ("user", "free") or a chat id ("pool")
    owner_id: Mapped[int] = mapped_column(BigInteger, autoincrement=False)
    balance: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    #: a pool's per-member daily cap (None: no cap)
    member_cap: Mapped[int | None] = mapped_column(BigInteger)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


class CreditEntry(Base):
    """One append-only change of an account's balance: how much, why, and the job or payment it belongs to."""

    __tablename__ = "credit_ledger"
    __table_args__ = (
        Index(None, "kind", "owner_id", "created_at"),
        Index(None, "job_id"),
        Index(None, "charge_id"),
    )

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(8))
    owner_id: Mapped[int] = mapped_column(BigInteger)
    amount: Mapped[int] = mapped_column(BigInteger)
    #: reserve, charge, refund (a job's); purchase, purchase_fix, payment_refund, refund_undone; allowance; pool_in,
    #: pool_out; subscription, plan_expire (a plan's credits for a period, and what was left of them at its end);
    #: free_given (on the day's "budget" account: the free credits the bot gave that day)
    reason: Mapped[str] = mapped_column(String(16))
    job_id: Mapped[int | None] = mapped_column(BigInteger)
    #: Telegram's telegram_payment_charge_id of the payment this row belongs to
    charge_id: Mapped[str | None] = mapped_column(String(255))
    #: the user who spent from a pool or moved credits into it
    member_id: Mapped[int | None] = mapped_column(BigInteger)
    #: what makes the row happen at most once (a job's reservation and settlement per account, a payment, a
    #: day's allowance); None for rows that may repeat (an admin's transfers)
    key: Mapped[str | None] = mapped_column(String(255), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class Subscription(Base):
    """A user's monthly Stars subscription (CREDIT_SUBSCRIPTION): the period paid for and whether it renews."""

    __tablename__ = "subscriptions"

    user_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    #: the charge id of its first payment, which names it to editUserStarSubscription
    charge_id: Mapped[str] = mapped_column(String(255))
    #: the charge id of the payment of the current period (its credits are in the user's "plan" account)
    period_charge_id: Mapped[str] = mapped_column(String(255))
    credits: Mapped[int] = mapped_column(BigInteger)
    stars: Mapped[int] = mapped_column(Integer)
    #: when the current period ends: its unused credits end with it
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    #: renewal stopped through the bot (editUserStarSubscription)
    canceled: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


# Core handles on the tables: the repositories work with rows, not tracked ORM objects.
jobs_table = cast(Table, Job.__table__)
chats_table = cast(Table, Chat.__table__)
users_table = cast(Table, User.__table__)


class InboxUpdate(Base):
    """A Telegram update received by the webhook, kept until handled (and a while after, to refuse a repeat)."""

    __tablename__ = "telegram_updates"
    __table_args__ = (
        Index(None, "state", "received_at"),  # claiming pending updates in arrival order
        Index(None, "chat_id", "state"),  # a chat's share and its update in flight
        Index(None, "sender_id", "state"),  # a sender's share
    )

    #: Telegram's id: unique, so a retry (or the same update at another replica) is stored once
    update_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    chat_id: Mapped[int | None] = mapped_column(BigInteger)
    sender_id: Mapped[int | None] = mapped_column(BigInteger)
    #: pending, done, dropped (over its chat's or sender's share), notice (dropped, and the chat is told once)
    state: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    lease_owner: Mapped[str | None] = mapped_column(String(255))
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime())
    received_at: Mapped[datetime] = mapped_column(UTCDateTime())
    handled_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    #: the one handling of the update (bot.store.inbox.Handling) whose job marked it: no other may make one
    handled_by: Mapped[str | None] = mapped_column(String(64))


inbox_table = cast(Table, InboxUpdate.__table__)

conversations_table = cast(Table, Conversation.__table__)
replicas_table = cast(Table, Replica.__table__)
chat_sends_table = cast(Table, ChatSend.__table__)
accounts_table = cast(Table, CreditAccount.__table__)
ledger_table = cast(Table, CreditEntry.__table__)
subscriptions_table = cast(Table, Subscription.__table__)
