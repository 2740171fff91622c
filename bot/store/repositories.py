"""Repositories: the store's queries, taking a session and returning plain records.

None of them commits: the caller owns the transaction, so a worker step can change a job and
release its lease atomically.
"""

from __future__ import annotations

import functools
from collections.abc import Collection
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    CursorResult,
    Integer,
    RowMapping,
    Select,
    Table,
    Update,
    and_,
    bindparam,
    case,
    false,
    func,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.store.models import chats_table, jobs_table, users_table
from bot.store.records import FINAL_STATES, JOB_RECORD_FIELDS, JobRecord, JobState, NewJob, Preferences

_UPDATABLE_FIELDS = JOB_RECORD_FIELDS - {"id"}


def _to_record(row: RowMapping) -> JobRecord:
    """Copy a jobs row into a JobRecord."""
    return JobRecord(**{name: row[name] for name in JOB_RECORD_FIELDS})


def _claimable(table: Any, states: Any, now: Any) -> ColumnElement[bool]:
    """Jobs in `states` (a list or an expanding parameter) that are due and whose lease, if any, has run out."""
    return and_(
        table.c.state.in_(states),
        table.c.next_check_at <= now,
        or_(table.c.lease_until.is_(None), table.c.lease_until < now),
    )


def _queued_by_since(user_id: int | BindParameter[int],
                     since: datetime | BindParameter[datetime]) -> tuple[ColumnElement[bool], ...]:
    """A user's jobs created since `since` that were really queued (refused requests are kept as failed rows)."""
    return (
        jobs_table.c.user_id == user_id,
        jobs_table.c.created_at >= since,
        jobs_table.c.refused == false(),
    )


def _unfinished_in_chat(chat_id: int, user_id: int | None) -> tuple[ColumnElement[bool], ...]:
    """A chat's unfinished jobs: one user's, or everyone's when `user_id` is None."""
    conditions = (jobs_table.c.chat_id == chat_id, jobs_table.c.state.not_in(list(FINAL_STATES)))
    return conditions if user_id is None else (*conditions, jobs_table.c.user_id == user_id)


@functools.cache
def _pick_statement() -> Select[tuple[int]]:
    """Due jobs' ids in claim order (bound: states, now, limit), built once: it is the busiest query."""
    states = bindparam("states", expanding=True)
    now = bindparam("now", type_=jobs_table.c.next_check_at.type)
    candidate = jobs_table.alias("candidate")
    chat_rank = (
        func.row_number()
        .over(partition_by=candidate.c.chat_id, order_by=(candidate.c.next_check_at, candidate.c.id))
        .label("chat_rank")
    )
    ranked = select(candidate.c.id, chat_rank).where(_claimable(candidate, states, now)).subquery()
    # PostgreSQL forbids FOR UPDATE next to a window function, so the ranking lives in a
    # subquery and only the outer `jobs` rows are locked. The claim conditions are repeated
    # outside because PostgreSQL re-checks those (not the subquery's) on a row that another
    # claimer committed after this statement's snapshot; rows still locked are skipped.
    # SQLite ignores FOR UPDATE; its BEGIN IMMEDIATE already makes this the only writer.
    return (
        select(jobs_table.c.id)
        .join(ranked, ranked.c.id == jobs_table.c.id)
        .where(_claimable(jobs_table, states, now))
        .order_by(ranked.c.chat_rank, jobs_table.c.next_check_at, jobs_table.c.id)
        .limit(bindparam("limit", type_=Integer))
        .with_for_update(of=jobs_table, skip_locked=True)
    )


@functools.cache
def _lease_statement(start_attempt: bool) -> Update:
    """Lease the jobs `ids` to `owner` until `lease_until`; optionally start a submission attempt."""
    values: dict[str, Any] = {
        "lease_owner": bindparam("owner", type_=jobs_table.c.lease_owner.type),
        "lease_until": bindparam("lease_until", type_=jobs_table.c.lease_until.type),
    }
    if start_attempt:
        values |= {"state": JobState.SUBMITTING, "attempts": jobs_table.c.attempts + 1}
    return (
        update(jobs_table)
        .where(jobs_table.c.id.in_(bindparam("ids", expanding=True)))
        .values(values)
        .returning(*jobs_table.c)
    )


@functools.cache
def _update_statement(fields: frozenset[str], check_owner: bool) -> Update:
    """Set `fields` (bound as new_<name>) on job `job_id`, if `owner` holds it when `check_owner`; built once per shape."""
    statement = update(jobs_table).where(jobs_table.c.id == bindparam("job_id"))
    if check_owner:
        statement = statement.where(jobs_table.c.lease_owner == bindparam("owner"))
    values = {name: bindparam(f"new_{name}", type_=jobs_table.c[name].type) for name in sorted(fields)}
    return statement.values(values).returning(*jobs_table.c)


