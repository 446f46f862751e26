"""What a step expects of an output, judging it, and proving each check could have failed.

An output is what the step printed, or a file the step left in the guest (`[step.file."PATH"]`,
fetched after the step). Each output may declare:

  contains = [...]        strings it must hold
  lacks = [...]           strings it must not hold
  matches = [...]         regular expressions (multi-line) it must match
  json = { "a.b" = v }    the output is one JSON document; some value at the dotted path equals v
                          exactly (a string, number or boolean; `*` stands for any key or
                          element, a number for an element)
  json_nonempty = [...]   dotted paths where some value is present and not null, "", [] or {}

A check that passes is then tried on the output made wrong for it ([`cannot_fail`]): the value at
its path changed or removed, its string or its match taken out, the string it must lack put in.
A check that still passes could not have failed and fails the step, so a pattern that matches
anything, or an expectation met by every document of a kind (`"engine": *"kernel"\\|hwlat`
against every `rtlab.hwlat/1` result), cannot pass unseen.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from .errors import LabError

KEYS = {"contains", "lacks", "matches", "json", "json_nonempty"}
Scalar = str | int | float | bool


@dataclass
class Expect:
    """The checks of one output."""

    contains: list[str] = field(default_factory=list)
    lacks: list[str] = field(default_factory=list)
    matches: list[str] = field(default_factory=list)
    json: dict[str, Scalar] = field(default_factory=dict)
    json_nonempty: list[str] = field(default_factory=list)

    def empty(self) -> bool:
        return not (self.contains or self.lacks or self.matches or self.json or self.json_nonempty)

    def filled(self, fill: Callable[[str], str]) -> "Expect":
        """The checks with `fill` applied to every string ({rt} and {hk})."""
        value = lambda v: fill(v) if isinstance(v, str) else v  # noqa: E731
        return Expect([fill(s) for s in self.contains], [fill(s) for s in self.lacks],
                      [fill(s) for s in self.matches], {fill(k): value(v) for k, v in self.json.items()},
                      [fill(s) for s in self.json_nonempty])  # fmt: skip


def parse(raw: dict, where: str) -> Expect:
    """The checks among `raw`'s keys (other keys are the caller's), each checked."""
    for key in ("contains", "lacks", "matches", "json_nonempty"):
        items = raw.get(key, [])
        if not isinstance(items, list) or not all(isinstance(s, str) and s for s in items):
            raise LabError(f"{where}: '{key}' is a list of non-empty strings")
    for pattern in raw.get("matches", []):
        try:
            re.compile(pattern, re.M)
        except re.error as e:
            raise LabError(f"{where}: matches '{pattern}': {e}") from None
        if re.search(pattern, "", re.M):
            raise LabError(f"{where}: matches '{pattern}' matches an empty output: it cannot fail")
    checks = raw.get("json", {})
    if not isinstance(checks, dict) or not all(
        isinstance(v, (str, int, float, bool)) and _path_ok(k) for k, v in checks.items()
    ):
        raise LabError(f"{where}: 'json' is a table of dotted paths to strings, numbers or booleans")
    for path in raw.get("json_nonempty", []):
        if not _path_ok(path):
            raise LabError(f"{where}: json_nonempty '{path}' is not a dotted path")
    return Expect(list(raw.get("contains", [])), list(raw.get("lacks", [])), list(raw.get("matches", [])),
                  dict(checks), list(raw.get("json_nonempty", [])))  # fmt: skip


def _path_ok(path: str) -> bool:
    return isinstance(path, str) and all(seg for seg in path.split("."))


def resolve(doc: Any, path: str) -> list[Any]:
    """Every value at the dotted `path` of `doc` (`*`: every key or element)."""
    found = [doc]
    for seg in path.split("."):
        nxt: list[Any] = []
        for x in found:
            if seg == "*":
                nxt.extend(x.values() if isinstance(x, dict) else x if isinstance(x, list) else [])
            elif isinstance(x, dict) and seg in x:
                nxt.append(x[seg])
            elif isinstance(x, list) and seg.isdigit() and int(seg) < len(x):
                nxt.append(x[int(seg)])
        found = nxt
    return found


def _same(a: Any, b: Scalar) -> bool:
    """Equal and of one kind: `true` is not 1, 1 is 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def _nonempty(v: Any) -> bool:
    return v is not None and v != "" and v != [] and v != {}


