"""Live lecture rooms: students follow the lecturer's slide and answer the slides' questions, across workers.

No Streamlit here (the app's ``ui/rooms.py`` draws it; ``server.py`` mounts :mod:`rooms.web`):

- :mod:`rooms.settings`: where the store is and how long rooms live (``ATTN_STORE``, ``ATTN_DATA_DIR``, ``ATTN_ROOM_IDLE_S``);
- :mod:`rooms.codes`: room codes, lecturer keys, browser tokens (made, checked, compared in constant time);
- :mod:`rooms.store`: the store every worker shares: SQLite in WAL mode (one file), :mod:`rooms.redis_store`: Redis;
- :mod:`rooms.service`: what a lecturer and a student may do, every input checked, rate limits and bounds;
- :mod:`rooms.web`: the HTTP endpoint a student's page long-polls for the lecturer's moves, the browser cookie.

What is stored (README, "Live lecture rooms"): per room its code, a hash of its key, the deck, the lecturer's slide
and view, each question's state and, per question, one answer per browser keyed by a hash of a random browser token;
per browser the time it last waited on a room. Nothing that names a person. A room goes after its idle time.
"""

from rooms.codes import display_code
from rooms.service import Position, Refused, Rooms, RoomView, current
from rooms.settings import Settings

__all__ = ["Position", "Refused", "RoomView", "Rooms", "Settings", "current", "display_code"]
