"""The lab's checks against answers known to be right and known to be wrong: each kind of check
fails on a wrong answer, and a check that could not have failed is refused (when the scenario is
read, or when a step passes). Run: python3 -m unittest discover -s lab/tests"""

import json
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from labkit import checks, scenario  # noqa: E402
from labkit.errors import LabError  # noqa: E402

# An rtlab.hwlat/1 result measured by the user-space engine: the wrong answer the measure
# scenario's old grep (`"engine": *"kernel"\|hwlat`) let through.
USER_HWLAT = json.dumps({"schema": "rtlab.hwlat/1", "engine": "user", "cpus": "1", "samples": []})
KERNEL_HWLAT = json.dumps({"schema": "rtlab.hwlat/1", "engine": "kernel", "cpus": "1", "samples": [{"ns": 5}]})
MEASURE = json.dumps({
    "schema": "rtlab.measure/1",
    "params": {"cpus": "1,3", "engine": "user"},
    "warnings": [{"code": "isolated-rt-cpus"}, {"code": "not-preempt-rt"}],
    "cpus": [{"cpu": 1, "stats": {"count": 10}}, {"cpu": 3, "stats": {"count": 0}}],
    "preempt_rt": False,
})


def parse(**raw):
    return checks.parse(raw, "test")


class Judging(unittest.TestCase):
    def test_json_equality_tells_the_kernel_engine_from_the_user_one(self):
        e = parse(json={"engine": "kernel"})
        self.assertIsNone(checks.judge(e, KERNEL_HWLAT, "h.json"))
        self.assertIn('engine is "user", expected "kernel"', checks.judge(e, USER_HWLAT, "h.json"))
        # The old pattern accepts both: a regular expression over JSON cannot tell them apart.
        old = parse(matches=['"engine": *"kernel"|hwlat'])
        self.assertIsNone(checks.judge(old, USER_HWLAT, "h.json"))

    def test_paths_walk_keys_elements_and_wildcards(self):
        doc = json.loads(MEASURE)
        self.assertEqual(checks.resolve(doc, "params.cpus"), ["1,3"])
        self.assertEqual(checks.resolve(doc, "cpus.1.cpu"), [3])
        self.assertEqual(checks.resolve(doc, "warnings.*.code"), ["isolated-rt-cpus", "not-preempt-rt"])
        self.assertEqual(checks.resolve(doc, "params.nothing.here"), [])
        self.assertIsNone(checks.judge(parse(json={"warnings.*.code": "isolated-rt-cpus"}), MEASURE, "m"))
        self.assertIsNotNone(checks.judge(parse(json={"warnings.*.code": "tuned-rt-cpus"}), MEASURE, "m"))

    def test_values_compare_by_kind(self):
        self.assertIsNone(checks.judge(parse(json={"preempt_rt": False}), MEASURE, "m"))
        self.assertIsNotNone(checks.judge(parse(json={"preempt_rt": 0}), MEASURE, "m"))
        self.assertIsNotNone(checks.judge(parse(json={"cpus.0.cpu": "1"}), MEASURE, "m"))
        self.assertIsNone(checks.judge(parse(json={"cpus.0.cpu": 1}), MEASURE, "m"))

    def test_nonempty_needs_a_value_with_content(self):
        self.assertIsNone(checks.judge(parse(json_nonempty=["samples"]), KERNEL_HWLAT, "h"))
        self.assertIn("nothing at samples", checks.judge(parse(json_nonempty=["samples"]), USER_HWLAT, "h"))
        self.assertIsNone(checks.judge(parse(json_nonempty=["cpus.*.stats.count"]), MEASURE, "m"))

    def test_a_truncated_document_fails(self):
        why = checks.judge(parse(json={"engine": "kernel"}), KERNEL_HWLAT[:-5], "h.json")
        self.assertIn("not one JSON document", why)

    def test_text_checks(self):
        text = "verdict: PASS: max 20 us\n"
        self.assertIsNone(checks.judge(parse(contains=["PASS"], lacks=["FAIL"], matches=[r"^verdict: PASS"]), text, "o"))
        self.assertIn("lacks 'FAIL'", checks.judge(parse(contains=["FAIL"]), text, "o"))
        self.assertIn("has 'PASS'", checks.judge(parse(lacks=["PASS"]), text, "o"))
        self.assertIn("does not match", checks.judge(parse(matches=[r"^FAIL"]), text, "o"))


