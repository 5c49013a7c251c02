"""Seed-audit rows of the chapter on the brain estimate ("The Brain vs Deep Learning Part I", 2015)."""
from __future__ import annotations

from .. import brain
from . import SeedRow

SRC = 'Dettmers 2015, "The Brain vs Deep Learning Part I: Computational Complexity"'
#: The post's starting point: Tianhe-2's HPCG result (the first row of data/top500.csv's HPCG
#: records, 0.58 PFLOP/s, sourced to the post), in the post's year.
START_FLOPS, BASE_YEAR = brain.records("hpcg")[0]["flops"], 2015.0


def _year(period: float) -> float:
    return float(brain.year_reached(START_FLOPS, brain.estimate(), period, BASE_YEAR))


ROWS = [
    SeedRow("brain.flops", "1.075e21", lambda: brain.estimate(), "FLOP/s", SRC,
            note="Reconstructed, so it agrees by construction: the post's formula was an image and is "
                 "lost, and the reading was chosen because it lands on the post's number. Every input synapse of the "
                 "cerebellum, granule (50e9 x 15) and Purkinje (1e8 x 100,000), passes through the Purkinje "
                 "dendritic filter (10 x 1000 x 5) at 5 time steps per action potential, 200 action "
                 "potentials per second, 2 FLOP per multiply-add. Each cell with its own filter, and the soma "
                 f"and output stages counted, gives {brain.estimate('self-consistent'):.4g}.",
            note_if_differs="The reconstruction no longer reproduces the post's number.",
            reconstructed=True),
    SeedRow("brain.doublings", "21", lambda: brain.doublings(START_FLOPS, brain.estimate()), "doublings", SRC,
            note=f"log2(1.075e21 / 0.58e15) = {float(brain.doublings(START_FLOPS, brain.estimate(), whole=False)):.2f}, "
                 "rounded up to whole doubling periods.",
            note_if_differs="Whole doubling periods from 0.58 PFLOP/s to the estimate."),
    SeedRow("brain.year_1y", "2037", lambda: _year(1.0), "year", SRC,
            note="21 doublings of one year.",
            note_if_differs="21 one-year doublings from 2015, the post's year, reach 2036; the post's 2037 needs "
                            "a start in 2016 (or counting from the end of 2015). The 1.8- and 3-year rows "
                            "reproduce from 2015."),
    SeedRow("brain.year_1_8y", "2053", lambda: _year(1.8), "year", SRC,
            note="2015 + 21 x 1.8 = 2052.8, which the post rounds to 2053.",
            note_if_differs="2015 + 21 x 1.8."),
    SeedRow("brain.year_3y", "2078", lambda: _year(3.0), "year", SRC,
            note="2015 + 21 x 3.", note_if_differs="2015 + 21 x 3."),
]