# Statements run for every job, built once: building one costs more CPU than running it on SQLite.
_INSERT_JOB = jobs_table.insert().returning(*jobs_table.c)
_QUOTA_USAGE = (
    select(func.coalesce(func.sum(case((jobs_table.c.state.not_in(list(FINAL_STATES)), 1), else_=0)), 0),
           func.coalesce(func.sum(case((and_(*_queued_by_since(bindparam("user_id"), bindparam("since"))[1:]), 1),
                                       else_=0)), 0))
    .where(jobs_table.c.user_id == bindparam("user_id")))


class JobRepository:
    """Queries on jobs: queueing, leasing, state changes, and the counts behind quotas."""

    def __init__(self, session: AsyncConnection) -> None:
        self._session = session

    async def add(self, job: NewJob, *, now: datetime) -> JobRecord:
        """Queue a new job, due at once."""
        values = dict(
            chat_id=job.chat_id, user_id=job.user_id, chat_type=job.chat_type,
            reply_to_message_id=job.reply_to_message_id, status_message_id=job.status_message_id,
            operation=job.operation, args=dict(job.args), inputs=list(job.inputs), task_id=None,
            state=JobState.QUEUED, attempts=0, next_check_at=now, deadline_at=job.deadline_at, lease_owner=None,
            lease_until=None, result_urls=[], error=None, refused=False, failure_kind=None, language=job.language,
            credits=job.credits, inline_message_id=job.inline_message_id, sent_message_ids=[], result_files=[], progress=None, created_at=now,
            updated_at=now, submitted_at=None, finished_at=None)
        row = (await self._session.execute(_INSERT_JOB, values)).one()
        return _to_record(row._mapping)

    async def get(self, job_id: int) -> JobRecord | None:
        """The job with this id, if there is one."""
        row = (await self._session.execute(select(jobs_table).where(jobs_table.c.id == job_id))).first()
        return None if row is None else _to_record(row._mapping)

    async def claim(
        self,
        states: Collection[JobState],
        *,
        owner: str,
        now: datetime,
        lease_for: timedelta,
        limit: int,
        start_attempt: bool = False,
    ) -> list[JobRecord]:
        """Lease up to `limit` due jobs in `states` to `owner`, taking turns between chats.

        With `start_attempt`, the claimed jobs also move to SUBMITTING with one more attempt counted,
        in the same statement (the submit step counts a try before its risky part).
        """
        if limit <= 0 or not states:
            return []
        params = {"states": [JobState(state) for state in states], "now": now, "limit": limit}
        ids = list((await self._session.scalars(_pick_statement(), params)).all())
        if not ids:
            return []
        result = await self._session.execute(
            _lease_statement(start_attempt), {"ids": ids, "owner": owner, "lease_until": now + lease_for}
        )
        claimed = {row.id: _to_record(row._mapping) for row in result}
        return [claimed[job_id] for job_id in ids]

    async def update(self, job_id: int, *, owner: str | None, **changes: Any) -> JobRecord | None:
        """Change a job if `owner` still holds its lease (None: no check); None if it does not."""
        unknown = set(changes) - _UPDATABLE_FIELDS
        if unknown:
            raise TypeError(f"cannot update job fields: {', '.join(sorted(unknown))}")
        changes.setdefault("updated_at", datetime.now(UTC))
        params = {f"new_{name}": value for name, value in changes.items()} | {"job_id": job_id, "owner": owner}
        result = await self._session.execute(_update_statement(frozenset(changes), owner is not None), params)
        row = result.first()
        return None if row is None else _to_record(row._mapping)

    async def release(self, job_id: int, *, owner: str) -> None:
        """Give up the lease on a job if `owner` holds it."""
        await self._session.execute(
            update(jobs_table)
            .where(jobs_table.c.id == job_id, jobs_table.c.lease_owner == owner)
            .values(lease_owner=None, lease_until=None)
        )

    async def release_all(self, *, owner: str) -> int:
        """Give up every lease `owner` holds (graceful shutdown); returns how many."""
        result = await self._session.execute(
            update(jobs_table)
            .where(jobs_table.c.lease_owner == owner)
            .values(lease_owner=None, lease_until=None)
        )
        return cast(CursorResult[Any], result).rowcount

    async def attach_status_message(self, job_id: int, message_id: int, *, now: datetime) -> bool:
        """Record the status message of a job still in progress; False when it has already ended."""
        result = await self._session.execute(
            update(jobs_table)
            .where(jobs_table.c.id == job_id, jobs_table.c.state.not_in(list(FINAL_STATES)))
            .values(status_message_id=message_id, updated_at=now)
        )
        return cast(CursorResult[Any], result).rowcount == 1

    async def cancel_chat(self, chat_id: int, *, user_id: int | None, now: datetime) -> list[JobRecord]:
        """Cancel a chat's unfinished jobs (one user's; everyone's when `user_id` is None), dropping leases.

        Returns the cancelled jobs, oldest first.
        """
        result = await self._session.execute(
            update(jobs_table)
            .where(*_unfinished_in_chat(chat_id, user_id))
            .values(
                state=JobState.CANCELLED,
                finished_at=now,
                updated_at=now,
                lease_owner=None,
                lease_until=None,
            )
            .returning(*jobs_table.c)
        )
        return sorted((_to_record(row._mapping) for row in result), key=lambda r: (r.created_at, r.id))

    async def active_for_chat(self, chat_id: int, *, user_id: int | None) -> list[JobRecord]:
        """A chat's unfinished jobs (one user's; everyone's when `user_id` is None), oldest first."""
        result = await self._session.execute(
            select(jobs_table)
            .where(*_unfinished_in_chat(chat_id, user_id))
            .order_by(jobs_table.c.created_at, jobs_table.c.id)
        )
        return [_to_record(row._mapping) for row in result]

    async def queued_ahead(self, job_id: int) -> int:
        """How many jobs queued before this one are still waiting to be submitted."""
        count = await self._session.scalar(
            select(func.count()).select_from(jobs_table)
            .where(jobs_table.c.state == JobState.QUEUED, jobs_table.c.id < job_id)
        )
        return int(count or 0)

    async def quota_usage(self, user_id: int, since: datetime) -> tuple[int, int]:
        """A user's jobs in progress and jobs queued since `since` (refused requests not counted), in one query."""
        row = (await self._session.execute(_QUOTA_USAGE, {"user_id": user_id, "since": since})).one()
        return int(row[0]), int(row[1])

    async def oldest_created_since(self, user_id: int, since: datetime) -> datetime | None:
        """When the user's oldest job queued since `since` was created (when a daily quota frees up)."""
        oldest: datetime | None = await self._session.scalar(
            select(func.min(jobs_table.c.created_at)).where(*_queued_by_since(user_id, since))
        )
        return oldest

    async def next_due_at(self, states: Collection[JobState]) -> datetime | None:
        """When the next job in `states` can be claimed: its next check, or its lease's end if later."""
        if not states:
            return None
        leased_past_check = and_(
            jobs_table.c.lease_until.is_not(None),
            jobs_table.c.lease_until > jobs_table.c.next_check_at,
        )
        # A leased job is someone's work in progress: waking before its lease ends only spins.
        claimable_at = case((leased_past_check, jobs_table.c.lease_until), else_=jobs_table.c.next_check_at)
        due: datetime | None = await self._session.scalar(
            select(func.min(claimable_at)).where(jobs_table.c.state.in_(list(states)))
        )
        return due

    async def recent_for_user(self, chat_id: int, user_id: int, *, limit: int) -> list[JobRecord]:
        """A user's latest jobs in a chat that were really queued (not refused requests), newest first."""
        result = await self._session.execute(
            select(jobs_table)
            .where(jobs_table.c.chat_id == chat_id, jobs_table.c.user_id == user_id, jobs_table.c.refused == false())
            .order_by(jobs_table.c.created_at.desc(), jobs_table.c.id.desc())
            .limit(limit)
        )
        return [_to_record(row._mapping) for row in result]

    async def delivered_for_user(self, user_id: int, *, limit: int) -> list[JobRecord]:
        """A user's delivered jobs in every chat, newest first (the Mini App's "My results", inline mode's shares)."""
        result = await self._session.execute(
            select(jobs_table)
            .where(jobs_table.c.user_id == user_id, jobs_table.c.state == JobState.DELIVERED)
            .order_by(jobs_table.c.created_at.desc(), jobs_table.c.id.desc())
            .limit(limit)
        )
        return [_to_record(row._mapping) for row in result]

    async def check_now(self, task_id: str, *, now: datetime) -> int | None:
        """Record a callback for this service task on its running job and make the job's next status check
        due now (if it was later); the job's id, or None when no running job has the task."""
        result = await self._session.execute(
            update(jobs_table)
            .where(jobs_table.c.task_id == task_id, jobs_table.c.state == JobState.RUNNING)
            .values(callback_at=now, next_check_at=case((jobs_table.c.next_check_at > now, now),
                                                        else_=jobs_table.c.next_check_at))
            .returning(jobs_table.c.id)
        )
        row = result.first()
        return None if row is None else int(row[0])

    async def counts_by_state(self, states: Collection[JobState] | None = None) -> dict[JobState, int]:
        """How many jobs are in each state (of `states`, else every state; each listed, zero included)."""
        statement = select(jobs_table.c.state, func.count()).group_by(jobs_table.c.state)
        if states is not None:
            statement = statement.where(jobs_table.c.state.in_(list(states)))
        result = await self._session.execute(statement)
        counts = dict.fromkeys(JobState if states is None else states, 0)
        counts.update({state: count for state, count in result})
        return counts


