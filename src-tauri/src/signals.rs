//! SIGTERM and SIGINT: listened for from the start, so a signal that arrives while
//! the tray comes up still quits the app cleanly.

/// SIGTERM and SIGINT, registered early.
pub(crate) struct Signals {
    #[cfg(unix)]
    streams: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl Signals {
    pub(crate) fn install() -> Signals {
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
    pub(crate) async fn received(self) {
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
