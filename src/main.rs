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
    // Inside the runtime: an exporter of traces may need it to start and to flush.
    let telemetry = {
        let _inside = runtime.enter();
        cohort::cli::init_logging(cli.verbose)
    };
    let code = runtime.block_on(cohort::cli::run(cli));
    drop(telemetry);
    code
}
