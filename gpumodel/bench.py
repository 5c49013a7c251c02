"""``make bench``: widget-callback latency, sweep throughput and import time, written as JSON.

Targets on a quiet 2-core machine: callback p95 <= 25 ms; a 10**6-point sweep <= 0.5 s and
>= 50x the per-point loop's throughput; ``import gpumodel`` <= 0.5 s.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

TARGETS = {"callback_p95_ms": 25.0, "sweep_s": 0.5, "sweep_speedup": 50.0, "import_s": 0.5}


def _callback_stats(exploration, repeats: int = 30) -> dict:
    from .explore import Choice, callback_seconds

    rng = np.random.default_rng(0)
    times = []
    for i in range(repeats):
        values = {}
        for p in exploration.params:
            grid = list(p.grid()) if isinstance(p, Choice) else list(np.arange(p.min, p.max + p.step / 2, p.step))
            values[p.name] = p.default if i == 0 else grid[rng.integers(len(grid))]
        times.append(callback_seconds(exploration, values) * 1e3)
    times = np.array(times[1:])
    return {"name": exploration.name, "p50_ms": float(np.percentile(times, 50)),
            "p95_ms": float(np.percentile(times, 95))}


def _sweep(points: int = 1_000_000, loop_points: int = 2_000) -> dict:
    from . import memory

    rng = np.random.default_rng(0)
    m = rng.integers(1, 8193, points).astype(float)
    k = rng.integers(1, 8193, points).astype(float)
    n = rng.integers(1, 8193, points).astype(float)
    tile = rng.choice([32.0, 64.0, 96.0, 128.0, 256.0], points)
    bandwidth = rng.uniform(300, 8000, points)
    sweep = lambda m, k, n, t, b: memory.matmul_load_seconds(m, k, n, t, b, scheme="output_stationary")
    start = time.perf_counter()
    sweep(m, k, n, tile, bandwidth)
    vectorized = time.perf_counter() - start
    start = time.perf_counter()
    for i in range(loop_points):
        sweep(m[i], k[i], n[i], tile[i], bandwidth[i])
    loop = time.perf_counter() - start
    return {"points": points, "vectorized_s": vectorized, "loop_points": loop_points, "loop_s": loop,
            "speedup": (points / vectorized) / (loop_points / loop)}


def _import_seconds(repeats: int = 5) -> float:
    code = "import time; t = time.perf_counter(); import gpumodel; print(time.perf_counter() - t)"
    runs = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 check=True).stdout) for _ in range(repeats)]
    return float(np.median(runs))


def run() -> dict:
    from .explorations import all_explorations

    result = {"callbacks": [_callback_stats(e) for e in all_explorations()],
              "sweep": _sweep(), "import_s": _import_seconds(), "targets": TARGETS}
    worst = max(c["p95_ms"] for c in result["callbacks"])
    result["meets_targets"] = {
        "callback_p95": worst <= TARGETS["callback_p95_ms"],
        "sweep_time": result["sweep"]["vectorized_s"] <= TARGETS["sweep_s"],
        "sweep_speedup": result["sweep"]["speedup"] >= TARGETS["sweep_speedup"],
        "import": result["import_s"] <= TARGETS["import_s"]}
    return result


def main(argv: list[str]) -> int:
    out = Path(argv[0] if argv else "_build/bench.json")
    result = run()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    for c in result["callbacks"]:
        print(f"callback {c['name']:<24} p50 {c['p50_ms']:6.1f} ms  p95 {c['p95_ms']:6.1f} ms")
    s = result["sweep"]
    print(f"sweep {s['points']:,} points {s['vectorized_s']:.3f} s; loop {s['loop_points']:,} points "
          f"{s['loop_s']:.3f} s; vectorized throughput {s['speedup']:.0f}x the loop's")
    print(f"import gpumodel {result['import_s'] * 1e3:.0f} ms")
    print("targets met:", ", ".join(f"{k}={v}" for k, v in result["meets_targets"].items()))
    print(f"wrote {out}")
    return 0 if all(result["meets_targets"].values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
