"""The operation catalogue: argument parsing, requests built, and the style file."""

import json
from importlib import resources

import pytest

from bot.operations.catalogue import ArgumentError, InputImage, StyleMissing
from bot.operations.generate import ImageGenerationRequest
from bot.operations.registry import build_catalogue
from bot.operations.styles import load_catalogue, parse_catalogue
from bot.operations.upscale import UpscaleRequest

IMAGE = [InputImage("aGVsbG8=", 640, 480)]


@pytest.fixture(scope="module")
def ops():
    return build_catalogue(load_catalogue())


@pytest.mark.parametrize("text, factor", [("", 2), ("2", 2), ("4", 4), ("x4", 4), ("2x", 2), ("×4", 4), ("2.0", 2)])
def test_upscale_factor_parses(ops, text, factor):
    assert ops["upscale"].parse(text) == {"factor": factor}


@pytest.mark.parametrize("text", ["7", "3", "0", "-2", "big", "2 4", "1e9"])
def test_upscale_bad_factor_is_explained(ops, text):
    with pytest.raises(ArgumentError, match="2 or 4"):
        ops["upscale"].parse(text)


def test_upscale_request_asks_for_exactly_factor_times_the_input(ops):
    request = ops["upscale"].build({"factor": 2}, IMAGE)
    assert isinstance(request, UpscaleRequest)
    assert (request.max_width, request.max_height) == (1280, 960)


@pytest.mark.parametrize("text", ["-5 a", "1 2 3", "a b c d", "10 10", "0", "0 0 0 0", "99999"])
def test_expand_bad_padding_is_explained(ops, text):
    with pytest.raises(ArgumentError):
        ops["expand"].parse(text)


def test_expand_one_number_pads_every_side(ops):
    assert ops["expand"].parse("50") == {"left": 50, "top": 50, "right": 50, "bottom": 50}
    assert ops["expand"].parse("1 2 3 4") == {"left": 1, "top": 2, "right": 3, "bottom": 4}
    assert ops["expand"].build(ops["expand"].parse("1 2 3 4"), IMAGE).payload()["padImgBottom"] == 4


def test_imagine_reads_style_and_size_before_the_prompt(ops):
    args = ops["imagine"].parse("anime 16:9 a cat on a roof")
    assert args == {"prompt": "a cat on a roof", "size": "16:9", "style": "anime"}
    payload = ops["imagine"].build(args, []).payload()
    assert payload["templateId"] == "99d61f0e-f6c8-4769-9f4c-e2276c16970c"
    assert payload["sizeId"] == "16:9"


def test_imagine_without_style_asks_for_one_and_empty_prompt_is_refused(ops):
    with pytest.raises(StyleMissing):
        ops["imagine"].parse("a lighthouse")
    with pytest.raises(ArgumentError, match="Describe"):
        ops["imagine"].parse("anime")
    with pytest.raises(ArgumentError, match="characters"):
        ops["imagine"].parse("none " + "x" * 5000)


def test_art_and_headshot_styles(ops):
    with pytest.raises(StyleMissing):
        ops["art"].parse("")
    with pytest.raises(ArgumentError, match="Styles: oil"):
        ops["art"].parse("vaporwave")
    assert ops["headshot"].parse("Business 3") == {"style": "business", "count": 3}
    assert ops["headshot"].parse("cartoon")["count"] == 2
    with pytest.raises(ArgumentError, match="between 1 and 10"):
        ops["headshot"].parse("fashion 11")
    request = ops["headshot"].build({"style": "fashion", "count": 3}, IMAGE)
    assert request.payload()["avatarTemplateParams"] == [{"templateId": "headshot-fashion", "num": 3}]
    assert ops["headshot"].outputs({"style": "fashion", "count": 3}) == 3


def test_headshot_has_the_documented_styles(ops):
    assert {"business", "fashion", "cartoon"} <= set(load_catalogue().group("headshot").names())


def test_removebg_modes_map_to_service_actions(ops):
    assert ops["removebg"].build(ops["removebg"].parse("body"), IMAGE).payload()["action"] == "SegmentBody"
    assert ops["removebg"].build(ops["removebg"].parse(""), IMAGE).payload()["action"] == "auto"
    with pytest.raises(ArgumentError):
        ops["removebg"].parse("everything")