def judge(e: Expect, text: str, what: str) -> str | None:
    """Why `text` (the output called `what`) fails `e`, or None."""
    for s in e.contains:
        if s not in text:
            return f"{what} lacks '{s}'"
    for s in e.lacks:
        if s in text:
            return f"{what} has '{s}'"
    for p in e.matches:
        if not re.search(p, text, re.M):
            return f"{what} does not match /{p}/"
    if e.json or e.json_nonempty:
        try:
            doc = json.loads(text)
        except ValueError as err:
            return f"{what} is not one JSON document ({err})"
        for path, want in e.json.items():
            got = resolve(doc, path)
            if not any(_same(v, want) for v in got):
                seen = ", ".join(json.dumps(v)[:60] for v in got[:4]) or "nothing"
                return f"{what}: {path} is {seen}, expected {json.dumps(want)}"
        for path in e.json_nonempty:
            if not any(_nonempty(v) for v in resolve(doc, path)):
                return f"{what}: nothing at {path}"
    return None


def _rewrite(doc: Any, path: str, change: Callable[[Any], Any]) -> None:
    """Applies `change` to every value at `path` of `doc` in place (`change` returning the
    sentinel `_GONE` removes it)."""
    segs = path.split(".")
    parents = [doc]
    for seg in segs[:-1]:
        parents = [v for p in parents for v in resolve(p, seg)]
    last = segs[-1]
    for p in parents:
        if isinstance(p, dict):
            keys = list(p) if last == "*" else [last] if last in p else []
        elif isinstance(p, list):
            keys = list(range(len(p))) if last == "*" else [int(last)] if last.isdigit() and int(last) < len(p) else []
        else:
            keys = []
        for k in reversed(keys):
            new = change(p[k])
            if new is _GONE:
                del p[k]
            else:
                p[k] = new


_GONE = object()


def _other(v: Any) -> Any:
    """A value of the same kind that differs from `v`."""
    if isinstance(v, bool):
        return not v
    if isinstance(v, (int, float)):
        return v + 1
    if isinstance(v, str):
        return v + "-wrong"
    return "wrong"


def _emptied(v: Any) -> Any:
    return {} if isinstance(v, dict) else [] if isinstance(v, list) else "" if isinstance(v, str) else None


def _taken_out(remove: Callable[[str], str], text: str) -> str:
    """`remove` applied until the text stops changing (taking "ab" out of "aabb" leaves "ab")."""
    while (shorter := remove(text)) != text:
        text = shorter
    return text


def mutants(e: Expect, text: str) -> Iterator[tuple[Expect, str, str]]:
    """For each check of `e`: the check alone, the output made wrong for it, and how."""
    for s in e.contains:
        yield Expect(contains=[s]), _taken_out(lambda t, s=s: t.replace(s, ""), text), f"'{s}' taken out"
    for s in e.lacks:
        yield Expect(lacks=[s]), text + "\n" + s, f"'{s}' put in"
    for p in e.matches:
        out = _taken_out(lambda t, p=p: re.sub(p, "", t, flags=re.M), text)
        yield Expect(matches=[p]), out, f"every match of /{p}/ taken out"
    if not (e.json or e.json_nonempty):
        return
    try:
        doc = json.loads(text)
    except ValueError:
        return
    for path, want in e.json.items():
        for how, change in (("changed", _other), ("removed", lambda _v: _GONE)):
            wrong = copy.deepcopy(doc)
            _rewrite(wrong, path, lambda v, c=change: c(v) if _same(v, want) else v)
            yield Expect(json={path: want}), json.dumps(wrong), f"{path} {how}"
    for path in e.json_nonempty:
        wrong = copy.deepcopy(doc)
        _rewrite(wrong, path, _emptied)
        yield Expect(json_nonempty=[path]), json.dumps(wrong), f"{path} emptied"


def cannot_fail(e: Expect, text: str, what: str) -> str | None:
    """For an output that passed `e`: the first check that also passes on the output made wrong
    for it, said as why the step fails; None when every check fails on its wrong output."""
    for alone, wrong, how in mutants(e, text):
        if judge(alone, wrong, what) is None:
            return f"a check of {what} cannot fail: {_describe(alone)} still holds with {how}"
    return None


def _describe(e: Expect) -> str:
    for key in ("contains", "lacks", "matches", "json_nonempty"):
        if getattr(e, key):
            return f"{key} '{getattr(e, key)[0]}'"
    path, want = next(iter(e.json.items()))
    return f"json {path} = {json.dumps(want)}"
