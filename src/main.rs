//! The `cohort` binary: parses the command line and hands over to the library.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    cohort::cli::tune_allocator();
    let cli = cohort::cli::Cli::parse();
    // An agent's hook: record and return, without starting the runtime.
    if let Some(code) = cohort::cli::run_hook(&cli) {
        return code;
    }
    cohort::cli::init_logging(cli.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("cohort: could not start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(cohort::cli::run(cli))
}
