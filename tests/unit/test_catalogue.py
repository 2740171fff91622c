"""The operation catalogue: argument parsing, requests built, and the style file."""

import json
from importlib import resources

import pytest

from bot.aiart import models as api
from bot.operations.catalogue import ArgumentError, InputImage, StyleMissing, build_catalogue
from bot.operations.styles import load_catalogue, parse_catalogue

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
    assert isinstance(request, api.UpscaleRequest)
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
    assert {"business", "fashion", "cartoon"} <= set(load_catalogue().headshot.names())


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
