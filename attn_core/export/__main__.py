"""``python -m attn_core.export``: a page's charts (``--page``), or a lecture deck's files (``--deck``)."""

import sys

from attn_core.export import main
from attn_core.export.deck_files import asks_for_deck
from attn_core.export.deck_files import main as deck_main

argv = sys.argv[1:]
sys.exit(deck_main(argv) if asks_for_deck(argv) else main(argv))
