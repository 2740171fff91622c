"""The rules of credits, as steps inside the caller's transaction (no Telegram, no commits here).

Accounts: a user's bought credits ("user"), their daily free allowance ("free": topped back up to
FREE_CREDITS_PER_DAY by the first spend of each UTC day, one "allowance" row keyed by user and day,
within the whole bot's daily budget: bot.credits.budget), a subscriber's credits of the current period
("plan": bot.credits.subscription), and a group's pool ("pool", with a per-member daily cap). A job in a group spends from the pool first
(within the cap), then the allowance, then the plan's, then bought credits (what ends soonest goes
first); in a private chat the same without the pool. A job on behalf of a chat (`is_chat_identity`) spends from its group's pool alone,
counted there as one member. The cap counts a refund on the day of the reservation it returns. It reserves its price when queued (one "reserve" row per account it draws on, in
the transaction that stores the job) and is settled when it ends, in the transaction that writes its
final state: a "charge" row (amount 0: the reservation stands) when delivered, a "refund" row giving
the reservation back otherwise. Every job row has a unique key (job, step, account), so a crash
or a retry can never reserve, charge or refund twice, nor both charge and refund one job.

Concurrency: the accounts a step draws on are locked (`SELECT … FOR UPDATE` on PostgreSQL, in one
order; SQLite has one writer at a time) before their balances are read, so two requests at once
cannot both spend the same credit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from typing import Any

from sqlalchemy import String, cast
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.expression import ColumnElement

from bot.credits import budget as free_budget
from bot.credits import subscription
from bot.credits.packs import Pack
from bot.store import JobRecord, JobRepository, JobState
from bot.store.credits import AccountKey, CreditRepository, Entry, NewEntry

#: the order a job draws on accounts
SPEND_ORDER = ("pool", "free", subscription.PLAN, "user")
#: the rows that add a payment's credits: a pack's, a plan period's
PAYMENT_GRANTS = frozenset({"purchase", subscription.GRANT})
REFUNDED_STATES = frozenset({JobState.FAILED, JobState.EXPIRED, JobState.CANCELLED})


def day_start(now: datetime) -> datetime:
    """Midnight UTC of `now`'s day: allowances and pool caps count from there."""
    return datetime.combine(now.astimezone(UTC).date(), time(), tzinfo=UTC)


def _allowance_key(user_id: int, day: date) -> str:
    return f"allowance:{user_id}:{day.isoformat()}"


def settle_key(job_id: Any, kind: Any, owner_id: Any) -> Any:
    """The key of a job's settlement row on one account: the same for its charge and its refund, so a
    job is never both. Built from values, or from columns as SQL (the charge of many jobs in one statement)."""
    return "job:" + _text(job_id) + ":settle:" + kind + ":" + _text(owner_id)


def _text(value: Any) -> Any:
    return cast(value, String) if isinstance(value, ColumnElement) else str(value)


@dataclass(frozen=True)
class Plan:
    """Where a job's price comes from: (account, credits) in spending order."""

    user_id: int
    price: int
    draws: tuple[tuple[AccountKey, int], ...]
    #: this step gave the last free credit of the day's budget (the admins are told, once)
    budget_reached: bool = False


@dataclass(frozen=True)
class Shortfall:
    """A job costs more than the user can spend now."""

    price: int
    available: int
    free_per_day: int
    #: the job is on behalf of a chat (`is_chat_identity`): only a group's pool could pay for it
    pool_only: bool = False
    #: the whole bot's free credits for today are given out (FREE_CREDITS_DAILY_BUDGET)
    free_gone: bool = False
    budget_reached: bool = False


def is_chat_identity(owner_id: int) -> bool:
    """Whether a job's owner is a chat (a channel posting in a group, an anonymous admin), not a person.

    Telegram's user ids are positive and its chat ids negative. Anyone can post as any number of
    channels, so a chat identity gets no free allowance and buys nothing: a group's pool pays for it.
    """
    return owner_id < 0


