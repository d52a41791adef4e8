"""The runtime harness family: parsing, medians with spread, targets."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from canal_bench import runtime  # noqa: E402


def test_parse_output():
    text = "yield_pingpong 85.2 ns/switch\nnoise\nparked_bytes_1000 8192 bytes/task\n"
    assert runtime.parse_output(text) == {"yield_pingpong": 85.2, "parked_bytes_1000": 8192.0}


def test_mode_params_env():
    m = runtime.mode_params("quick", {"CANAL_RB_REPS": "7"})
    assert m.reps == 7 and m.quick
    assert runtime.mode_params("full", {}).parked == 1_000_000


def test_render_targets():
    m = runtime.mode_params("quick", {"CANAL_RB_PARKED": "10"})
    runs = [
        {"canal tasks": {"yield_pingpong": 10.0, "spawn_join": 100.0, "parked_bytes_10": 4096.0},
         "Go": {"yield_pingpong": 50.0, "spawn_join": 400.0, "parked_bytes_10": 2048.0},
         "fcontext": {"fcontext_switch": 6.0}},
        {"canal tasks": {"yield_pingpong": 12.0, "spawn_join": 300.0, "parked_bytes_10": 4096.0},
         "Go": {"yield_pingpong": 60.0, "spawn_join": 400.0, "parked_bytes_10": 2048.0},
         "fcontext": {"fcontext_switch": 6.0}},
    ]
    out = runtime.render(runtime.collect(runs), m)
    assert "task switch <= 2x fcontext" in out
    lines = {line.split("|")[1].strip(): line for line in out.splitlines() if line.startswith("|")}
    assert "met" in lines["task switch <= 2x fcontext"]      # medians 11 / 6
    assert "MISSED" in lines["memory per parked task <= Go"]
    assert "met" in lines["spawn_join <= 0.5x Go"]            # 200 / 400
