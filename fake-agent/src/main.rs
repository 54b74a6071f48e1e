//! `cohort-fake-agent`: run as `claude` or `codex` (a symlink), or with `--flavor`.

fn main() {
    let mut args = std::env::args();
    let argv0 = args.next().unwrap_or_default();
    let rest: Vec<String> = args.collect();
    std::process::exit(cohort_fake_agent::main_with(&argv0, &rest));
}
