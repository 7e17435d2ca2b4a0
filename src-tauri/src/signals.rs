//! SIGTERM and SIGINT for the tray app, taken over before anything else starts, so a
//! stop request during start-up still drains and saves instead of killing the process.

/// SIGTERM and SIGINT, registered early.
pub struct Signals {
    #[cfg(unix)]
    streams: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl Signals {
    pub fn install() -> Signals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let streams = match (
                signal(SignalKind::terminate()),
                signal(SignalKind::interrupt()),
            ) {
                (Ok(t), Ok(i)) => Some((t, i)),
                _ => {
                    log::warn!("cannot listen for SIGTERM/SIGINT; quit from the tray menu");
                    None
                }
            };
            Signals { streams }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    /// Resolves when SIGTERM or SIGINT arrives; never, when they could not be
    /// registered.
    pub async fn received(self) {
        #[cfg(unix)]
        if let Some((mut term, mut int)) = self.streams {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            return;
        }
        std::future::pending::<()>().await;
    }
}
