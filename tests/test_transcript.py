"""One attempt as HTML: each attempt read from its own shard, and calls that read as what they are."""
import html

import pytest

from modelrecord.sample import example_tree
from modelrecord.tables import load
from modelrecord.transcript import conversation_html


@pytest.fixture(scope="module")
def tables():
    return load(example_tree(), content=True)


def test_ids_that_repeat_across_shards_open_their_own_shard(tables):
    name = tables.attempts.attempt.value_counts().index[0]
    keys = tables.attempts.index[tables.attempts.attempt == name]
    assert len(keys) > 1
    for key in keys:
        page = conversation_html(tables, key)
        assert f"shard {html.escape(str(tables.attempts.shard[key]))}" in page
        assert page.count('class="mr-turn"') == int((tables.turns.attempt_key == key).sum())


def test_a_lookup_call_and_one_request_read_as_what_they_are(tables):
    "A call that names no action reads as such (not 'requested - · dispatched nothing'); one request is one 'API request'."
    calls = tables.calls
    lookup = calls[calls.requested_action.isna() & calls.dispatched_action.isna()].iloc[0]
    page = conversation_html(tables, int(lookup.attempt_key))
    assert "no action requested or dispatched" in page and "requested <code>-</code>" not in page
    single = calls[calls.requests == 1].iloc[0]
    page = conversation_html(tables, int(single.attempt_key))
    assert "1 API request<" in page or "1 API request " in page
    assert "· 1 API requests" not in page
