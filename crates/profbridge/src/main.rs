//! The profbridge command: serve, validate, convert, inspect, send.

mod allocator;
mod cli;
mod convert;
mod input;
mod inspect;
mod key_value;
mod logs;
mod send;
mod serve;
mod validate;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Exit codes: 0 all done, 1 some inputs failed, 2 usage error.
pub const EXIT_SOME_FAILED: u8 = 1;
pub const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Convert(args) => convert::run(args),
        Command::Symbolize(args) => convert::run_symbolizing(args),
        Command::Inspect(args) => inspect::run(args),
        Command::Send(args) => send::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Validate(args) => validate::run(args),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("profbridge: {error:#}");
            ExitCode::from(EXIT_SOME_FAILED)
        }
    }
}
