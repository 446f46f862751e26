"""lab/core.txt, the set CI runs: a line per scenario, boot (`NAME@BOOT`) or disk
(`NAME:DISK`), optionally followed by the kernels (names or tags) it runs on there. A cell takes
the line that names it most exactly: `tune@4cpu-split amd64` keeps that boot to the amd64
kernels while a plain `tune` line runs the scenario's other boots on every core kernel."""

from dataclasses import dataclass

from .errors import LabError


@dataclass(frozen=True)
class Line:
    """One entry: what it names and the kernels it keeps it to (empty: every core kernel)."""

    name: str
    kernels: tuple[str, ...]


def parse(text: str) -> list[Line]:
    """The entries of core.txt (comments after `#`, blank lines skipped)."""
    out = []
    for raw in text.splitlines():
        words = raw.split("#")[0].split()
        if not words:
            continue
        kernels = tuple(k for w in words[1:] for k in w.split(",") if k)
        out.append(Line(words[0], kernels))
    return out


def exactness(line: str, cell: str, scenario: str) -> int:
    """How exactly `line` names the cell: 2 the cell itself, 1 its scenario (or the scenario
    under that boot, every disk), 0 not at all."""
    if line == cell:
        return 2
    if line == cell.split(":")[0] or line == scenario:
        return 1
    return 0


def kernels_for(lines: list[Line], cell: str, scenario: str) -> tuple[str, ...] | None:
    """The kernels the most exact line naming the cell keeps it to (empty: all); `None` when no
    line names it."""
    best, kept = 0, None
    for ln in lines:
        e = exactness(ln.name, cell, scenario)
        if e > best:
            best, kept = e, ln.kernels
        elif e == best and e > 0 and kept is not None and ln.kernels != kept:
            raise LabError(f"lab/core.txt names {cell} twice, for different kernels")
    return kept


def runs_on(kernels: tuple[str, ...], tags: list[str], name: str) -> bool:
    """Whether a cell kept to `kernels` runs on the kernel `name` tagged `tags`."""
    return not kernels or any(k == name or k in tags for k in kernels)
