"""The Mini App's JSON API (`/app/api/…`): every call authenticated by Telegram's initData, for its own person.

    GET  me                  the person's language, direction, the page's texts, their credits
    GET  photo?ref=…         a photo's bytes (downloaded from Telegram here: its file URL holds the bot token)
    GET  styles              the styled operations, their styles and previews
    GET  results             the person's delivered results, newest first
    POST jobs/replace        {photo, mask (PNG, BASE64), prompt}: paint where the mask is white
    POST jobs/expand         {photo, left, top, right, bottom} in the photo's own pixels
    POST jobs/run            {operation, photo?, style?, count?, prompt?, argument?}: a styled or one-tap job
    POST share               {photo}: a prepared inline message of a result (savePreparedInlineMessage) → {id}
    POST invoice             {pack}: a link to the Stars invoice of a pack on sale (createInvoiceLink) → {link},
                             for Telegram.WebApp.openInvoice; the payment is credited as the chat's /buy is

A request needs `Authorization: tma <initData>` (bot.http.initdata: signed by Telegram, at most a day old),
else 401. The user id comes from it alone; photos are named by references the bot issued to that person
(bot.http.app_refs), and results by job ids checked against their owner. Jobs go through the JobService
with the chat commands' allowlist, active-job limit, credits and language, into the person's private chat.
Errors are `{"error": code, "message": text in the person's language}`.

Every call refuses cheaply first (who, then their request budget, in which a call costs what it makes the bot
do: `COSTS`), then does bounded work: a job's limits and credits are read before its body; a call that holds
megabytes (a photo download, a mask) waits for one of a few slots per person and per process
(bot.http.app_limits) before its body is read; a mask is checked from its header and decoded in a thread
under the worker's image-preparation budget (bot.http.app_masks), and stored only with its job.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from bot.chats.people import PeopleService
from bot.chats.stored_inputs import StoredInputs, new_reference
from bot.credits import Pack, pack_of
from bot.credits.packs import PAYLOAD_PREFIX
from bot.credits.texts import not_enough_credits, pack_button
from bot.http import app_texts
from bot.http.app_limits import Busy, LargeRequests, RequestBudget
from bot.http.app_masks import Fitted, NothingPainted, WrongSize, check_mask, read_mask
from bot.http.app_refs import PhotoRefs, result_ref
from bot.http.bodies import json_object
from bot.http.initdata import InitDataError, WebAppUser, from_authorization
from bot.i18n import DEFAULT_LANGUAGE, N_, RTL_LANGUAGES, Text, language_of, render, tr
from bot.images import ImageLimits, ImageRejected, PreparationSlots, fitted_size, inspect, sniff_mime
from bot.jobs.notifier import InputUnavailable
from bot.jobs.service import JobRequest, JobService, NotEnoughCredits, QuotaExceeded
from bot.operations.catalogue import ArgumentError, Operation, ResultKind
from bot.operations.styles import StyleCatalogue, preview_file_name

log = logging.getLogger(__name__)

API_PATH = "/app/api/"
#: a painted mask as BASE64 PNG inside JSON: a mask is mostly one colour, so even a 40 MP one is far smaller
MAX_MASK_BODY = 8 * 1024 * 1024
MAX_BODY = 16 * 1024
#: results listed at most
MAX_RESULTS = 60
#: seconds a photo may take to be written out to the page
WRITE_TIMEOUT_S = 60.0
#: Telegram lets bots download at most this much
MAX_PHOTO_BYTES = 20 * 1024 * 1024
PHOTO_MIMES = frozenset({"image/jpeg", "image/png", "image/webp"})
#: the sides of a frame, as the page sends them and the expanding request takes them
PADDINGS = ("left", "top", "right", "bottom")
#: the same text as the chat's refusal (one msgid, one translation)
NOT_ALLOWED = N_("Sorry, this bot is private.")
#: any photo the API inspects: the size of Telegram's downloads, no pixel floor
_INSPECT = ImageLimits(max_bytes=MAX_PHOTO_BYTES, min_side=1)
#: what a call costs of the person's request budget, in plain reads: what it makes the bot do
COSTS = {"photo": 2, "jobs/replace": 10, "jobs/expand": 5, "jobs/run": 3, "share": 3, "invoice": 5}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ApiError(Exception):
    """An answer other than success: status, a code for the page, and the text to show."""

    def __init__(self, status: int, code: str, text: str | Text, *, rendered: bool = False) -> None:
        super().__init__(code)
        #: `text` is a msgid (or a Text) unless `rendered` says it is already in the caller's language
        self.status, self.code, self.text, self.rendered = status, code, text, rendered


@dataclass(frozen=True)
class Caller:
    """Who is calling, in which language."""

    user: WebAppUser
    language: str

    @property
    def user_id(self) -> int:
        return self.user.user_id


@dataclass
class MiniApp:
    """What the API works with: the job system, the catalogue, Telegram's files and the person's settings."""

    #: checks initData (kept out of repr: it is the bot's secret)
    bot_token: str = field(repr=False)
    refs: PhotoRefs
    jobs: JobService
    people: PeopleService
    operations: Mapping[str, Operation]
    styles: StyleCatalogue
    stored: StoredInputs
    #: a Telegram file's bytes by file id; raises InputUnavailable
    fetch_file: Callable[[str], Awaitable[bytes]]
    #: a result as a prepared inline message: (user id, file id, "photo" or "document") -> its id
    share: Callable[[int, str, str], Awaitable[str]]
    #: whether the allowlist lets this person use the bot
    allowed: Callable[[int], bool] = lambda user_id: True
    #: the language the person chose with /language, if any
    chosen_language: Callable[[int], Awaitable[str | None]] | None = None
    #: whether credits can be bought with Stars (the refusal for lack of credits says how to get more)
    can_buy: bool = False
    #: the packs on sale for Stars, and a link to a pack's invoice: (language, pack) -> link (createInvoiceLink)
    packs: tuple[Pack, ...] = ()
    invoice_link: Callable[[str, Pack], Awaitable[str]] | None = None
    #: the credits the person can spend now; None: credits are off
    spendable: Callable[[int], Awaitable[int]] | None = None
    budget: RequestBudget = field(default_factory=RequestBudget)
    #: slots for calls that hold megabytes (photo downloads, masks)
    large: LargeRequests = field(default_factory=LargeRequests)
    #: decodes masks in threads: the worker's own budget of pixels being decoded, so the two share it
    preparation: PreparationSlots = field(default_factory=PreparationSlots)
    #: rendered style previews (`python -m bot previews`), served under /app/previews/
    previews: Path | None = None


def _error(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"error": code, "message": message}, status=status,
                             headers={"Cache-Control": "no-store"})


def _authenticated(app: MiniApp, handle: Callable[[web.Request, Caller], Awaitable[web.StreamResponse]],
                   cost: int = 1) -> Handler:
    """`handle` behind initData authentication, the allowlist and the person's request budget (`cost` of it)."""

    async def guarded(request: web.Request) -> web.StreamResponse:
        fallback = language_of(request.headers.get("Accept-Language", DEFAULT_LANGUAGE)[:16])
        try:
            user = from_authorization(request.headers.get("Authorization"), app.bot_token)
        except InitDataError as error:
            log.info("refused a Mini App request: %s", error)  # never the header itself: it is a credential
            return _error(401, "unauthorized", tr(fallback, app_texts.UNAUTHORIZED))
        # refusals before any database read, in the language of the person's app
        if not app.allowed(user.user_id):
            return _error(403, "not_allowed", tr(language_of(user.language_code), NOT_ALLOWED))
        if not app.budget.take(user.user_id, cost):
            return _error(429, "rate_limited", tr(language_of(user.language_code), app_texts.RATE_LIMITED))
        chosen = await app.chosen_language(user.user_id) if app.chosen_language is not None else None
        caller = Caller(user, language_of(chosen or user.language_code))
        try:
            return await handle(request, caller)
        except ApiError as error:
            if error.rendered or isinstance(error.text, Text):
                return _error(error.status, error.code, render(caller.language, error.text))
            return _error(error.status, error.code, tr(caller.language, error.text))
        except web.HTTPRequestEntityTooLarge:
            return _error(413, "too_large", tr(caller.language, app_texts.TOO_LARGE))
        except Busy:
            return _error(503, "busy", tr(caller.language, app_texts.RATE_LIMITED))

    return guarded