def test_base64_handoff_follows_the_interface(ops):
    accepted = {name for name, op in ops.items() if op.accepts_base64}
    assert accepted == {"upscale", "art", "removebg", "faceswap", "replace"}


def test_operator_catalogue_file_replaces_the_packaged_one(tmp_path):
    data = json.loads((resources.files("bot.operations") / "styles.json").read_text())
    data["art"]["styles"] = {"pixel": {"label": "Pixel art", "template_id": "tpl-pixel"}}
    path = tmp_path / "styles.json"
    path.write_text(json.dumps(data))
    catalogue = build_catalogue(load_catalogue(path))
    assert catalogue["art"].build({"style": "pixel"}, IMAGE).payload()["templateId"] == "tpl-pixel"


def test_broken_catalogue_is_refused():
    with pytest.raises(ValueError):
        parse_catalogue({"imagine": {"styles": {}}, "art": {"styles": {}}, "headshot": {"styles": {}}})


def test_upscale_refuses_a_huge_number_with_a_message():
    with pytest.raises(ArgumentError, match="2 or 4"):
        build_catalogue(load_catalogue())["upscale"].parse("9" * 309)


@pytest.mark.parametrize(("text", "model_id", "size"), [
    ("a fox", "flux-2-pro", (1024, 1024)),
    ("seedream 16:9 4k a fox", "seedream-4-5-251128", (5461, 3072)),  # fitted into the model's pixel budget
    ("gemini 9:16 2k a fox", "gemini-3-pro-image-preview", (1536, 2752)),
    ("4:3 a fox", "flux-2-pro", (1184, 880)),
])
def test_generate_reads_model_ratio_and_resolution_and_sizes_as_the_providers_client(ops, text, model_id, size):
    request = ops["generate"].build(ops["generate"].parse(text), [])
    assert isinstance(request, ImageGenerationRequest)
    assert (request.model_id, (request.width, request.height)) == (model_id, size)
    assert request.endpoint == f"/v1/aiart/imagegeneration/{model_id}"
    assert request.payload()["content"] == [{"type": "text", "text": "a fox"}]


def test_generate_sends_every_reference_image(ops):
    refs = [InputImage(f"https://u.test/{n}.jpg", 640, 480) for n in range(3)]
    content = ops["generate"].build(ops["generate"].parse("flux together"), refs).payload()["content"]
    assert [item["url"] for item in content[1:]] == [ref.ref for ref in refs]
    assert ops["generate"].most_images == 4 and ops["generate"].images == 0


@pytest.mark.parametrize(("text", "message"), [("", "Describe"), ("flux 5:1 a fox", "draws in"),
                                               ("flux 4k a fox", "draws at")])
def test_generate_bad_arguments_are_explained(ops, text, message):
    with pytest.raises(ArgumentError, match=message):
        ops["generate"].parse(text)


def test_command_text_joins_the_cli_options_in_order(ops):
    assert ops["imagine"].command_text({"style": "anime", "size": None, "prompt": "a cat"}) == "anime a cat"
    assert ops["expand"].command_text({"pad": [1, 2, 3, 4]}) == "1 2 3 4"
    assert ops["upscale"].command_text({"factor": 4}) == "4"


def test_menu_buttons_come_from_the_entries(ops):
    assert [(b.label, b.argument) for b in ops["upscale"].menu_buttons] == [("Upscale 2×", "2"), ("Upscale 4×", "4")]
    assert ops["retouch"].menu_buttons[0].label == "Skin retouch"
    assert ops["replace"].menu_buttons == () and ops["imagine"].menu_buttons == ()


def test_style_groups_are_read_from_every_section():
    catalogue = parse_catalogue({"anything": {"default": "a", "max_count": 3,
                                              "styles": {"a": {"template_id": "t-a", "sizes": [1]}}}})
    group = catalogue.group("anything")
    assert group.get("A").template_id == "t-a" and group.get("a").extra == {"sizes": [1]}
    assert group.settings == {"max_count": 3}
    with pytest.raises(ValueError, match="no section"):
        catalogue.group("other")


def test_inline_mode_generates_with_one_text_only_operation():
    """`@bot <description>` queues the one entry marked for inline mode: it needs no image, only a description."""
    marked = [operation for operation in build_catalogue(load_catalogue()).values() if operation.inline]
    assert [operation.name for operation in marked] == ["imagine"]
    assert marked[0].images == 0 and marked[0].style_group is not None
