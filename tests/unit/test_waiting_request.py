"""The record of a request waiting for more images: stored as JSON, read back whole, rows of older code included."""

from __future__ import annotations

from datetime import UTC, datetime

from telegram import Chat, Message

from bot.operations.registry import build_catalogue
from bot.operations.styles import load_catalogue
from bot.tg.pending import WaitingRequest

SOURCE = Message(7, datetime(2026, 11, 26, tzinfo=UTC), Chat(-100, "supergroup"), caption="/faceswap",
                 media_group_id="album-1")


def test_a_waiting_request_reads_back_as_it_was_stored():
    request = WaitingRequest("faceswap", "", SOURCE, ("face",), started=datetime(2026, 11, 26, 12, tzinfo=UTC),
                             album_id="album-1", album_items=2)
    assert WaitingRequest.of_data(request.to_data(), None) == request


def test_a_row_written_before_albums_were_counted_reads_as_one_item():
    data = WaitingRequest("faceswap", "", SOURCE).to_data()
    del data["album_items"], data["album_id"], data["started"]
    assert WaitingRequest.of_data(data, None) == WaitingRequest("faceswap", "", SOURCE)


def test_a_pair_is_complete_with_its_second_image_and_an_album_item_counts_even_without_one():
    catalogue = build_catalogue(load_catalogue())
    faceswap, generate = catalogue["faceswap"], catalogue["generate"]
    first = WaitingRequest("faceswap", "", SOURCE, ("face",))
    assert not first.has_all(faceswap)
    assert first.with_images(["template"]).has_all(faceswap)
    video = first.with_images([], album_item=True)  # a video in the album: seen, no image
    assert video.album_items == 2 and video.file_ids == ("face",)
    # optional extra images (references) wait for the album's end, however many came
    assert not WaitingRequest("generate", "", SOURCE, ("a", "b", "c")).has_all(generate)
