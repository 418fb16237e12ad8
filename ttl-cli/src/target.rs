//! Where the table is: project, instance, and an emulator or Cloud Bigtable.

use bigtable_ttl_runtime::Connection;
use clap::Args;

use crate::output::Fallible;

/// Where the table is.
#[derive(Debug, Args)]
pub(crate) struct Target {
    /// Google Cloud project (else $BIGTABLE_PROJECT, else $GOOGLE_CLOUD_PROJECT).
    #[arg(long, global = true, env = "BIGTABLE_PROJECT")]
    project: Option<String>,
    /// Bigtable instance (else $BIGTABLE_INSTANCE).
    #[arg(long, global = true, env = "BIGTABLE_INSTANCE")]
    instance: Option<String>,
    /// An emulator's HOST:PORT instead of Cloud Bigtable (else
    /// $BIGTABLE_EMULATOR_HOST, as in every Google client).
    #[arg(
        long,
        global = true,
        env = "BIGTABLE_EMULATOR_HOST",
        hide_env_values = true
    )]
    emulator_host: Option<String>,
}

impl Target {
    /// A connection to the instance named.
    pub(crate) async fn connect(&self) -> Fallible<Connection> {
        let project = self
            .project
            .clone()
            .or_else(|| std::env::var("GOOGLE_CLOUD_PROJECT").ok())
            .filter(|p| !p.is_empty())
            .ok_or("no project: pass --project or set BIGTABLE_PROJECT")?;
        let instance = self
            .instance
            .clone()
            .filter(|i| !i.is_empty())
            .ok_or("no instance: pass --instance or set BIGTABLE_INSTANCE")?;
        Ok(
            match self.emulator_host.as_deref().filter(|h| !h.is_empty()) {
                Some(host) => Connection::emulator(host, &project, &instance)?,
                None => Connection::cloud(&project, &instance).await?,
            },
        )
    }
}
