"""Every operation, as a user does it: photo plus command in, result with the right geometry out."""

from __future__ import annotations

from tests.e2e.conftest import ALICE, mode_and_format, size_of
from tests.e2e.helpers import generation_posts, media, wait_media, wait_text
from tests.fakes import samples


async def test_upscale_doubles_the_photo_and_replies_to_the_user(bot, telegram, alice_chat):
    sent = telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(320, 240), caption="/upscale 2")
    [result] = await wait_media(telegram, alice_chat.id)
    assert result.media_kind == "photo"
    assert size_of(result.media) == (640, 480)
    assert result.reply_to_message_id == sent["message_id"]
    assert "Upscale ×2" in result.caption
    # the status message is tidied away once the result is there
    await telegram.wait_for(lambda: all(m.deleted for m in telegram.sent(alice_chat.id) if m.media is None))


async def test_upscale_four_times(bot, telegram, alice_chat):
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(200, 150), caption="/upscale 4")
    [result] = await wait_media(telegram, alice_chat.id)
    assert size_of(result.media) == (800, 600)


async def test_retouch_colorize_keep_the_size_and_restore_doubles_it(bot, telegram, alice_chat):
    for caption in ("/retouch", "/colorize", "/restore"):
        telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(300, 400), caption=caption)
    results = await wait_media(telegram, alice_chat.id, 3)
    by_caption = {r.caption.split()[1]: size_of(r.media) for r in results}
    assert by_caption == {"Skin": (300, 400), "Colorized": (300, 400), "Restored": (600, 800)}


async def test_expand_adds_the_padding(bot, telegram, alice_chat):
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(300, 200), caption="/expand 10 20 30 40")
    [result] = await wait_media(telegram, alice_chat.id)
    assert size_of(result.media) == (340, 260)


async def test_removebg_sends_a_png_document_with_alpha(bot, telegram, alice_chat):
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(320, 240), caption="/removebg")
    [result] = await wait_media(telegram, alice_chat.id)
    assert result.media_kind == "document"
    assert result.file_name.endswith(".png")
    assert mode_and_format(result.media) == ("RGBA", "PNG")
    assert size_of(result.media) == (320, 240)


async def test_headshot_returns_the_requested_count_as_an_album(bot, telegram, alice_chat):
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(400, 400), caption="/headshot business 3")
    results = await wait_media(telegram, alice_chat.id, 3)
    assert len(results) == 3
    assert {r.kind for r in results} == {"media_group_item"}
    assert len({r.media_group_id for r in results}) == 1


async def test_art_keeps_the_size(bot, telegram, alice_chat):
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(320, 240), caption="/art oil a stormy sea")
    [result] = await wait_media(telegram, alice_chat.id)
    assert size_of(result.media) == (320, 240)
    assert result.caption.startswith("✅ Art: Oil painting")


async def test_imagine_draws_at_the_requested_aspect(bot, telegram, alice_chat):
    telegram.user_sends(alice_chat, ALICE, text="/imagine anime 16:9 a cat on a roof")
    [result] = await wait_media(telegram, alice_chat.id)
    width, height = size_of(result.media)
    assert width > height and abs(width / height - 16 / 9) < 0.02


async def test_imagine_without_style_offers_a_keyboard(bot, telegram, alice_chat):
    request = telegram.user_sends(alice_chat, ALICE, text="/imagine a lighthouse at dawn")
    await wait_text(telegram, alice_chat.id, "Pick a style")
    picker = next(m for m in telegram.sent(alice_chat.id) if m.reply_markup)
    assert picker.reply_to_message_id == request["message_id"]
    buttons = [b["callback_data"] for row in picker.reply_markup["inline_keyboard"] for b in row]
    assert "st:imagine:cartoon" in buttons
    telegram.user_presses(alice_chat, ALICE, picker.message_id, "st:imagine:cartoon")
    [result] = await wait_media(telegram, alice_chat.id)
    assert "Cartoon" in result.caption and "lighthouse" in result.caption


