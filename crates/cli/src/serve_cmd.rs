//! `rtlab serve` and `rtlab serve token`: the fleet server started with its options, and the
//! tokens made (from the kernel's random bytes), listed and revoked in the store it serves.

use std::fmt::Write as _;

use anyhow::Result;
use store::Role;

use crate::console;
use crate::exit::{Exit, UsageError};
use crate::flags::{RoleArg, ServeArgs, ServeCommand, TextOrJson, TokenCommand};

/// `rtlab serve ...`.
pub fn run(args: &ServeArgs) -> Result<Exit> {
    match &args.command {
        Some(ServeCommand::Token(command)) => token(args, command),
        None => serve(args),
    }
}

fn token(args: &ServeArgs, command: &TokenCommand) -> Result<Exit> {
    let now = humantime::format_rfc3339_seconds(sys::clock::wall_now()).to_string();
    let db = args.db.as_deref();
    match command {
        TokenCommand::Add { name, role } => {
            store::check_token_name(name).map_err(|e| UsageError(e.to_string()))?;
            let mut store = crate::runs::open(db)?;
            let mut secret = [0u8; 32];
            sys::random::fill(&mut secret).map_err(|e| {
                UsageError(format!("cannot draw random bytes from the kernel: {e}"))
            })?;
            let role = match role {
                RoleArg::Push => Role::Push,
                RoleArg::Read => Role::Read,
            };
            let text = store
                .add_token(name, role, &secret, &now)
                .map_err(|e| UsageError(e.to_string()))?;
            console::print_stdout(&format!("{text}\n"))?;
            eprintln!(
                "rtlab: {} token '{name}' made in {}; its secret is shown only now \
                 (give it to the board as RTLAB_TOKEN or in a --token-file)",
                role.as_str(),
                store.name()
            );
            Ok(Exit::Ok)
        }
        TokenCommand::List { format, json } => {
            let store = crate::runs::open_existing(db)?;
            let tokens = store.tokens()?;
            let text = if *json || *format == TextOrJson::Json {
                serde_json::to_string_pretty(&tokens)? + "\n"
            } else {
                let mut out = String::new();
                let _ = writeln!(
                    out,
                    "{:<24}  {:<4}  {:<20}  revoked",
                    "name", "role", "made (UTC)"
                );
                for t in &tokens {
                    let _ = writeln!(
                        out,
                        "{:<24}  {:<4}  {:<20}  {}",
                        t.name,
                        t.role.as_str(),
                        t.created_at,
                        t.revoked_at.as_deref().unwrap_or("-")
                    );
                }
                let _ = writeln!(
                    out,
                    "{} token{}",
                    tokens.len(),
                    if tokens.len() == 1 { "" } else { "s" }
                );
                out
            };
            console::print_stdout(&text)?;
            Ok(Exit::Ok)
        }
        TokenCommand::Revoke { name } => {
            let mut store = crate::runs::open_existing(db)?;
            store
                .revoke_token(name, &now)
                .map_err(|e| UsageError(e.to_string()))?;
            eprintln!("rtlab: token '{name}' revoked; uploads with it now get 401");
            Ok(Exit::Ok)
        }
    }
}

#[cfg(feature = "server")]
fn serve(args: &ServeArgs) -> Result<Exit> {
    let location = crate::runs::location(args.db.as_deref())?;
    let name = location.display_name();
    let config = serve::Config {
        listen: args.listen,
        db: location,
        read_token: args.read_token,
        max_upload: args.max_upload,
        rate: args.rate,
        connections: usize::from(args.connections),
        regression_percent: args.regression,
        keep_detail_ns: args.keep_detail.get(),
    };
    serve::serve(config, |addr| {
        eprintln!("rtlab serve: listening on http://{addr}/ with the store {name}");
    })
    .map_err(|e| UsageError(e.to_string()))?;
    eprintln!("rtlab serve: stopped");
    Ok(Exit::Ok)
}

#[cfg(not(feature = "server"))]
fn serve(_args: &ServeArgs) -> Result<Exit> {
    Err(UsageError(
        "this rtlab was built without the server (cargo feature `server`; boards push to a \
         server and do not need it): run `rtlab serve` from a full build"
            .into(),
    )
    .into())
}