async def _upsert(
    session: AsyncConnection, table: Table, values: dict[str, Any], *, keep: Collection[str]
) -> None:
    """Insert a row, or update it by primary key leaving the `keep` columns as they were."""
    changed = [name for name in values if name not in keep and name != "id"]
    dialect = session.dialect.name
    if dialect in ("postgresql", "sqlite"):
        insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
        statement = insert(table).values(**values)
        await session.execute(
            statement.on_conflict_do_update(
                index_elements=[table.c.id],
                set_={name: statement.excluded[name] for name in changed},
            )
        )
        return
    result = await session.execute(
        update(table).where(table.c.id == values["id"]).values({name: values[name] for name in changed})
    )
    if cast(CursorResult[Any], result).rowcount == 0:
        await session.execute(table.insert().values(**values))


_UNCHANGED: Any = object()


@functools.cache
def _preferences_query(table: Table) -> Select[Any]:
    return select(table.c.language, table.c.settings).where(table.c.id == bindparam("row_id"))


async def _preferences(session: AsyncConnection, table: Table, row_id: int) -> Preferences:
    row = (await session.execute(_preferences_query(table), {"row_id": row_id})).first()
    return Preferences() if row is None else Preferences(language=row.language, settings=dict(row.settings or {}))


async def _set_preferences(session: AsyncConnection, table: Table, row: dict[str, Any], language: str | None,
                           settings: dict[str, Any]) -> Preferences:
    """Upsert `row` (the columns a new row needs) with a language and settings merged into the stored ones."""
    current = await _preferences(session, table, row["id"])
    merged = Preferences(language=current.language if language is _UNCHANGED else language,
                         settings={**current.settings, **settings})
    await _upsert(session, table, {**row, "language": merged.language, "settings": merged.settings},
                  keep=("first_seen", "last_seen", *(name for name in row if name not in ("id",))))
    return merged


