"""remote.py: parsing remote_pingpong's lines."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from canal_bench import remote  # noqa: E402


def test_parse_lines_and_ignore_the_rest():
    out = remote.parse("# remote_pingpong: 8 B, driver tcp\n"
                       "bare tcp     rtt_us 6.34 [6.12-4040.08] msgs_per_s 868620\n"
                       "bare tcp poll rtt_us 5.10 [5.00-90.00] msgs_per_s 0\n"
                       "engine       rtt_us 6.46 [5.76-20055.13] msgs_per_s 0\n"
                       "remote       rtt_us 29.61 [18.00-1547.13] msgs_per_s 10999794\n"
                       "remote rtt_us garbage\n")
    assert out == {"bare tcp": (6.34, 868620.0), "bare tcp poll": (5.1, 0.0),
                   "engine": (6.46, 0.0),
                   "remote": (29.61, 10999794.0)}


def test_parse_nothing():
    assert remote.parse("") == {}
    assert remote.parse("remote rtt_us 1 msgs_per_s 2\n") == {}


def test_parse_osu8():
    assert remote.parse_osu8("# Size  Latency (us)\n1  3.0\n8                      38.48\n") == 38.48
    assert remote.parse_osu8("# Size  Latency (us)\n16  3.0\n") == 0.0


def test_best_bare_is_the_faster():
    rtt = {("tcp", "bare tcp"): [80.0, 70.0, 90.0], ("tcp", "bare tcp poll"): [6.0, 7.0, 6.5],
           ("shm", "engine"): [0.5]}
    assert remote.best_bare(rtt) == ("bare TCP, polling", [6.0, 7.0, 6.5])
    rtt[("tcp", "bare tcp")] = [5.0, 5.5, 5.2]
    assert remote.best_bare(rtt) == ("bare TCP", [5.0, 5.5, 5.2])
    del rtt[("tcp", "bare tcp")]
    assert remote.best_bare(rtt)[0] == "bare TCP, polling"
    assert remote.best_bare({}) == ("", [])
