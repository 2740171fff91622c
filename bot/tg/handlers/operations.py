"""One command per catalogue operation: /upscale, /retouch, /imagine, /art, /removebg, /headshot, …"""

from __future__ import annotations

from collections.abc import Mapping

from telegram import Update
from telegram.ext import Application

from bot.operations.catalogue import Operation
from bot.tg.commands import CommandCall
from bot.tg.context import CustomContext
from bot.tg.handlers.router import Router
from bot.tg.inputs import message_images, own_images
from bot.tg.start import start_operation


def _handler(operation: Operation):
    async def handle(update: Update, context: CustomContext, call: CommandCall) -> None:
        message = update.effective_message
        # two-image operations take the replied-to photo first and the message's own photo second
        images = message_images(message)
        if operation.images == 2 and message.reply_to_message is not None:
            images = own_images(message.reply_to_message) + own_images(message)
        await start_operation(context, operation, call.args, message, images if operation.most_images else [])
    handle.__name__ = f"run_{operation.name}"
    return handle


def register(application: Application, router: Router) -> None:
    """One command per operation of the catalogue."""
    catalogue: Mapping[str, Operation] = application.bot_data.deps.operations
    for operation in catalogue.values():
        # msgids, as every description and usage
        router.add(operation.name, _handler(operation), operation.summary, usage=operation.usage)
