"""Overview maps head each group with its leaf switches as ranges (``leafs 8-15``), so at
80 columns the header is never cut mid-number and the map does not scroll sideways."""

from __future__ import annotations

from fabricui.tui.app import settle
from fabricui.tui.widgets.topology_map import TopologyMap, index_runs


def test_consecutive_indexes_read_as_ranges():
    """Runs become ``a-b``; single indexes stay; more than eight parts end with ``...``."""
    assert index_runs(list(range(8, 16))) == "8-15"
    assert index_runs([0, 2, 4, 5, 6]) == "0 2 4-6"
    assert index_runs([3]) == "3" and index_runs([]) == ""
    assert index_runs(list(range(0, 40, 2))) == "0 2 4 6 8 10 12 14 ..."


async def test_group_headers_fit_the_80_column_map(app_factory):
    """1,024 GPUs on 32 leafs: the second group reads 'n32-n63 · leafs 8-15' and no
    line of the map is wider than the map."""
    app = app_factory(topology="h100-ib-cluster", nodes=128)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        topology_map = app.screen.query_one(TopologyMap)
        text = topology_map.render_text()
        assert "n32-n63 · leafs 8-15" in text.splitlines()
        assert topology_map.virtual_size.width <= topology_map.scrollable_content_region.width
