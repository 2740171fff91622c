"""The sandbox's photo videos: one photo (img2video), two frames (startend2video), references (character2video)."""

from __future__ import annotations

from bot.sandbox.renderers.videos import endpoint

SANDBOX = endpoint("img2video", "/v1/aiart/img2video/{model_id}")
#: every endpoint this module serves (the registry's one SANDBOX plus the other image-to-video endpoints)
SANDBOXES = (SANDBOX, endpoint("startend2video", "/v1/aiart/startend2video/{model_id}"),
             endpoint("character2video", "/v1/aiart/character2video/{model_id}"))
