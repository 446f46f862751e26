#!/usr/bin/env python3
"""Writes the Debian changelog (changelog.Debian) of the rtlab package to stdout.

Usage: changelog.py VERSION COMMIT EPOCH. One entry for the upstream release; the upstream
changes themselves are CHANGELOG.md, installed as /usr/share/doc/rtlab/changelog.gz. The date is
EPOCH (SOURCE_DATE_EPOCH: the commit's time), so a rebuild writes the same file.
"""

import sys
import time

MAINTAINER = "rtlab developers <rtlab@users.noreply.github.com>"


def main(version, commit, epoch):
    date = time.strftime("%a, %d %b %Y %H:%M:%S +0000", time.gmtime(int(epoch)))
    print(f"rtlab ({version}-1) unstable; urgency=medium\n")
    print(f"  * Upstream release {version}, built from commit {commit}.")
    print("    The upstream changes are in /usr/share/doc/rtlab/changelog.gz.\n")
    print(f" -- {MAINTAINER}  {date}")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: changelog.py VERSION COMMIT EPOCH")
    main(*sys.argv[1:])
