"""The console markers read a command's exit status and the guest's boot count whole, however
the console's bytes are split into chunks. Run: python3 -m unittest discover -s lab/tests"""

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from labkit import vm  # noqa: E402


class Markers(unittest.TestCase):
    def test_an_exit_status_is_read_only_once_its_line_has_ended(self):
        marker = vm.exit_marker("1f")
        # The first chunk of "130": read then, it would be status 1 (CI saw "exit status 1,
        # expected 130" from a Ctrl-C'd run that exited 130).
        self.assertIsNone(marker.search(b"out\r\n@@E1f@@ 1"))
        for whole in (b"@@E1f@@ 130\r\n", b"@@E1f@@ 130\n"):
            m = marker.search(b"out\r\n" + whole)
            self.assertEqual(int(m.group(1)), 130)
        self.assertIsNone(marker.search(b"@@E2a@@ 0\r\n"), "another command's marker")

    def test_a_boot_count_is_read_whole(self):
        self.assertIsNone(vm.READY.search(b"@@LAB-READY@@ boot=1"))
        m = vm.READY.search(b"@@LAB-READY@@ boot=12 kernel=6.12.57+deb13-rt-amd64\r\n")
        self.assertEqual(int(m.group(1)), 12)


if __name__ == "__main__":
    unittest.main()
