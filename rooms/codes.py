"""Room codes, lecturer keys and browser tokens.

A room code is 8 characters of an alphabet without look-alikes (no 0/O, 1/I/L): 31^8, about 8.5e11 codes (39.6
bits); with at most a few hundred rooms open and wrong codes limited per browser and per store
(:mod:`rooms.service`), guessing one is not practical. It is shown as ``ABCD-EFGH`` and read back whatever the case,
spaces or dashes. A lecturer key is 128 random bits (``secrets.token_urlsafe(16)``); the store keeps only its
SHA-256, and a key given is compared with it in constant time (``hmac.compare_digest``). A browser token is another
128 random bits, kept by the browser in a cookie (:mod:`rooms.web`); the store keeps a hash of it.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
CODE_LEN = 8
KEY_BYTES = 16
_CODE = re.compile(f"^[{ALPHABET}]{{{CODE_LEN}}}$")
_KEY = re.compile(r"^[A-Za-z0-9_-]{22}$")
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{22,64}$")


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LEN))


def read_code(text: object) -> str | None:
    """The code in ``text`` as typed or linked (any case, spaces and dashes), or None when it cannot be one."""
    if not isinstance(text, str) or len(text) > 40:
        return None
    code = re.sub(r"[\s\-]", "", text).upper()
    return code if _CODE.match(code) else None


def display_code(code: str) -> str:
    """``ABCDEFGH`` as ``ABCD-EFGH`` (easier to read out and type)."""
    return f"{code[:4]}-{code[4:]}"


def new_key() -> str:
    return secrets.token_urlsafe(KEY_BYTES)


def digest(secret: str) -> str:
    """The SHA-256 of a key or token (hex): what the store keeps instead of the secret itself."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def key_shape(text: object) -> bool:
    """Whether ``text`` could be a key (its length and alphabet): anything else is refused before comparing."""
    return isinstance(text, str) and bool(_KEY.match(text))


def key_matches(key: str, stored_digest: str) -> bool:
    """Whether ``key`` is the room's key: its digest compared with the stored one in constant time."""
    return hmac.compare_digest(digest(key).encode("ascii"), stored_digest.encode("ascii"))


def new_token() -> str:
    return secrets.token_urlsafe(KEY_BYTES)


def token_shape(text: object) -> bool:
    return isinstance(text, str) and bool(_TOKEN.match(text))
