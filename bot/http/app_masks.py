"""A painted mask from the Mini App: checked from its header, then decoded off the event loop and re-encoded small.

A mask is hostile input like any image: a PNG of a few kilobytes can decode to 40 megapixels. So its size
is read from the header first and anything over `MAX_MASK_PIXELS` is refused before a pixel is decoded; it
must be the photo's size as the worker will send it (fitted into the operation's longest side, either way
up, a pixel of rounding allowed) or the photo's own size when that is small enough. Only then is it decoded,
in a thread under the worker's image-preparation budget (bot.images.PreparationSlots), turned to black and
white at the service's threshold (over half bright is painted) and re-encoded as a PNG of exactly the
fitted size: what is stored is small, and is what the service will read.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from PIL import Image

from bot.images import ImageLimits, ImageRejected, PreparationSlots, inspect

#: the largest mask accepted at all: a 2048 x 2048 square, the replacer's longest side each way
MAX_MASK_PIXELS = 2048 * 2048
#: a mask's bytes as a PNG (a BASE64 body of 8 MB holds about 6 MB)
MAX_MASK_BYTES = 6 * 1024 * 1024
MASK_LIMITS = ImageLimits(formats=frozenset({"PNG"}), max_bytes=MAX_MASK_BYTES, max_pixels=MAX_MASK_PIXELS, min_side=1)
#: over half bright is painted, as the service reads a mask
THRESHOLD = 127
# what Pillow raises on a damaged or truncated file
_DECODE_ERRORS = (OSError, ValueError, SyntaxError, EOFError, Image.DecompressionBombError)


class NothingPainted(Exception):
    """The mask is all black."""


class WrongSize(Exception):
    """The mask is not the size of the photo it is for."""


@dataclass(frozen=True)
class Fitted:
    """The sizes a mask for one photo may have, and the size it is stored at."""

    #: the photo as the worker sends it (fitted into the operation's longest side)
    target: tuple[int, int]
    #: the photo's own size
    own: tuple[int, int]

    def accepts(self, size: tuple[int, int]) -> tuple[int, int] | None:
        """The size to store a mask of `size` at, or None when it fits neither the photo nor its fitted copy.

        Either way up: a browser shows a photo with its EXIF orientation applied, and the worker turns it upright.
        """
        for target, own in ((self.target, self.own), (self.target[::-1], self.own[::-1])):
            if _near(size, target) or size == own:
                return target
        return None


def _near(size: tuple[int, int], target: tuple[int, int]) -> bool:
    return abs(size[0] - target[0]) <= 1 and abs(size[1] - target[1]) <= 1


def check_mask(data: bytes) -> None:
    """Refuse (ImageRejected) a mask that is not a PNG, is damaged or is too large, from its bytes and header."""
    inspect(data, MASK_LIMITS)


async def read_mask(data: bytes, fitted: Fitted, slots: PreparationSlots) -> bytes:
    """The mask re-encoded at its stored size; ImageRejected, WrongSize or NothingPainted otherwise.

    Header checks happen here, on the event loop (they read a few bytes); the decode waits for a slot.
    """
    info = inspect(data, MASK_LIMITS)  # too many pixels, not a PNG, a damaged header: refused undecoded
    target = fitted.accepts((info.width, info.height))
    if target is None:
        raise WrongSize()
    mask = await slots.run(data, MASK_LIMITS, lambda checked: _reencode(checked, target))
    if mask is None:
        raise NothingPainted()
    return mask


def _reencode(data: bytes, target: tuple[int, int]) -> bytes | None:
    """Black and white at `target`, as a PNG; None when nothing is painted (runs in a thread)."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            grey = image.convert("L")
    except _DECODE_ERRORS as error:
        raise ImageRejected("the mask's pixels could not be decoded") from error
    if grey.getextrema()[1] <= THRESHOLD:
        return None
    if grey.size != target:
        grey = grey.resize(target, Image.Resampling.BILINEAR)
    painted = grey.point(lambda value: 255 if value > THRESHOLD else 0)
    out = io.BytesIO()
    painted.save(out, "PNG", optimize=True)
    return out.getvalue()