class CannotFail(unittest.TestCase):
    def test_every_check_fails_on_its_wrong_output(self):
        e = parse(json={"params.cpus": "1,3", "warnings.*.code": "isolated-rt-cpus"},
                  json_nonempty=["cpus.*.stats"], contains=["isolated"], matches=[r'"count": *10'],
                  lacks=["tuned-rt-cpus"])  # fmt: skip
        self.assertIsNone(checks.judge(e, MEASURE, "m"))
        self.assertIsNone(checks.cannot_fail(e, MEASURE, "m"))
        # Each wrong output is rejected by its own check, and every check has some.
        kinds = [how for _alone, _wrong, how in checks.mutants(e, MEASURE)]
        self.assertEqual(len(kinds), 1 + 1 + 1 + 2 * 2 + 1)
        for alone, wrong, how in checks.mutants(e, MEASURE):
            self.assertIsNotNone(checks.judge(alone, wrong, "m"), how)

    def test_a_check_that_passes_on_its_wrong_output_fails_the_step(self):
        # A pattern that matches the empty text (refused when a scenario is read; here built
        # directly) still matches once its match is taken out.
        vacuous = checks.Expect(matches=["x?y?"])
        self.assertIsNone(checks.judge(vacuous, "xy", "o"))
        self.assertIn("cannot fail: matches 'x?y?' still holds with every match", checks.cannot_fail(vacuous, "xy", "o"))
        step = scenario.Step("run", "true", "s", 10, [0], vacuous)
        self.assertIn("cannot fail", scenario._judge(step, 0, "xy", {}))
        # Taking a string out until it is gone: "aabb" less "ab" is "ab", then nothing.
        self.assertIsNone(checks.cannot_fail(checks.Expect(contains=["ab"]), "aabb", "o"))
        self.assertIsNone(checks.cannot_fail(checks.Expect(matches=["a+b"]), "aabb", "o"))

    def test_patterns_that_match_nothing_at_all_are_refused_when_read(self):
        for pattern in (".*", "x?", "^", "(a|)"):
            with self.assertRaises(LabError, msg=pattern):
                parse(matches=[pattern])
        with self.assertRaises(LabError):
            parse(contains=[""])
        with self.assertRaises(LabError):
            parse(json={"a..b": 1})
        with self.assertRaises(LabError):
            parse(json={"a": [1]})


class Scenarios(unittest.TestCase):
    def test_every_scenario_reads_and_checks_some_outcome_in_each_run_step(self):
        here = Path(__file__).resolve().parents[1]
        for path in sorted((here / "scenarios").glob("*.toml")):
            sc = scenario.load(path)
            for i, step in enumerate(sc.steps):
                if step.kind == "run":
                    # A step declares its exit status at least (0 by default); one that lets
                    # every status through must check its output or files.
                    self.assertTrue(step.exit is not None or not step.out.empty() or step.files,
                                    f"{path.name} step {i + 1}")  # fmt: skip

    def test_a_step_key_written_under_a_file_table_is_named(self):
        # TOML puts `timeout` after `[step.file."..."]` into the file's table.
        raw = {"run": "true", "file": {"/tmp/r.json": {"json": {"status": "complete"}, "timeout": "9s"}}}
        with self.assertRaisesRegex(LabError, r"unknown key\(s\) \['timeout'\].*before its file tables"):
            scenario._step(raw, "t")
        with self.assertRaisesRegex(LabError, "no checks"):
            scenario._step({"run": "true", "file": {"/tmp/r.json": {}}}, "t")
        with self.assertRaisesRegex(LabError, "only a run step"):
            scenario._step({"reset": True, "file": {"/tmp/r.json": {"contains": ["x"]}}}, "t")

    def test_a_step_fails_on_a_missing_file_and_on_a_wrong_one(self):
        step = scenario._step({"run": "true", "file": {"/tmp/h.json": {"json": {"engine": "kernel"}}}}, "t")
        self.assertIsNone(scenario._judge(step, 0, "", {"/tmp/h.json": KERNEL_HWLAT}))
        self.assertIn("not written", scenario._judge(step, 0, "", {"/tmp/h.json": None}))
        self.assertIn('expected "kernel"', scenario._judge(step, 0, "", {"/tmp/h.json": USER_HWLAT}))
        self.assertIn("exit status 1, expected 0", scenario._judge(step, 1, "", {"/tmp/h.json": KERNEL_HWLAT}))
        either = scenario._step({"run": "true", "exit": [0, 1]}, "t")
        self.assertIsNone(scenario._judge(either, 1, "", {}))
        self.assertIn("expected 0 or 1", scenario._judge(either, 2, "", {}))
        for bad in ([], [True], [256], "0"):
            with self.assertRaises(LabError):
                scenario._step({"run": "true", "exit": bad}, "t")


if __name__ == "__main__":
    unittest.main()