class ChatRepository:
    """Chats the bot has seen, and their preferences."""

    def __init__(self, session: AsyncConnection) -> None:
        self._session = session

    async def preferences(self, chat_id: int) -> Preferences:
        """The chat's chosen language and settings (empty for a chat never configured)."""
        return await _preferences(self._session, chats_table, chat_id)

    async def set_preferences(self, chat_id: int, *, type: str, title: str | None, now: datetime,
                              language: str | None = _UNCHANGED, **settings: Any) -> Preferences:
        """Choose the chat's language (None: each person's) and/or change settings; returns them all."""
        row = {"id": chat_id, "type": type, "title": title, "first_seen": now, "last_seen": now}
        return await _set_preferences(self._session, chats_table, row, language, settings)

    async def touch(self, chat_id: int, *, type: str, title: str | None, now: datetime) -> None:
        """Record that a chat was seen now, with its current type and title."""
        await _upsert(
            self._session,
            chats_table,
            {"id": chat_id, "type": type, "title": title, "first_seen": now, "last_seen": now},
            keep=("first_seen",),
        )


class UserRepository:
    """Users the bot has seen, and their preferences."""

    def __init__(self, session: AsyncConnection) -> None:
        self._session = session

    async def preferences(self, user_id: int) -> Preferences:
        """The user's chosen language and settings (empty for a user never configured)."""
        return await _preferences(self._session, users_table, user_id)

    async def set_preferences(self, user_id: int, *, now: datetime, language: str | None = _UNCHANGED,
                              **settings: Any) -> Preferences:
        """Choose the user's language (None: Telegram's) and/or change settings; returns them all."""
        row = {"id": user_id, "username": None, "first_name": None, "first_seen": now, "last_seen": now}
        return await _set_preferences(self._session, users_table, row, language, settings)

    async def touch(
        self, user_id: int, *, username: str | None, first_name: str | None, now: datetime
    ) -> None:
        """Record that a user was seen now, with their current names."""
        await _upsert(
            self._session,
            users_table,
            {
                "id": user_id,
                "username": username,
                "first_name": first_name,
                "first_seen": now,
                "last_seen": now,
            },
            keep=("first_seen",),
        )
