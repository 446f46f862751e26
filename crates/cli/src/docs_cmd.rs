//! `rtlab completions` and `rtlab man`: shell completions and man pages generated from the
//! one command-line definition in [`crate::flags`], so they never drift from `--help`.

use std::path::Path;

use anyhow::{Context, Result};
use clap::CommandFactory;

use crate::flags::Cli;

/// Prints the completion script for `shell`.
pub fn completions(shell: clap_complete::Shell) {
    let mut cmd = Cli::command();
    clap_complete::generate(shell, &mut cmd, "rtlab", &mut std::io::stdout());
}

/// Writes `rtlab.1`, `rtlab-<command>.1` for every visible command and
/// `rtlab-<command>-<subcommand>.1` for every visible subcommand (`rtlab-tune-apply.1`) into
/// `dir`, each with its EXIT STATUS section.
pub fn man_pages(dir: &Path) -> Result<Vec<String>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut cmd = Cli::command();
    cmd.build();
    let mut written = Vec::new();
    let mut write = |name: String, page: clap::Command| -> Result<()> {
        let path = dir.join(format!("{name}.1"));
        let mut buf = Vec::new();
        clap_mangen::Man::new(page).render(&mut buf)?;
        std::fs::write(&path, buf).with_context(|| format!("writing {}", path.display()))?;
        written.push(path.display().to_string());
        Ok(())
    };
    write("rtlab".to_string(), cmd.clone())?;
    for sub in cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        let name = format!("rtlab-{}", sub.get_name());
        write(name.clone(), sub.clone().name(name.clone()))?;
        for leaf in sub
            .get_subcommands()
            .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        {
            let leaf_name = format!("{name}-{}", leaf.get_name());
            write(leaf_name.clone(), leaf.clone().name(leaf_name))?;
        }
    }
    Ok(written)
}
