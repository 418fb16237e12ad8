//! The messages of the variants whose words depend on their cause.

use std::fmt;
use std::time::Duration;

use super::{BadAddress, Code, Error, FailedRow, NoCredentials};

/// Where application default credentials are looked for, in order, and
/// what to do when none is there: [`NoCredentials`]'s message.
const NO_CREDENTIALS: &str = "no Google Cloud credentials found: looked for a service-account key \
    file named by GOOGLE_APPLICATION_CREDENTIALS, gcloud's application default credentials \
    (~/.config/gcloud/application_default_credentials.json), the metadata server of a Google \
    Cloud machine, and `gcloud auth print-access-token`; run `gcloud auth application-default \
    login` or set GOOGLE_APPLICATION_CREDENTIALS for Cloud Bigtable, or set \
    BIGTABLE_EMULATOR_HOST=HOST:PORT to use Google's Bigtable emulator";

/// The message of an [`Error::Connect`](super::Error::Connect): what was tried, or for a
/// malformed address that nothing was, and why.
pub(super) fn connect_message(target: &str, source: &(dyn std::error::Error + 'static)) -> String {
    if source.is::<NoCredentials>() {
        return NO_CREDENTIALS.to_owned();
    }
    match source.downcast_ref::<BadAddress>() {
        Some(bad) => format!("malformed Bigtable address ({target}): {}", bad.problem),
        None => format!("could not connect to Bigtable ({target})"),
    }
}

/// How a call that Bigtable did not answer ended, as the transport told
/// it where the error was made (`wire::cause`): what an
/// [`Error::Server`](super::Error::Server)'s message says instead of "Bigtable answered".
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unanswered {
    /// Refused by the server before it processed any of the request (an
    /// HTTP/2 `REFUSED_STREAM`, a `GOAWAY` past its stream): why.
    Refused(String),
    /// Nothing answered: why ("connection refused"), and where the
    /// connection could not be made, when that is known, with whether it
    /// was a first connection to an emulator.
    NoAnswer {
        /// Why.
        why: String,
        /// The address, and whether it was a first connection to an
        /// emulator.
        at: Option<(String, bool)>,
    },
    /// The request never went out (no time left, no token): why.
    NotSent(String),
}

/// The message of an [`Error::Server`](super::Error::Server): "no answer from Bigtable" when
/// the connection was never made, "not sent to Bigtable" when the request
/// never went out (no time left, no token), "Bigtable answered CODE" and
/// its reason otherwise.
pub(super) fn server_message(
    table: &str,
    row_key: Option<&[u8]>,
    code: Code,
    attempts: Attempts,
    reason: Option<&str>,
    unanswered: Option<&Unanswered>,
) -> String {
    let row = row_key
        .map(|k| format!(", row \"{}\"", k.escape_ascii()))
        .unwrap_or_default();
    match unanswered {
        Some(Unanswered::Refused(why)) => format!(
            "refused by Bigtable before processing, not applied, for table `{table}`{row}: {why} ({code}, {attempts})"
        ),
        Some(Unanswered::NoAnswer { why, at }) => {
            let (at, hint) = match at {
                Some((address, first)) => (
                    format!(" at {address}"),
                    if *first {
                        "; is the emulator running there? start it, or point BIGTABLE_EMULATOR_HOST \
                         at the HOST:PORT it listens on"
                    } else {
                        ""
                    },
                ),
                None => (String::new(), ""),
            };
            format!(
                "no answer from Bigtable{at} for table `{table}`{row}: {why} ({code}, {attempts}){hint}"
            )
        }
        Some(Unanswered::NotSent(why)) => format!(
            "not sent to Bigtable for table `{table}`{row}: {why} ({code}, {attempts})"
        ),
        None => {
            let hint = if code == Code::NotFound {
                "; does the table exist? ensure_schema creates it"
            } else {
                ""
            };
            let reason = reason.map(|r| format!(": {r}")).unwrap_or_default();
            format!("Bigtable answered {code} for table `{table}`{row}{reason} ({attempts}){hint}")
        }
    }
}

/// The first few failed rows, for a one-line message.
pub(super) fn first_failures(failed: &[FailedRow]) -> String {
    let shown: Vec<String> = failed.iter().take(3).map(ToString::to_string).collect();
    if shown.is_empty() {
        String::new()
    } else {
        format!(": {}", shown.join("; "))
    }
}

/// The message of an [`Error::OutcomeUnknown`](super::Error::OutcomeUnknown): why the outcome is
/// unknown (the library's cut at the horizon, a lost answer, an answer
/// that does not tell), and the attempts.
pub(super) fn outcome_message(
    table: &str,
    row_key: &[u8],
    attempts: u32,
    answered: u32,
    horizon: Option<Duration>,
    lost: Option<&str>,
    source: &(dyn std::error::Error + 'static),
) -> String {
    let why = match (horizon, lost) {
        (Some(horizon), _) => format!(
            "the library cut its attempt at the write's horizon, {horizon:?} after sending it, \
             before any answer (WriteOptions::horizon: on a link slower than that, set a \
             longer one with WriteOptions::with_horizon)"
        ),
        (None, Some(why)) => format!("its answer was lost ({why})"),
        (None, None) => {
            let answer = match source.downcast_ref::<Error>() {
                Some(Error::Server(e)) => e.code.to_string(),
                _ => source.to_string(),
            };
            format!("Bigtable answered {answer}, which does not say whether it applied it")
        }
    };
    let plural = if attempts == 1 { "" } else { "s" };
    let answered = match answered {
        0 => "none answered".to_owned(),
        n if n == attempts && n == 1 => "answered".to_owned(),
        n => format!("{n} answered"),
    };
    format!(
        "the write to row \"{}\" of table `{table}` may or may not have been applied: \
         {why} ({attempts} attempt{plural}, {answered}); read the row to find out",
        row_key.escape_ascii()
    )
}

/// "1 attempt" / "10 attempts over 23.1s, retries exhausted".
#[derive(Clone, Copy)]
pub(super) struct Attempts {
    pub(super) count: u32,
    pub(super) elapsed: Duration,
    pub(super) retries_exhausted: bool,
}

impl fmt::Display for Attempts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = if self.count == 1 { "" } else { "s" };
        write!(f, "{} attempt{plural}", self.count)?;
        // A call refused before anything went out (no time left, no
        // token) has no time of its own to tell.
        if !self.elapsed.is_zero() {
            write!(f, " over {:.1?}", self.elapsed)?;
        }
        if self.retries_exhausted {
            f.write_str(", retries exhausted")?;
        }
        Ok(())
    }
}
