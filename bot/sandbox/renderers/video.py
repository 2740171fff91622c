"""The sandbox's video from a description (/v1/aiart/text2video/{model_id})."""

from __future__ import annotations

from bot.sandbox.renderers.videos import endpoint

SANDBOX = endpoint("text2video", "/v1/aiart/text2video/{model_id}")