async def _body(request: web.Request, max_bytes: int = MAX_BODY) -> dict[str, Any]:
    body = await json_object(request, max_bytes)
    if body is None:
        raise ApiError(400, "bad_request", app_texts.BAD_REQUEST)
    return body


def _number(body: Mapping[str, Any], name: str, *, most: int) -> int:
    value = body.get(name, 0)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= most:
        raise ApiError(400, "bad_request", app_texts.BAD_REQUEST)
    return value


def _text(body: Mapping[str, Any], name: str, *, most: int = 1000) -> str:
    value = body.get(name, "")
    if not isinstance(value, str) or len(value) > most:
        raise ApiError(400, "bad_request", app_texts.BAD_REQUEST)
    return " ".join(value.split())


class AppApi:
    """The handlers, bound to one MiniApp."""

    def __init__(self, app: MiniApp) -> None:
        self.app = app

    async def _entry(self, caller: Caller, ref: object) -> dict[str, str]:
        """The file of a reference the caller may use, as a job keeps it ({"id", "kind", "thumb"}); 403 otherwise."""
        found = self.app.refs.read(caller.user_id, ref)
        if found is not None and found.file_id is not None:
            return {"id": found.file_id, "kind": "photo"}
        if found is not None and found.job_id is not None:
            job = await self.app.people.job(found.job_id)
            if job is not None and job.user_id == caller.user_id and found.picture < len(job.result_files):
                return job.result_files[found.picture]
        raise ApiError(403, "not_yours", app_texts.NOT_YOURS)

    async def _file(self, caller: Caller, ref: object) -> tuple[str, str]:
        """(file id, "photo", "document" or "video") of a reference the caller may use; 403 otherwise."""
        entry = await self._entry(caller, ref)
        return entry["id"], entry.get("kind", "photo")

    async def _photo_file(self, caller: Caller, ref: object) -> str:
        """The file id of a reference an operation on pictures may take: a video is refused before any download."""
        file_id, kind = await self._file(caller, ref)
        if kind == ResultKind.VIDEO:
            raise ApiError(400, "not_a_photo", app_texts.NOT_A_PHOTO)
        return file_id

    async def _download(self, file_id: str) -> bytes:
        try:
            data = await self.app.fetch_file(file_id)
        except InputUnavailable as error:
            raise ApiError(404, "unavailable", error.text or app_texts.NOT_YOURS) from error
        if len(data) > MAX_PHOTO_BYTES or sniff_mime(data) not in PHOTO_MIMES:
            raise ApiError(404, "unavailable", app_texts.NOT_YOURS)
        return data

    async def _size(self, data: bytes) -> tuple[int, int]:
        try:
            info = inspect(data, _INSPECT)
        except ImageRejected as error:
            raise ApiError(400, "bad_image", error.text) from error
        return info.width, info.height

    def _screen(self, screen: str) -> Operation:
        """The operation the catalogue gives this Mini App screen (`Operation.mini_app`), so none is named here."""
        for operation in self.app.operations.values():
            if operation.mini_app == screen:
                return operation
        raise ApiError(400, "unknown_operation", app_texts.UNKNOWN_OPERATION)

    def _operation(self, name: object) -> Operation:
        operation = self.app.operations.get(name) if isinstance(name, str) else None
        if operation is None:
            raise ApiError(400, "unknown_operation", app_texts.UNKNOWN_OPERATION)
        return operation

    @staticmethod
    def _parse(operation: Operation, text: str) -> dict[str, Any]:
        try:
            return operation.parse(text)
        except ArgumentError as error:
            raise ApiError(400, "bad_arguments", error.text) from error

    @staticmethod
    def _request(caller: Caller, operation: Operation, args: dict[str, Any], inputs: list[str],
                 stored: tuple[tuple[str, bytes], ...] = ()) -> JobRequest:
        """The job for the caller's private chat, as a chat command would make it."""
        return JobRequest(chat_id=caller.user_id, chat_type="private", chat_title=None, user_id=caller.user_id,
                          username=None, first_name=caller.user.first_name, reply_to_message_id=None,
                          operation=operation.name, args=args, inputs=inputs, language=caller.language, stored=stored)

    def _refusal(self, caller: Caller, outcome: NotEnoughCredits | QuotaExceeded) -> ApiError:
        """The answer for a job the job system will not take: credits, or limits."""
        if isinstance(outcome, NotEnoughCredits):
            refusal = not_enough_credits(caller.language, outcome.price, outcome.available, outcome.free_per_day,
                                         can_buy=self.app.can_buy, free_gone=outcome.free_gone,
                                         in_place=bool(self._packs(caller.language)))
            return ApiError(402, "credits", refusal, rendered=True)
        return ApiError(429, "quota", outcome.reason)

    async def _can_start(self, caller: Caller, operation: Operation, args: dict[str, Any]) -> None:
        """Refuse now, before any costly work, a job the person's limits or credits would refuse anyway."""
        refusal = await self.app.jobs.refusal(self._request(caller, operation, args, []))
        if refusal is not None:
            raise self._refusal(caller, refusal)

    async def _enqueue(self, caller: Caller, operation: Operation, args: dict[str, Any],
                       inputs: list[str], stored: tuple[tuple[str, bytes], ...] = ()) -> web.Response:
        """Queue the job for the caller's private chat, as a chat command would; the answer for the page."""
        language = caller.language
        try:
            outcome = await self.app.jobs.enqueue(self._request(caller, operation, args, inputs, stored))
        except Exception:
            log.exception("could not store a %s job from the Mini App", operation.name)
            raise ApiError(503, "not_stored", app_texts.NOT_STORED) from None
        if isinstance(outcome, (NotEnoughCredits, QuotaExceeded)):
            raise self._refusal(caller, outcome)
        log.info("job %s: queued %s from the Mini App", outcome.id, operation.name)
        return web.json_response({"job": outcome.id, "credits": outcome.credits,
                                  "message": tr(language, app_texts.PAGE["queued"])})

    # --- reads ------------------------------------------------------------------------------------------------

    async def me(self, request: web.Request, caller: Caller) -> web.Response:
        language = caller.language
        credits = await self.app.spendable(caller.user_id) if self.app.spendable is not None else None
        followups = [{"operation": operation.name, "argument": button.argument, "label": tr(language, button.label)}
                     for operation, button in self._one_tap()]
        return web.json_response({
            "language": language, "rtl": language in RTL_LANGUAGES, "texts": app_texts.page_texts(language),
            "credits": None if credits is None else app_texts.credits_line(language, credits),
            "followups": followups, "can_buy": self.app.can_buy, "packs": self._packs(language)},
            headers={"Cache-Control": "no-store"})

    def _packs(self, language: str) -> list[dict[str, str]]:
        """The packs the page offers to buy in place, named as their payloads name them; none without links."""
        if self.app.invoice_link is None:
            return []
        return [{"id": pack.payload.removeprefix(PAYLOAD_PREFIX), "label": pack_button(language, pack.credits, pack.stars)}
                for pack in self.app.packs]

    def _one_tap(self) -> list[tuple[Operation, Any]]:
        """The photo-menu buttons that make a job in one tap on one picture (upscale 2×, remove background, …)."""
        found = []
        for operation in self.app.operations.values():
            if operation.images != 1 or operation.style_group is not None:
                continue
            for button in operation.menu_buttons:
                try:
                    operation.parse(button.argument)
                except ArgumentError:
                    continue
                found.append((operation, button))
        return found

    async def photo(self, request: web.Request, caller: Caller) -> web.StreamResponse:
        file_id = await self._photo_file(caller, request.query.get("ref"))
        async with self.app.large.slot(caller.user_id):  # held until the photo is written out, not only downloaded
            data = await self._download(file_id)
            response = web.StreamResponse(headers={"Cache-Control": "private, max-age=3600",
                                                   "X-Content-Type-Options": "nosniff"})
            response.content_type = sniff_mime(data) or "application/octet-stream"
            response.content_length = len(data)
            await response.prepare(request)
            try:
                async with asyncio.timeout(WRITE_TIMEOUT_S):  # a reader that never reads would hold the slot
                    await response.write(data)
                    await response.write_eof()
            except TimeoutError:
                log.info("gave up writing a photo to a reader too slow")
                if request.transport is not None:
                    request.transport.close()
        return response

    async def styles(self, request: web.Request, caller: Caller) -> web.Response:
        language, groups = caller.language, []
        for operation in self.app.operations.values():
            if operation.style_group is None or operation.style_group not in self.app.styles.groups:
                continue
            group = self.app.styles.group(operation.style_group)
            entry: dict[str, Any] = {
                "operation": operation.name, "title": tr(language, operation.title),
                "photo": operation.images >= 1, "prompt": operation.images == 0,
                "styles": [{"key": style.key, "label": tr(language, style.label),
                            "preview": preview_url(style.extra) or self._rendered(operation.name, style.key)}
                           for style in group.styles.values()]}
            if operation.pick is not None:  # the counts the chat's picker offers (each headshot costs)
                first = next(iter(group.styles))
                entry["counts"] = [int(argument.split()[-1]) for _, argument in operation.pick.offer(first)]
            groups.append(entry)
        return web.json_response({"groups": groups}, headers={"Cache-Control": "no-store"})

    def _rendered(self, operation: str, style: str) -> str | None:
        """A preview `python -m bot previews` rendered, if there is one."""
        name = preview_file_name(operation, style)
        return f"previews/{name}" if self.app.previews is not None and (self.app.previews / name).is_file() else None

    async def results(self, request: web.Request, caller: Caller) -> web.Response:
        jobs = await self.app.people.delivered(caller.user_id, limit=MAX_RESULTS)
        items = []
        for job in jobs:
            operation = self.app.operations.get(job.operation)
            title = tr(caller.language, operation.title) if operation is not None else job.operation
            # "poster": whether the page may ask for a picture of it (a video has one only with a thumbnail)
            items += [{"ref": result_ref(job.id, index), "job": job.id, "title": title, "kind": file.get("kind"),
                       "poster": file.get("kind") != ResultKind.VIDEO or "thumb" in file,
                       "created": job.created_at.isoformat()} for index, file in enumerate(job.result_files)]
        return web.json_response({"results": items[:MAX_RESULTS]}, headers={"Cache-Control": "no-store"})

    # --- jobs -------------------------------------------------------------------------------------------------

    async def replace(self, request: web.Request, caller: Caller) -> web.Response:
        operation = self._screen("paint")
        await self._can_start(caller, operation, {})  # its price is per picture: one, whatever is painted
        async with self.app.large.slot(caller.user_id):
            body = await _body(request, MAX_MASK_BODY)
            prompt = _text(body, "prompt")
            if not prompt:
                raise ApiError(400, "describe", app_texts.DESCRIBE_FIRST)
            args = self._parse(operation, prompt)
            mask, photo = _mask_bytes(body.get("mask")), body.get("photo")
            del body  # its BASE64 text is larger than the mask: not kept through the download
            file_id = await self._photo_file(caller, photo)
            try:
                check_mask(mask)  # from its header, before the photo is downloaded
                size = await self._size(await self._download(file_id))
                fitted = Fitted(fitted_size(size, operation.limits.max_side), size)
                mask = await read_mask(mask, fitted, self.app.preparation)
            except WrongSize:
                raise ApiError(400, "mask_size", app_texts.MASK_SIZE) from None
            except NothingPainted:
                raise ApiError(400, "paint_first", app_texts.PAINT_FIRST) from None
            except ImageRejected:
                raise ApiError(400, "bad_mask", app_texts.MASK_UNUSABLE) from None
        reference = new_reference(caller.user_id)  # written with the job, or not at all
        return await self._enqueue(caller, operation, args, [file_id, reference], ((reference, mask),))

    async def expand(self, request: web.Request, caller: Caller) -> web.Response:
        operation = self._screen("frame")
        await self._can_start(caller, operation, {})
        body = await _body(request)
        sides = [_number(body, side, most=100_000) for side in PADDINGS]
        file_id = await self._photo_file(caller, body.get("photo"))
        async with self.app.large.slot(caller.user_id):
            width, height = await self._size(await self._download(file_id))
        # the worker fits the photo into the operation's longest side: the paddings shrink with it
        most = operation.limits.max_side
        scale = min(1.0, most / max(width, height)) if most else 1.0
        args = self._parse(operation, " ".join(str(round(side * scale)) for side in sides))
        return await self._enqueue(caller, operation, args, [file_id])

    async def run(self, request: web.Request, caller: Caller) -> web.Response:
        body = await _body(request)
        operation = self._operation(body.get("operation"))
        if operation.style_group is not None:
            group = self.app.styles.group(operation.style_group)
            style = group.get(_text(body, "style", most=64))
            if style is None:
                raise ApiError(400, "bad_request", app_texts.BAD_REQUEST)
            if operation.pick is not None:
                text = f"{style.key} {_number(body, 'count', most=99) or 1}"
            else:
                text = f"{style.key} {_text(body, 'prompt')}".strip()
        elif operation.images == 1:
            argument = _text(body, "argument", most=64)
            if argument not in {button.argument for button in operation.menu_buttons}:
                raise ApiError(400, "unknown_operation", app_texts.UNKNOWN_OPERATION)
            text = argument
        else:
            raise ApiError(400, "unknown_operation", app_texts.UNKNOWN_OPERATION)
        args = self._parse(operation, text)
        inputs: list[str] = []
        if operation.images == 1 or (operation.most_images > 0 and body.get("photo")):
            inputs.append(await self._photo_file(caller, body.get("photo")))
        return await self._enqueue(caller, operation, args, inputs)

    async def share(self, request: web.Request, caller: Caller) -> web.Response:
        body = await _body(request)
        file_id, kind = await self._file(caller, body.get("photo"))
        try:
            prepared = await self.app.share(caller.user_id, file_id, kind)
        except Exception:
            log.warning("could not prepare a result to share", exc_info=True)
            raise ApiError(502, "failed", app_texts.PAGE["failed"]) from None
        return web.json_response({"id": prepared}, headers={"Cache-Control": "no-store"})


    async def invoice(self, request: web.Request, caller: Caller) -> web.Response:
        body = await _body(request)
        name = body.get("pack")
        pack = pack_of(PAYLOAD_PREFIX + name, self.app.packs) if isinstance(name, str) and len(name) <= 32 else None
        if pack is None or self.app.invoice_link is None:
            raise ApiError(400, "pack_gone", app_texts.PACK_GONE)
        try:
            link = await self.app.invoice_link(caller.language, pack)
        except Exception:
            log.warning("could not make an invoice link", exc_info=True)
            raise ApiError(502, "failed", app_texts.PAGE["failed"]) from None
        return web.json_response({"link": link}, headers={"Cache-Control": "no-store"})


