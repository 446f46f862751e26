//! toml's parse errors as one line, for the TOML files rtlab reads (task sets, campaign plans):
//! the file, where (line and column) and what, as every refusal of outside input reads.

/// toml's multi-line error text (the location, the line quoted, a caret, the message) as one
/// line: `SOURCE: line L column C: MESSAGE`, or `SOURCE: not a WHAT: MESSAGE` when the error
/// names no place.
pub fn one_line(source: &str, text: &str, what: &str) -> String {
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("not TOML");
    let at = first
        .strip_prefix("TOML parse error at ")
        .map(|at| at.replace(", column ", " column "));
    let message = text
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty() && !l.starts_with('|') && !l.contains(" | ") && *l != first)
        .unwrap_or(first);
    match at {
        Some(at) => format!("{source}: {at}: {message}"),
        None => format!("{source}: not a {what}: {message}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_place_and_the_message_make_one_line() {
        let text = "TOML parse error at line 4, column 1\n  |\n4 | wcte = 1\n  | ^\nunknown field `wcte`\n";
        assert_eq!(
            one_line("t.toml", text, "task set"),
            "t.toml: line 4 column 1: unknown field `wcte`"
        );
        assert_eq!(
            one_line(
                "p.toml",
                "invalid type: string, expected a table\n",
                "campaign plan"
            ),
            "p.toml: not a campaign plan: invalid type: string, expected a table"
        );
    }
}
