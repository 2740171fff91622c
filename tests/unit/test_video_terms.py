"""What a video costs, how often its task is checked, and how /animate and /video read their arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.credits.prices import load_prices
from bot.jobs.polling import PollSchedule
from bot.operations.catalogue import ArgumentError, InputImage
from bot.operations.registry import build_catalogue
from bot.operations.styles import load_catalogue

OPERATIONS = build_catalogue(load_catalogue())


def test_a_video_costs_its_seconds_times_its_models_rate(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"default": 1, "video_seconds": {"default": 3, "models": {"kling": 5}}}))
    prices = load_prices(path)
    animate, video, upscale = OPERATIONS["animate"], OPERATIONS["video"], OPERATIONS["upscale"]
    assert prices.of(animate, animate.parse("kling 10s waves")) == 50
    assert prices.of(video, video.parse("seedance a fox")) == 15
    assert prices.of(upscale, upscale.parse("2")) == 1
    assert load_prices(None).of(animate, animate.parse("")) == 10  # 2 credits a second by default


@pytest.mark.parametrize("bad", [{"video_seconds": {"default": -1}}, {"video_seconds": {"models": {"kling": 1.5}}},
                                 {"video_seconds": []}])
def test_a_bad_video_price_stops_the_bot_at_start_up(tmp_path: Path, bad: dict) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="video"):
        load_prices(path)


def test_a_minutes_long_task_is_checked_a_handful_of_times_not_every_two_seconds() -> None:
    schedule = PollSchedule()
    typical = OPERATIONS["animate"].usual_seconds(OPERATIONS["animate"].parse(""))
    assert typical == 90
    checks, age = 1, schedule.first_delay("animate", typical)
    while age < 120:  # a task that takes two minutes
        age += schedule.next_delay("animate", age)
        checks += 1
    assert age >= 120 and checks <= 10
    # a picture operation keeps its pace: a 2 s check until its time is learnt
    assert PollSchedule().first_delay("upscale", 8) == 2.0


def test_arguments_name_a_model_a_length_and_a_ratio_in_any_order() -> None:
    video = OPERATIONS["video"]
    assert video.parse("9:16 10s kling a fox") == {"model": "kling", "duration": 10, "ratio": "9:16",
                                                   "prompt": "a fox"}
    request = video.build(video.parse("9:16 kling a fox"), [])
    assert request.endpoint == "/v1/aiart/text2video/kling-v3" and request.payload()["aspect_ratio"] == "9:16"
    with pytest.raises(ArgumentError, match="makes videos of 5, 10 seconds"):
        video.parse("kling 7s a fox")
    with pytest.raises(ArgumentError, match="Describe what you want"):
        video.parse("kling 10s")


def test_one_photo_two_frames_or_references_go_to_their_endpoints() -> None:
    animate = OPERATIONS["animate"]
    photo = InputImage("https://cdn.example/a.jpg", 900, 1600)
    args = animate.parse("kling she turns")
    one = animate.build(args, [photo])
    assert one.endpoint == "/v1/aiart/img2video/kling-v3" and one.payload()["aspect_ratio"] == "9:16"
    # kling does not take two frames: never another model in its place (its price would be charged for it)
    assert "two frames" in str(animate.refusal(args, 2)) and animate.refusal(args, 1) is None
    with pytest.raises(ArgumentError, match="Kling v3 cannot make a video from two frames"):
        animate.build(args, [photo, photo])
    seedance = animate.parse("she turns")
    assert animate.build(seedance, [photo, photo]).endpoint == "/v1/aiart/startend2video/doubao-seedance-2-0-260128"
    assert animate.build(seedance, [photo] * 3).endpoint == "/v1/aiart/character2video/doubao-seedance-2-0-260128"


def test_longer_and_other_models_follow_the_catalogue() -> None:
    animate = OPERATIONS["animate"]
    args = animate.parse("seedance she smiles")
    assert animate.longer(args)["duration"] == 10 and animate.longer({**args, "duration": 10}) is None
    offered = [(choice["model"], choice["duration"]) for _, choice in animate.alternatives(args, 1)]
    assert offered == [("seedance", 10), ("kling", 5), ("kling", 10)]
    # two frames: only the models that take them
    two = [(choice["model"], choice["duration"]) for _, choice in animate.alternatives(args, 2)]
    assert two == [("seedance", 10), ("vidu", 4), ("vidu", 8)]
