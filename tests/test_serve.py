"""`serve` refuses what it cannot serve before anything starts (the served page itself: tests/test_explore_browser.py)."""
import socket

from modelrecord.sample import example_tree
from modelrecord.serve import serve


def test_a_busy_port_is_refused_before_anything_starts(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        assert serve(example_tree(), port=taken.getsockname()[1]) == 1
    assert "is in use" in capsys.readouterr().err