async def _top_up_allowance(credits: CreditRepository, user_id: int, free: int, free_per_day: int,
                            now: datetime, *, written: bool,
                            budget: int | None = None) -> tuple[int, free_budget.Given | None]:
    """The free allowance's balance after today's top-up (written once a day, whatever the racing;
    `written`: the caller knows today's is, so the attempt can be spared), and what the day's budget gave."""
    if written or (free_per_day <= 0 and free <= 0):
        return free, None
    key = _allowance_key(user_id, now.astimezone(UTC).date())
    top_up, given = free_per_day - free, None
    if budget is not None and top_up > 0 and not await credits.has_key(key):
        given = await free_budget.take(credits, user_id=user_id, wanted=top_up, budget=budget, now=now)
        top_up = given.credits
    [written] = await credits.append([NewEntry("free", user_id, top_up, "allowance", key=key)], now=now)
    return (free + top_up, given) if written else (free, None)


async def plan(session: AsyncConnection, *, user_id: int, pool_chat_id: int | None, price: int, now: datetime,
               free_per_day: int, allowance_written: bool = False, budget: int | None = None,
               free_pays: bool = True) -> Plan | Shortfall:
    """Lock the user's accounts (and the group's pool) and decide where `price` comes from; or say it cannot.

    Today's allowance is written as a side effect (see `allowance_day`); `allowance_written` says the
    caller saw that committed already. `budget` caps the free credits the whole bot gives today.
    `free_pays` False: the free allowance does not pay for this job (a video, unless the operator allows it).
    """
    credits = CreditRepository(session)
    chat_identity = is_chat_identity(user_id)
    if chat_identity and pool_chat_id is None:
        return Shortfall(price, 0, 0, pool_only=True)
    keys = [] if chat_identity else [("user", user_id), ("free", user_id), (subscription.PLAN, user_id)]
    keys += [("pool", pool_chat_id)] if pool_chat_id is not None else []
    accounts = await credits.lock(keys, now=now)
    available = {key: account.balance for key, account in accounts.items()}
    given = None
    if not chat_identity:
        available[("free", user_id)], given = await _top_up_allowance(
            credits, user_id, available[("free", user_id)], free_per_day, now, written=allowance_written,
            budget=budget)
        available[(subscription.PLAN, user_id)] = await subscription.end_period_if_over(
            session, credits, user_id, available[(subscription.PLAN, user_id)], now)
    reached = given is not None and given.reached
    if pool_chat_id is not None:
        pool = accounts[("pool", pool_chat_id)]
        if pool.member_cap is not None and pool.balance > 0:
            used = await credits.pool_spent_since(pool_chat_id, user_id, day_start(now))
            available[("pool", pool_chat_id)] = min(pool.balance, max(0, pool.member_cap - used))
    draws, left = [], price
    for kind in SPEND_ORDER:
        key = next((k for k in keys if k[0] == kind), None)
        if key is None or left <= 0 or (kind == "free" and not free_pays):
            continue
        take = min(left, available[key])
        if take > 0:
            draws.append((key, take))
            left -= take
    if left > 0:
        free_gone = (budget is not None and not chat_identity and available[("free", user_id)] < free_per_day
                     and await free_budget.spent(credits, budget=budget, now=now))
        return Shortfall(price, price - left, 0 if chat_identity else free_per_day, pool_only=chat_identity,
                         free_gone=free_gone, budget_reached=reached)
    return Plan(user_id, price, tuple(draws), budget_reached=reached)


async def reserve(session: AsyncConnection, job_id: int, spending: Plan, *, now: datetime) -> None:
    """Write a job's reservation as `plan` decided it (in the transaction that locked the accounts and stores the job)."""
    await CreditRepository(session).append(
        [NewEntry(kind, owner, -amount, "reserve", key=f"job:{job_id}:reserve:{kind}:{owner}", job_id=job_id,
                  member_id=spending.user_id if kind == "pool" else None)
         for (kind, owner), amount in spending.draws], now=now)


