//! The `stencilscope` command line.

mod cli;

use clap::Parser;

fn main() {
    let args = cli::Cli::parse();
    if let Err(e) = cli::run(args) {
        eprintln!("error: {e}");
        // 130 = interrupted by SIGINT, as shells report it.
        std::process::exit(if matches!(e, cli::CliError::Interrupted) {
            130
        } else {
            1
        });
    }
}