async def test_faceswap_from_an_album_of_two(bot, telegram, alice_chat):
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(200, 200), caption="/faceswap", media_group_id="a1")
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(360, 240), media_group_id="a1")
    [result] = await wait_media(telegram, alice_chat.id)
    assert size_of(result.media) == (360, 240)  # the template's size


async def test_faceswap_asks_for_the_photos_one_after_the_other(bot, telegram, alice_chat):
    telegram.user_sends(alice_chat, ALICE, text="/faceswap")
    await wait_text(telegram, alice_chat.id, "Send the face photo now")
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(200, 200))
    await wait_text(telegram, alice_chat.id, "Now send the template photo")
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(300, 180))
    [result] = await wait_media(telegram, alice_chat.id)
    assert size_of(result.media) == (300, 180)


async def test_replace_with_image_and_mask(bot, telegram, alice_chat):
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(256, 256), caption="/replace a red ball",
                        media_group_id="r1")
    telegram.user_sends(alice_chat, ALICE, photo=samples.png(256, 256, "L"), media_group_id="r1")
    [result] = await wait_media(telegram, alice_chat.id)
    assert size_of(result.media) == (256, 256)


async def test_document_upload_is_accepted_like_a_photo(bot, telegram, alice_chat):
    telegram.user_sends(alice_chat, ALICE, document=(samples.png(120, 90, "RGB"), "scan.png", "image/png"),
                        caption="/upscale 2")
    [result] = await wait_media(telegram, alice_chat.id)
    assert size_of(result.media) == (240, 180)
    assert not media(telegram, alice_chat.id)[1:]


async def test_generate_draws_with_the_chosen_model_at_its_size(bot, telegram, sandbox, alice_chat):
    telegram.user_sends(alice_chat, ALICE, text="/generate gpt 3:2 a lighthouse at dawn")
    [result] = await wait_media(telegram, alice_chat.id)
    assert size_of(result.media) == (1536, 1024)
    assert result.caption.startswith("✅ Generate (GPT Image 2, 3:2, 1k)")
    [body] = generation_posts(sandbox)
    assert body["content"] == [{"type": "text", "text": "a lighthouse at dawn"}] and body["quality"] == "medium"


async def test_generate_takes_an_album_as_reference_images(bot, telegram, sandbox, alice_chat):
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(320, 240), caption="/generate the three together",
                        media_group_id="g1")
    for size in ((240, 320), (300, 300)):
        telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(*size), media_group_id="g1")
    [result] = await wait_media(telegram, alice_chat.id)
    assert size_of(result.media) == (1024, 1024)
    [body] = generation_posts(sandbox)
    assert [item["type"] for item in body["content"]] == ["text", "image_url", "image_url", "image_url"]
    # references go through the service's upload, as the provider's client hands them over
    signs = [r for r in sandbox.received if r.path == "/v1/upload/sign"]
    assert len(signs) == 3 and all("type=img2img" in r.query_string for r in signs)


async def test_generate_replying_to_a_photo_uses_it_as_the_reference(bot, telegram, sandbox, alice_chat):
    photo = telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(200, 150))
    await wait_text(telegram, alice_chat.id, "")  # the photo menu
    telegram.user_sends(alice_chat, ALICE, text="/generate flux 16:9 the same, at night",
                        reply_to=photo["message_id"])
    [result] = await wait_media(telegram, alice_chat.id)
    assert size_of(result.media) == (1392, 752)
    [body] = generation_posts(sandbox)
    assert len(body["content"]) == 2


async def test_generate_with_too_many_references_says_so(bot, telegram, alice_chat):
    for index in range(6):
        telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(100, 100), media_group_id="g2",
                            caption="/generate a collage" if index == 0 else None)
    text = await wait_text(telegram, alice_chat.id, "at most 4 photos")
    assert "Generation" in text  # the operation named as a noun inside the sentence
    assert not media(telegram, alice_chat.id)