def preview_url(extra: Mapping[str, Any]) -> str | None:
    """A style's preview picture: an https URL, or a file of the previews folder (served under /app/previews/)."""
    preview = extra.get("preview")
    if not isinstance(preview, str) or not preview:
        return None
    if preview.startswith("https://"):
        return preview
    if "://" in preview:  # a page inside Telegram loads pictures over https only
        return None
    name = preview.rsplit("/", 1)[-1]
    return f"previews/{name}" if name and not name.startswith(".") else None


def _mask_bytes(value: object) -> bytes:
    """The mask's PNG bytes from BASE64 (a data: URL's prefix allowed)."""
    if not isinstance(value, str):
        raise ApiError(400, "bad_request", app_texts.BAD_REQUEST)
    _, comma, encoded = value.partition(",")
    try:
        data = base64.b64decode(encoded if comma else value, validate=True)
    except (binascii.Error, ValueError):
        raise ApiError(400, "bad_request", app_texts.BAD_REQUEST) from None
    if sniff_mime(data) != "image/png":
        raise ApiError(400, "bad_request", app_texts.BAD_REQUEST)
    return data


def add_api_routes(web_app: web.Application, app: MiniApp) -> None:
    """The API's routes under /app/api/."""
    api = AppApi(app)
    routes = [("GET", "me", api.me), ("GET", "photo", api.photo), ("GET", "styles", api.styles),
              ("GET", "results", api.results), ("POST", "jobs/replace", api.replace),
              ("POST", "jobs/expand", api.expand), ("POST", "jobs/run", api.run), ("POST", "share", api.share),
              ("POST", "invoice", api.invoice)]
    for method, path, handle in routes:
        web_app.router.add_route(method, API_PATH + path, _authenticated(app, handle, COSTS.get(path, 1)))