def allowance_day(user_id: int, now: datetime) -> tuple[int, date]:
    """What identifies a user's allowance of `now`'s day: once written it stays, so a caller may remember it."""
    return user_id, now.astimezone(UTC).date()


async def settle(session: AsyncConnection, jobs: Iterable[JobRecord], *, now: datetime) -> None:
    """Charge delivered jobs and refund failed, expired and cancelled ones, each once (others are left alone)."""
    ended = [job for job in jobs if job.credits > 0 and job.is_final]
    credits = CreditRepository(session)
    # a charge moves no balance (the reservation stands): every delivered job's in one statement
    await credits.charge_reservations([job.id for job in ended if job.state is JobState.DELIVERED],
                                      key=settle_key, now=now)
    entries: list[NewEntry] = []
    for job in ended:
        if job.state is JobState.DELIVERED:
            continue
        for row in await credits.for_job(job.id):
            if row.reason == "reserve":
                entries.append(NewEntry(row.kind, row.owner_id, -row.amount, "refund", job_id=job.id,
                                        member_id=row.member_id, key=settle_key(job.id, row.kind, row.owner_id)))
    # balances move in account order, the order `plan` locks them in, so settling never deadlocks against it
    entries.sort(key=lambda entry: (entry.kind, entry.owner_id))
    await credits.append(entries, now=now)


# ---- payments ----------------------------------------------------------------------------------------


async def purchase(session: AsyncConnection, *, user_id: int, pack: Pack, charge_id: str, now: datetime) -> bool:
    """Add a paid pack's credits, once per Telegram charge id; False when this payment was counted already."""
    credits = CreditRepository(session)
    await credits.lock([("user", user_id)], now=now)
    [added] = await credits.append([NewEntry("user", user_id, pack.credits, "purchase", key=f"payment:{charge_id}",
                                             charge_id=charge_id)], now=now)
    return added


@dataclass(frozen=True)
class PaymentRefund:
    """What refunding a payment would do or did: which user loses how many credits; or why it cannot."""

    status: str  # "ok", "unknown", "refunded" (already), "spent"
    user_id: int | None = None
    credits: int = 0
    balance: int = 0


def refunded(rows: Sequence[Entry]) -> bool:
    """Whether the payment's credits are taken back now: a refund row not undone since."""
    return sum(row.reason == "payment_refund" for row in rows) > sum(row.reason == "refund_undone"
                                                                     for row in rows)


def _grant(rows: Sequence[Entry]) -> tuple[str, int, int] | None:
    """(account kind, user, credits) a payment gave, after any fix by reconciliation: the user it gave the most."""
    first = next((row for row in rows if row.reason in PAYMENT_GRANTS), None)
    if first is None:
        return None
    given: dict[int, int] = {}
    for row in rows:
        if row.reason in PAYMENT_GRANTS or row.reason == "purchase_fix":
            given[row.owner_id] = given.get(row.owner_id, 0) + row.amount
    owner = max(given, key=lambda user: given[user])
    return first.kind, owner, max(0, given[owner])


async def _purchase_of(credits: CreditRepository, charge_id: str) -> tuple[tuple[str, int, int] | None,
                                                                         PaymentRefund | None, list[Entry]]:
    """A charge's grant (account kind, user, credits), the answer already due when it is unknown, refunded or a
    plan period that ended, and its rows."""
    rows = await credits.for_charge(charge_id)
    grant = _grant(rows)
    if grant is None:
        return None, PaymentRefund("unknown"), rows
    _, owner, amount = grant
    if refunded(rows):
        return grant, PaymentRefund("refunded", owner, amount), rows
    if subscription.period_is_over(rows):  # a plan period that ended: its credits went with it
        return grant, PaymentRefund("spent", owner, amount, 0), rows
    return grant, None, rows


async def payment_refundable(session: AsyncConnection, charge_id: str) -> PaymentRefund:
    """Whether a payment's Stars may be refunded (read only)."""
    credits = CreditRepository(session)
    grant, answer, _ = await _purchase_of(credits, charge_id)
    if answer is not None or grant is None:
        return answer or PaymentRefund("unknown")
    kind, owner, amount = grant
    account = (await credits.accounts([(kind, owner)]))[(kind, owner)]
    if account.balance < amount:
        return PaymentRefund("spent", owner, amount, account.balance)
    return PaymentRefund("ok", owner, amount, account.balance - amount)


