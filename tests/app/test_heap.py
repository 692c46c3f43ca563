"""ui.freeze_heap: the server's long-lived objects leave the reach of full garbage collections."""

import gc

import ui


def test_freezing_leaves_only_later_objects_to_the_collector():
    """After the freeze a full collection walks only what was made after it: the imported modules (torch,
    plotly, pandas, the engine, Streamlit) are most of a server's objects, and each full collection walked them."""
    before = len(gc.get_objects())
    try:
        ui.freeze_heap()
        assert gc.get_freeze_count() >= before // 2
        made = [[i] for i in range(1000)]  # objects made later stay collectable
        after = len(gc.get_objects())
        assert after < before // 10 and after >= len(made)
    finally:
        gc.unfreeze()
    assert len(gc.get_objects()) >= before // 2
