"""The credit accounts and their ledger: row locks, append-once rows, sums. The caller owns the transaction.

An account's `balance` is kept equal to the sum of its ledger rows: `append` writes a row and moves the
balance by its amount in the same transaction, and only when the row was new (a row with a `key` that
exists already is skipped, with its balance change). The CHECK constraint `balance >= 0` is the last
line of defence; `bot.credits` never asks for more than a locked balance holds.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, func, literal, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.store.db import dialect_insert
from bot.store.models import accounts_table, jobs_table, ledger_table

#: an account: (kind, owner id); kinds are "user" (bought credits), "free" (the daily allowance), "pool" (a group's)
AccountKey = tuple[str, int]


@dataclass(frozen=True)
class Account:
    """An account's balance (and a pool's per-member daily cap), as locked or read."""

    kind: str
    owner_id: int
    balance: int = 0
    member_cap: int | None = None


@dataclass(frozen=True)
class NewEntry:
    """A ledger row to append."""

    kind: str
    owner_id: int
    amount: int
    reason: str
    key: str | None = None
    job_id: int | None = None
    charge_id: str | None = None
    member_id: int | None = None


@dataclass(frozen=True)
class Entry:
    """A ledger row as stored."""

    id: int
    kind: str
    owner_id: int
    amount: int
    reason: str
    key: str | None
    job_id: int | None
    charge_id: str | None
    member_id: int | None
    created_at: datetime


def _entry(row: Any) -> Entry:
    return Entry(id=row.id, kind=row.kind, owner_id=row.owner_id, amount=row.amount, reason=row.reason, key=row.key,
                 job_id=row.job_id, charge_id=row.charge_id, member_id=row.member_id, created_at=row.created_at)


# Statements run for every paid job, built once per dialect: building one costs more CPU than running it on SQLite.
@functools.cache
def _append_once(dialect: str) -> Any:
    """Insert a ledger row (its columns given as parameters) unless its key exists; returns its id when new."""
    return dialect_insert(dialect)(ledger_table).on_conflict_do_nothing(index_elements=["key"]).returning(ledger_table.c.id)


@functools.cache
def _lock_statement(dialect: str, count: int) -> Any:
    """Make, lock and read `count` accounts (bound as kind<n>, owner<n>) in one statement.

    On PostgreSQL an upsert that meets a row locks it until the transaction ends, as SELECT … FOR UPDATE
    would, in the order of its VALUES (callers sort them). The update changes nothing. (SQLite's
    transactions that write are one at a time: BEGIN IMMEDIATE.)
    """
    table = accounts_table
    now = bindparam("now", type_=table.c.updated_at.type)
    statement = dialect_insert(dialect)(table).values(
        [{"kind": bindparam(f"kind{index}"), "owner_id": bindparam(f"owner{index}"), "balance": 0,
          "member_cap": None, "updated_at": now} for index in range(count)])
    return (statement.on_conflict_do_update(index_elements=[table.c.kind, table.c.owner_id],
                                            set_={"updated_at": table.c.updated_at})
            .returning(table.c.kind, table.c.owner_id, table.c.balance, table.c.member_cap))


@functools.cache
def _charge_statement(dialect: str, key: Callable[[Any, Any, Any], Any]) -> Any:
    """A "charge" row (amount 0) for each reservation row of the jobs bound as job_ids, skipping existing keys."""
    ledger = ledger_table
    reservations = (
        select(ledger.c.kind, ledger.c.owner_id, literal(0), literal("charge"),
               key(ledger.c.job_id, ledger.c.kind, ledger.c.owner_id), ledger.c.job_id, ledger.c.member_id,
               bindparam("now", type_=ledger.c.created_at.type))
        .where(ledger.c.job_id.in_(bindparam("job_ids", expanding=True)), ledger.c.reason == "reserve"))
    statement = dialect_insert(dialect)(ledger).from_select(
        ["kind", "owner_id", "amount", "reason", "key", "job_id", "member_id", "created_at"], reservations)
    return statement.on_conflict_do_nothing(index_elements=["key"])


_MOVE_BALANCE = (
    update(accounts_table)
    .where(accounts_table.c.kind == bindparam("account_kind"), accounts_table.c.owner_id == bindparam("account_owner"))
    .values(balance=accounts_table.c.balance + bindparam("delta", type_=accounts_table.c.balance.type),
            updated_at=bindparam("now", type_=accounts_table.c.updated_at.type)))


class CreditRepository:
    """Accounts and ledger rows."""

    def __init__(self, session: AsyncConnection) -> None:
        self._session = session

    @property
    def _dialect(self) -> str:
        return self._session.dialect.name

    async def lock(self, keys: Iterable[AccountKey], *, now: datetime) -> dict[AccountKey, Account]:
        """Lock these accounts (made empty if new) until the transaction ends, always in one order (no deadlocks)."""
        ordered = sorted(set(keys))
        if not ordered:
            return {}
        params: dict[str, Any] = {"now": now}
        for index, (kind, owner) in enumerate(ordered):
            params |= {f"kind{index}": kind, f"owner{index}": owner}
        rows = await self._session.execute(_lock_statement(self._dialect, len(ordered)), params)
        return {(row.kind, row.owner_id): Account(row.kind, row.owner_id, row.balance, row.member_cap) for row in rows}

    async def accounts(self, keys: Iterable[AccountKey]) -> dict[AccountKey, Account]:
        """These accounts as they are (without locking); missing ones are empty."""
        wanted = sorted(set(keys))
        found = {key: Account(*key) for key in wanted}
        if wanted:
            rows = await self._session.execute(
                select(accounts_table).where(tuple_(accounts_table.c.kind, accounts_table.c.owner_id).in_(wanted)))
            found |= {(row.kind, row.owner_id): Account(row.kind, row.owner_id, row.balance, row.member_cap)
                      for row in rows}
        return found

    async def append(self, entries: Sequence[NewEntry], *, now: datetime) -> list[bool]:
        """Append rows and move their accounts' balances (lock them first); a row whose key exists is skipped (False)."""
        append = _append_once(self._dialect)
        written: list[bool] = []
        for entry in entries:
            values = {"kind": entry.kind, "owner_id": entry.owner_id, "amount": entry.amount, "reason": entry.reason,
                      "key": entry.key, "job_id": entry.job_id, "charge_id": entry.charge_id,
                      "member_id": entry.member_id, "created_at": now}
            # a row without a key never conflicts (NULLs are distinct in a unique index)
            added = (await self._session.execute(append, values)).first() is not None
            if added and entry.amount:
                await self._session.execute(_MOVE_BALANCE, {"account_kind": entry.kind, "account_owner": entry.owner_id,
                                                            "delta": entry.amount, "now": now})
            written.append(added)
        return written

    async def charge_reservations(self, job_ids: Sequence[int], *, key: Callable[[Any, Any, Any], Any],
                                  now: datetime) -> None:
        """Append a "charge" row (amount 0) for each reservation row of these jobs, in one statement; a row
        whose key(job id, kind, owner id) exists already is skipped. No balance moves."""
        if job_ids:
            await self._session.execute(_charge_statement(self._dialect, key),
                                        {"job_ids": list(job_ids), "now": now})

    async def set_cap(self, chat_id: int, cap: int | None, *, now: datetime) -> None:
        """Set a pool's per-member daily cap (lock the pool first)."""
        await self._session.execute(
            update(accounts_table).where(accounts_table.c.kind == "pool", accounts_table.c.owner_id == chat_id)
            .values(member_cap=cap, updated_at=now))

    async def has_key(self, key: str) -> bool:
        """Whether a row with this key exists."""
        return (await self._session.scalar(select(ledger_table.c.id).where(ledger_table.c.key == key))) is not None

    async def for_job(self, job_id: int) -> list[Entry]:
        """A job's rows, oldest first."""
        rows = await self._session.execute(
            select(ledger_table).where(ledger_table.c.job_id == job_id).order_by(ledger_table.c.id))
        return [_entry(row) for row in rows]

    async def for_charge(self, charge_id: str) -> list[Entry]:
        """A payment's rows, oldest first."""
        rows = await self._session.execute(
            select(ledger_table).where(ledger_table.c.charge_id == charge_id).order_by(ledger_table.c.id))
        return [_entry(row) for row in rows]

    async def pool_spent_since(self, chat_id: int, member_id: int, since: datetime) -> int:
        """What a member took from a group's pool for jobs reserved since `since`, net of what came back.

        A refund counts on the day of the reservation it returns, whenever it is written: cancelling
        yesterday's jobs after midnight gives nothing back to today's cap.
        """
        ledger = ledger_table
        mine = (ledger.c.kind == "pool", ledger.c.owner_id == chat_id, ledger.c.member_id == member_id)
        reserved_since = select(ledger.c.job_id).where(*mine, ledger.c.reason == "reserve", ledger.c.created_at >= since)
        spent = await self._session.scalar(
            select(func.coalesce(func.sum(ledger.c.amount), 0)).where(*mine, ledger.c.job_id.in_(reserved_since)))
        return -int(spent or 0)

    async def charge_reasons(self, charge_ids: Iterable[str]) -> dict[str, set[str]]:
        """For each of these charges with rows, the reasons of its rows."""
        wanted = sorted(set(charge_ids))
        found: dict[str, set[str]] = {}
        for start in range(0, len(wanted), 500):  # bounded IN lists
            rows = await self._session.execute(
                select(ledger_table.c.charge_id, ledger_table.c.reason)
                .where(ledger_table.c.charge_id.in_(wanted[start:start + 500])))
            for row in rows:
                found.setdefault(row.charge_id, set()).add(row.reason)
        return found

    async def charge_grants(self, charge_ids: Iterable[str]) -> dict[str, dict[int, int]]:
        """For each of these charges with a grant, the credits its purchase rows (and their fixes) gave each user."""
        wanted = sorted(set(charge_ids))
        found: dict[str, dict[int, int]] = {}
        for start in range(0, len(wanted), 500):  # bounded IN lists
            rows = await self._session.execute(
                select(ledger_table.c.charge_id, ledger_table.c.owner_id, func.sum(ledger_table.c.amount))
                .where(ledger_table.c.charge_id.in_(wanted[start:start + 500]),
                       ledger_table.c.reason.in_(("purchase", "purchase_fix")))
                .group_by(ledger_table.c.charge_id, ledger_table.c.owner_id))
            for charge_id, owner_id, total in rows:
                found.setdefault(charge_id, {})[int(owner_id)] = int(total or 0)
        return found

    async def of_user(self, user_id: int, *, limit: int = 50) -> list[Entry]:
        """A user's rows, newest first: their own accounts' and what they spent from pools (for /history)."""
        rows = await self._session.execute(
            select(ledger_table)
            .where(((ledger_table.c.kind.in_(("user", "free"))) & (ledger_table.c.owner_id == user_id))
                   | ((ledger_table.c.kind == "pool") & (ledger_table.c.member_id == user_id)))
            .order_by(ledger_table.c.id.desc()).limit(limit))
        return [_entry(row) for row in rows]

    async def sums(self) -> dict[AccountKey, tuple[int, int]]:
        """Every account's (balance, sum of its ledger rows), accounts with rows but no account row included."""
        balances = {(row.kind, row.owner_id): int(row.balance)
                    for row in await self._session.execute(select(accounts_table))}
        totals = {(row.kind, row.owner_id): int(row.total) for row in await self._session.execute(
            select(ledger_table.c.kind, ledger_table.c.owner_id, func.sum(ledger_table.c.amount).label("total"))
            .group_by(ledger_table.c.kind, ledger_table.c.owner_id))}
        return {key: (balances.get(key, 0), totals.get(key, 0)) for key in balances.keys() | totals.keys()}

    async def all_job_entries(self) -> list[Entry]:
        """Every row that belongs to a job, by job then id (the audit)."""
        rows = await self._session.execute(
            select(ledger_table).where(ledger_table.c.job_id.is_not(None))
            .order_by(ledger_table.c.job_id, ledger_table.c.id))
        return [_entry(row) for row in rows]

    async def priced_job_ids(self) -> list[int]:
        """The jobs that have a price reserved (the audit finds any without ledger rows)."""
        return list((await self._session.scalars(select(jobs_table.c.id).where(jobs_table.c.credits > 0))).all())
