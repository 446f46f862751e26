//! Plans read and refused: defaults inherited, repeats, reboot tests, and errors that name
//! the line and the key.

use super::*;

const GOOD: &str = r#"
name = "van-vs-rt"
budget = "150us"
rt_cpus = "1"
reboot_command = "true"

[[phase]]
name = "Van-#1"
duration = "8h"

[[phase]]
name = "RT-#2-busy"
duration = "2s"
load = "cpu:60%"
tuned = true
repeat = 2
budget = "50us"
reboot_after = true

[[phase]]
name = "reboots"
reboots = 3
audit = true
"#;

#[test]
fn a_plan_reads_with_its_defaults_and_steps() {
    let plan = Plan::parse(GOOD, "plan.toml").unwrap();
    assert_eq!(plan.name, "van-vs-rt");
    assert_eq!(plan.budget, Nanos::from_us(150));
    let PhaseKind::Measure(m) = &plan.phases[1].kind else {
        panic!("a measuring phase")
    };
    assert_eq!(m.budget, Nanos::from_us(50));
    assert_eq!(m.repeat, 2);
    assert!(m.tuned);
    let PhaseKind::Measure(first) = &plan.phases[0].kind else {
        panic!("a measuring phase")
    };
    assert_eq!(first.budget, Nanos::from_us(150));
    let steps = plan.steps();
    let labels: Vec<&str> = steps.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(
        labels,
        ["Van-#1", "RT-#2-busy#1", "RT-#2-busy#2", "reboots"]
    );
    let reboots: Vec<bool> = steps.iter().map(|s| s.reboot_after).collect();
    assert_eq!(reboots, [false, false, true, false]);
    assert_eq!(
        plan.phases[2].kind,
        PhaseKind::RebootTest {
            reboots: 3,
            audit: true
        }
    );
}

fn refused(text: &str) -> String {
    Plan::parse(text, "p.toml").unwrap_err().0
}

#[test]
fn bad_plans_are_refused_with_file_line_and_key() {
    let e = refused("[[phase]]\nname = \"a\"\nduration = \"1s\"\nloda = \"cpu\"\n");
    assert!(e.starts_with("p.toml: line 4"), "{e}");
    assert!(e.contains("loda"), "{e}");
    let e = refused("[[phase]]\nname = \"a\"\nduration = \"8 parsecs\"\n");
    assert!(e.starts_with("p.toml: line 3: phase 1: duration:"), "{e}");
    let e = refused("[[phase]]\nname = \"a\"\nduration = \"1s\"\nload = \"cpu:160%\"\n");
    assert!(e.starts_with("p.toml: line 4: phase 1: load:"), "{e}");
    let e = refused("");
    assert!(e.contains("no phase"), "{e}");
    let e = refused("[[phase]]\nname = \"a\"\nduration = \"1s\"\ntuned = true\n");
    assert!(e.contains("rt_cpus"), "{e}");
    let e = refused(
        "[[phase]]\nname = \"a\"\nduration = \"1s\"\n[[phase]]\nname = \"a\"\nduration = \"1s\"\n",
    );
    assert!(e.contains("line 5: phase 2: name"), "{e}");
    let e = refused("[[phase]]\nname = \"a\"\nreboots = 2\nduration = \"1s\"\n");
    assert!(e.contains("duration: a reboot test"), "{e}");
    let e = refused("[[phase]]\nname = \"a\"\nduration = \"1s\"\nrepeat = 0\n");
    assert!(e.contains("repeat: 0 is outside"), "{e}");
    let e = refused("[[phase]]\nname = \"a\"\nduration = \"500ms\"\n");
    assert!(e.contains("outside 1s"), "{e}");
    let e = refused("budget = \"1s\"\n[[phase]]\nduration = \"1s\"\n");
    assert!(e.contains("name: missing"), "{e}");
    let many = "[[phase]]\nname = \"x\"\nduration = \"1s\"\n".repeat(MAX_PHASES + 1);
    assert!(refused(&many).contains("more than the 256"));
    let e = refused(
        "[[phase]]\nname = \"a\"\nduration = \"1s\"\nrepeat = 2\n[[phase]]\nname = \"a#2\"\nduration = \"1s\"\n",
    );
    assert!(e.contains("label \"a#2\" is another phase's too"), "{e}");
    let e = refused("[[phase]]\nname = \"a\"\nduration = \"1s\"\nload = \"cpu:10%\\nx\"\n");
    assert!(!e.contains('\n'), "{e}");
    let e = refused("bogus = 1\n[[phase]]\nname = \"a\"\nduration = \"1s\"\n");
    assert!(e.starts_with("p.toml: line 1"), "{e}");
}