async def hold_payment_refund(session: AsyncConnection, charge_id: str, *, now: datetime) -> PaymentRefund:
    """Take a payment's credits back before its Stars are refunded, if they are all unspent.

    Taken first, under the account's lock, so a job the payer starts while Telegram is asked cannot spend
    them: refunding the Stars after taking the credits back leaves nothing spent that was not paid for.
    If Telegram then refuses, `undo_payment_refund` gives them back.
    """
    credits = CreditRepository(session)
    grant, answer, rows = await _purchase_of(credits, charge_id)
    if answer is not None or grant is None:
        return answer or PaymentRefund("unknown")
    kind, owner, amount = grant
    account = (await credits.lock([(kind, owner)], now=now))[(kind, owner)]
    if account.balance < amount:
        return PaymentRefund("spent", owner, amount, account.balance)
    await credits.append([NewEntry(kind, owner, -amount, "payment_refund", key=_refund_key(charge_id, rows),
                                   charge_id=charge_id)], now=now)
    return PaymentRefund("ok", owner, amount, account.balance - amount)


def _refund_key(charge_id: str, rows: Sequence[Entry]) -> str:
    """The key of a payment's next refund row: the first is `payment-refund:<charge>`, a retry after an undo `…:<n>`."""
    undone = sum(row.reason == "refund_undone" for row in rows)
    return f"payment-refund:{charge_id}" + (f":{undone}" if undone else "")


async def undo_payment_refund(session: AsyncConnection, charge_id: str, *, now: datetime) -> int:
    """Give back the credits a refund took when its Stars were not refunded after all; how many (0: nothing held)."""
    credits = CreditRepository(session)
    rows = await credits.for_charge(charge_id)
    if not refunded(rows):
        return 0
    taken = [row for row in rows if row.reason == "payment_refund"][-1]
    undone = sum(row.reason == "refund_undone" for row in rows)
    await credits.lock([(taken.kind, taken.owner_id)], now=now)
    [added] = await credits.append([NewEntry(taken.kind, taken.owner_id, -taken.amount, "refund_undone",
                                             key=f"payment-refund-undone:{charge_id}:{undone}",
                                             charge_id=charge_id)], now=now)
    return -taken.amount if added else 0


async def take_back_payment(session: AsyncConnection, charge_id: str, *, now: datetime) -> PaymentRefund:
    """Record that a payment's Stars went back outside the bot: take its credits back, once.

    Telegram has refunded already, so this never refuses: credits spent since are gone, and what is
    left (at most the payment's) is taken; `credits` says how many were.
    """
    credits = CreditRepository(session)
    grant, answer, rows = await _purchase_of(credits, charge_id)
    if grant is None or (answer is not None and answer.status != "spent"):
        return answer or PaymentRefund("unknown")
    kind, owner, amount = grant
    account = (await credits.lock([(kind, owner)], now=now))[(kind, owner)]
    # a plan period that ended has nothing left to take: the refund is recorded all the same
    taken = 0 if answer is not None else min(amount, account.balance)
    await credits.append([NewEntry(kind, owner, -taken, "payment_refund", key=_refund_key(charge_id, rows),
                                   charge_id=charge_id)], now=now)
    return PaymentRefund("ok", owner, taken, account.balance - taken)


@dataclass(frozen=True)
class GrantFix:
    """What reconciliation changed in one payment's grant: credits to its payer, and taken from others."""

    charge_id: str
    payer: int
    #: what the payment buys, as the payer now has it
    credits: int
    #: credits the payer was given (negative: taken, when they had been given more than they paid for)
    given: int
    #: user -> credits taken from someone the payment wrongly credited
    taken: dict[int, int]
    #: credits that could not be taken back because they were spent already
    spent: int


