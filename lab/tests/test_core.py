"""lab/core.txt's lines against cells whose answer is known: the most exact line decides the
kernels a cell runs on, and a cell named twice for different kernels is refused.
Run: python3 -m unittest discover -s lab/tests"""

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from labkit import core  # noqa: E402
from labkit.errors import LabError  # noqa: E402

LINES = core.parse("""
# comment
tune
tune@4cpu-split amd64   # one boot kept to amd64
campaign-reset amd64,rt-6.12-amd64
campaign-reset:vfat
""")


class CoreLines(unittest.TestCase):
    def test_lines_are_read_with_their_kernels(self):
        self.assertEqual([ln.name for ln in LINES], ["tune", "tune@4cpu-split", "campaign-reset", "campaign-reset:vfat"])
        self.assertEqual(LINES[2].kernels, ("amd64", "rt-6.12-amd64"))

    def test_the_most_exact_line_decides(self):
        k = lambda cell, sc: core.kernels_for(LINES, cell, sc)  # noqa: E731
        self.assertEqual(k("tune", "tune"), ())
        self.assertEqual(k("tune@isolated", "tune"), ())
        self.assertEqual(k("tune@4cpu-split", "tune"), ("amd64",))
        self.assertEqual(k("campaign-reset:ext2", "campaign-reset"), ("amd64", "rt-6.12-amd64"))
        self.assertEqual(k("campaign-reset:vfat", "campaign-reset"), ())
        self.assertIsNone(k("explain", "explain"))

    def test_a_kernel_is_matched_by_name_or_tag(self):
        self.assertTrue(core.runs_on((), ["rt", "arm64"], "rt-6.12-arm64"))
        self.assertTrue(core.runs_on(("amd64",), ["rt", "amd64"], "rt-6.12-amd64"))
        self.assertFalse(core.runs_on(("amd64",), ["rt", "arm64"], "rt-6.12-arm64"))
        self.assertTrue(core.runs_on(("rt-6.12-arm64",), ["rt", "arm64"], "rt-6.12-arm64"))

    def test_a_cell_named_twice_for_different_kernels_is_refused(self):
        lines = core.parse("tune@isolated amd64\ntune@isolated arm64\n")
        with self.assertRaises(LabError):
            core.kernels_for(lines, "tune@isolated", "tune")


if __name__ == "__main__":
    unittest.main()
