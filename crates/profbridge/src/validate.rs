//! `profbridge validate`: loads a collector configuration as `serve` would
//! (with `${env:…}` references and `PROFBRIDGE__…` overrides from the
//! environment) and reports every problem with its key path, then what
//! `serve` would refuse before it binds a port (certificates, tokens,
//! exporter and processor settings).

use std::path::PathBuf;
use std::process::ExitCode;

use profbridge_collector::{config, service};

#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// The collector configuration (YAML); without it, the embedded default
    /// configuration is checked.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// Prints `FILE: OK` and any warnings (exit 0), or every problem (exit 1).
pub fn run(args: &ValidateArgs) -> anyhow::Result<ExitCode> {
    let name = args.config.as_ref().map_or_else(
        || "(embedded default)".to_owned(),
        |path| path.display().to_string(),
    );
    match config::load(args.config.as_deref()) {
        Ok(config) => {
            let refused = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?
                .block_on(async { service::check_start(&config) });
            if !refused.is_empty() {
                for problem in &refused {
                    eprintln!("{name}: {problem}");
                }
                print_warnings(&name, &config.warnings());
                return Ok(ExitCode::from(crate::EXIT_SOME_FAILED));
            }
            println!("{name}: OK");
            print_warnings(&name, &config.warnings());
            Ok(ExitCode::SUCCESS)
        }
        Err(errors) => {
            for problem in &errors.problems {
                eprintln!("{name}: {problem}");
            }
            print_warnings(&name, &errors.warnings);
            Ok(ExitCode::from(crate::EXIT_SOME_FAILED))
        }
    }
}

fn print_warnings(name: &str, warnings: &[config::Problem]) {
    for warning in warnings {
        eprintln!("{name}: warning: {warning}");
    }
}