async def fix_grant(session: AsyncConnection, charge_id: str, *, payer: int, credits_paid: int,
                    now: datetime) -> GrantFix | None:
    """Make a payment's grant what Telegram's record says: `credits_paid` to `payer`, nothing to anyone else.

    Credits given to the wrong person are taken back as far as they are unspent; `spent` says what was not.
    Keyed by the fixes so far, so replicas fixing at once write one fix. None: the grant was right already.
    """
    credits = CreditRepository(session)
    owners = {row.owner_id for row in await credits.for_charge(charge_id)} | {payer}
    accounts = await credits.lock([("user", owner) for owner in sorted(owners)], now=now)
    rows = await credits.for_charge(charge_id)  # read again under the locks: another replica may have fixed it
    given: dict[int, int] = {}
    for row in rows:
        if row.reason in ("purchase", "purchase_fix"):
            given[row.owner_id] = given.get(row.owner_id, 0) + row.amount
    # someone a fix took back from keeps what they had spent: that is settled, not to be taken again each hour
    settled = {row.owner_id for row in rows if row.reason == "purchase_fix" and row.owner_id != payer}
    wanted = {owner: 0 for owner in given if owner not in settled} | {payer: credits_paid}
    if all(given.get(owner, 0) == amount for owner, amount in wanted.items()):
        return None
    generation = sum(row.reason == "purchase_fix" for row in rows)
    entries, taken, spent, change = [], {}, 0, 0
    for owner, amount in sorted(wanted.items()):
        delta = amount - given.get(owner, 0)
        if delta < 0:  # take back only what is left: a balance never goes below zero
            kept = -delta
            delta = -min(kept, accounts[("user", owner)].balance)
            spent += kept + delta
        if delta or owner != payer:  # a row even for nothing taken: it marks that owner settled
            entries.append(NewEntry("user", owner, delta, "purchase_fix", key=f"payment-fix:{charge_id}:{generation}:{owner}",
                                    charge_id=charge_id))
        if owner == payer:
            change = delta
        elif delta:
            taken[owner] = -delta
    written = await credits.append(entries, now=now) if entries else []
    if entries and not any(written):
        return None  # another replica wrote this fix
    return GrantFix(charge_id, payer, credits_paid, change, taken, spent)


async def payments_recorded(session: AsyncConnection, charge_ids: Iterable[str]) -> dict[str, set[str]]:
    """For each of these charges the ledger knows, the reasons of its rows ("purchase", "payment_refund")."""
    return await CreditRepository(session).charge_reasons(charge_ids)


# ---- group pools -------------------------------------------------------------------------------------


async def move_to_pool(session: AsyncConnection, *, user_id: int, chat_id: int, amount: int, now: datetime) -> int | None:
    """Move bought credits from a user into a group's pool; the pool's new balance, or None if the user has too few."""
    credits = CreditRepository(session)
    accounts = await credits.lock([("user", user_id), ("pool", chat_id)], now=now)
    if amount <= 0 or accounts[("user", user_id)].balance < amount:
        return None
    await credits.append([NewEntry("user", user_id, -amount, "pool_out", member_id=chat_id),
                          NewEntry("pool", chat_id, amount, "pool_in", member_id=user_id)], now=now)
    return accounts[("pool", chat_id)].balance + amount


async def set_pool_cap(session: AsyncConnection, *, chat_id: int, cap: int | None, now: datetime) -> None:
    """Set the most each member may spend from a group's pool a day (None: no cap)."""
    credits = CreditRepository(session)
    await credits.lock([("pool", chat_id)], now=now)
    await credits.set_cap(chat_id, cap, now=now)


# ---- what people see ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Balance:
    """A user's credits as /balance shows them."""

    credits: int
    free_left: int
    free_per_day: int
    pool: int | None = None
    pool_cap: int | None = None
    #: what the user may still take from the pool today
    pool_left: int | None = None
    #: the plan's credits left in its current period (bot.credits.subscription)
    plan: int = 0


