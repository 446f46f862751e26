#!/usr/bin/env python3
"""The size report of packaging/dist, and its checks of each binary.

For every `rtlab-ARCH` file given: it is an ELF executable for ARCH (class and machine), it is
statically linked (no PT_INTERP: no dynamic loader, so no C library is needed on the board),
it carries no symbol table (stripped), and it is at most LIMIT bytes. Prints one line per
binary with the room it leaves under LIMIT (a warning when less than ROOM); exits 1 naming the
first binary that fails a check.
"""

import os
import struct
import sys

LIMIT = 8 * 1024 * 1024  # 8 MiB, stripped (issue #15)
# The room a board binary keeps under the limit for what comes next (issue #42); less is said
# (a warning line), not refused: the limit is the budget, the room what is left of it.
ROOM = 1024 * 1024
# e_machine and ELF class each architecture must have.
EXPECTED = {"x86_64": (62, 2), "aarch64": (183, 2), "armv7": (40, 1)}
PT_INTERP = 3
SHT_SYMTAB = 2


def inspect(path):
    """(machine, class, static, stripped) of the ELF file at `path`."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF":
        raise ValueError("not an ELF file")
    cls, endian = data[4], data[5]
    if endian != 1:
        raise ValueError("not little-endian")
    if cls == 2:
        e_machine, = struct.unpack_from("<H", data, 18)
        e_phoff, e_shoff = struct.unpack_from("<QQ", data, 32)
        e_phentsize, e_phnum, e_shentsize, e_shnum = struct.unpack_from("<HHHH", data, 54)
    elif cls == 1:
        e_machine, = struct.unpack_from("<H", data, 18)
        e_phoff, e_shoff = struct.unpack_from("<II", data, 28)
        e_phentsize, e_phnum, e_shentsize, e_shnum = struct.unpack_from("<HHHH", data, 42)
    else:
        raise ValueError(f"unknown ELF class {cls}")
    static = True
    for i in range(e_phnum):
        p_type, = struct.unpack_from("<I", data, e_phoff + i * e_phentsize)
        if p_type == PT_INTERP:
            static = False
    stripped = True
    for i in range(e_shnum):
        sh_type, = struct.unpack_from("<I", data, e_shoff + i * e_shentsize + 4)
        if sh_type == SHT_SYMTAB:
            stripped = False
    return e_machine, cls, static, stripped


def main(paths):
    bad = None
    print(f"{'binary':<16} {'bytes':>10} {'MiB':>6} {'room':>9}  linkage  stripped  limit {LIMIT} bytes")
    for path in paths:
        name = os.path.basename(path)
        arch = name.removeprefix("rtlab-")
        size = os.path.getsize(path)
        try:
            machine, cls, static, stripped = inspect(path)
        except (ValueError, struct.error) as e:
            print(f"{name}: unreadable ELF ({e})", file=sys.stderr)
            return 1
        room = LIMIT - size
        print(f"{name:<16} {size:>10} {size / 2**20:>6.2f} {room:>9}  "
              f"{'static' if static else 'DYNAMIC':<7}  {'yes' if stripped else 'NO':<8}  "
              f"{'ok' if size <= LIMIT else 'OVER'}")
        if EXPECTED.get(arch) != (machine, cls):
            bad = bad or f"{name}: ELF machine {machine} class {cls} is not {arch}'s"
        elif not static:
            bad = bad or f"{name}: dynamically linked (has a program interpreter)"
        elif not stripped:
            bad = bad or f"{name}: not stripped (has a symbol table)"
        elif size > LIMIT:
            bad = bad or f"{name}: {size} bytes, over the {LIMIT}-byte limit"
        if 0 <= room < ROOM:
            print(f"elfcheck: warning: {name} leaves {room} bytes under the {LIMIT}-byte limit, "
                  f"less than the {ROOM} bytes of room boards keep for what comes next "
                  f"(docs/decisions/0033)", file=sys.stderr)
    if bad:
        print(f"elfcheck: {bad}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
