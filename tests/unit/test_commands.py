"""Reading commands and callback data."""

import pytest

from bot.tg.commands import parse_command
from bot.tg.keyboards import parse_choice


@pytest.mark.parametrize("text, name, args", [
    ("/upscale 2", "upscale", "2"),
    ("/upscale@aiart_test_bot 4", "upscale", "4"),
    ("/UPSCALE", "upscale", ""),
    ("/imagine  a cat\non a roof ", "imagine", "a cat\non a roof"),
])
def test_commands_are_read(text, name, args):
    call = parse_command(text, "aiart_test_bot")
    assert (call.name, call.args) == (name, args)


@pytest.mark.parametrize("text", [None, "", "hello", "/upscale@other_bot 2", " / upscale", "/" + "x" * 40])
def test_non_commands_and_other_bots_commands_are_ignored(text):
    assert parse_command(text, "aiart_test_bot") is None


@pytest.mark.parametrize("data", [None, "", "junk", "op:", "xx:upscale", "op:" + "a" * 70])
def test_foreign_callback_data_is_rejected(data):
    assert parse_choice(data) is None


def test_own_callback_data_round_trips():
    choice = parse_choice("st:headshot:business")
    assert (choice.kind, choice.operation, choice.argument) == ("st", "headshot", "business")