async def balance(session: AsyncConnection, *, user_id: int, pool_chat_id: int | None, now: datetime,
                  free_per_day: int, budget: int | None = None) -> Balance:
    """A user's bought credits, today's free allowance left, and the group's pool (read without locking)."""
    credits = CreditRepository(session)
    keys = [("user", user_id), ("free", user_id)] + ([("pool", pool_chat_id)] if pool_chat_id is not None else [])
    accounts = await credits.accounts(keys)
    if is_chat_identity(user_id):
        free_per_day = 0
    topped_up = await credits.has_key(_allowance_key(user_id, now.astimezone(UTC).date()))
    free_left = accounts[("free", user_id)].balance if topped_up else max(free_per_day, 0)
    if not topped_up and budget is not None and await free_budget.spent(credits, budget=budget, now=now):
        free_left = accounts[("free", user_id)].balance  # today's free credits are all given: none to top up
    held = await subscription.status(session, user_id, now)
    plan_left = held.left if held is not None else 0
    if pool_chat_id is None:
        return Balance(accounts[("user", user_id)].balance, free_left, free_per_day, plan=plan_left)
    pool = accounts[("pool", pool_chat_id)]
    left = pool.balance
    if pool.member_cap is not None:
        used = await credits.pool_spent_since(pool_chat_id, user_id, day_start(now))
        left = min(left, max(0, pool.member_cap - used))
    return Balance(accounts[("user", user_id)].balance, free_left, free_per_day, pool.balance, pool.member_cap, left,
                   plan_left)


async def history(session: AsyncConnection, user_id: int, *, limit: int = 50) -> list[Entry]:
    """A user's ledger rows, newest first (their accounts' and what they took from pools): for /history."""
    return await CreditRepository(session).of_user(user_id, limit=limit)


# ---- audit -------------------------------------------------------------------------------------------


async def audit(session: AsyncConnection) -> list[str]:
    """Everything wrong with the books, in words (empty when they are right).

    Every balance equals the sum of its ledger rows and is not negative; every job that reserved
    credits reserved exactly its price; a delivered job was charged and not refunded, a failed,
    expired or cancelled one refunded in full, an unfinished one neither.
    """
    credits = CreditRepository(session)
    problems = [f"account {kind}:{owner}: balance {balance} but its rows sum to {total}"
                for (kind, owner), (balance, total) in sorted((await credits.sums()).items()) if balance != total]
    problems += [f"account {kind}:{owner}: negative balance {balance}"
                 for (kind, owner), (balance, _) in sorted((await credits.sums()).items()) if balance < 0]
    by_job: dict[int, list[Entry]] = {}
    for row in await credits.all_job_entries():
        by_job.setdefault(row.job_id or 0, []).append(row)
    problems += [f"job {job_id}: has a price but no ledger rows" for job_id in await credits.priced_job_ids()
                 if job_id not in by_job]
    jobs = JobRepository(session)
    for job_id, rows in sorted(by_job.items()):
        job = await jobs.get(job_id)
        problems += _job_problems(job_id, job, rows)
    return problems


def _job_problems(job_id: int, job: JobRecord | None, rows: Sequence[Entry]) -> list[str]:
    if job is None:
        return [f"job {job_id}: ledger rows but no job"]
    reserved = -sum(row.amount for row in rows if row.reason == "reserve")
    refunded = sum(row.amount for row in rows if row.reason == "refund")
    charged = [row for row in rows if row.reason == "charge"]
    problems = []
    if reserved != job.credits:
        problems.append(f"job {job_id}: reserved {reserved}, its price is {job.credits}")
    if job.state is JobState.DELIVERED and (refunded or len(charged) != sum(r.reason == "reserve" for r in rows)):
        problems.append(f"job {job_id}: delivered, but charged {len(charged)} row(s) and refunded {refunded}")
    if job.state in REFUNDED_STATES and (refunded != reserved or charged):
        problems.append(f"job {job_id}: {job.state}, but refunded {refunded} of {reserved}")
    if not job.is_final and (refunded or charged):
        problems.append(f"job {job_id}: still {job.state}, but already settled")
    return problems
