//! Causes of an error as the transport gives them (tonic's statuses,
//! hyper's and the operating system's errors), flattened to their chain's
//! text and read, where the error is made, for how a call Bigtable did not
//! answer ended: what an [`Error::Server`](crate::model::error::Error)'s
//! message tells and the retry policy decides on.

use std::fmt;

use crate::model::error::{BoxError, Unanswered};

/// A cause as its chain's text, each level saying something the levels
/// above it did not: what a dependency's error chain becomes before it is
/// an [`Error`]'s `source()`. tonic's `Status` prints its source's `Debug`
/// in its own `Display`, and its transport errors wrap each other printing
/// the same words ("tcp connect error" three times over one "Connection
/// refused"), so a reporter printing each level would name one cause
/// several times.
#[derive(Debug)]
pub(crate) struct Cause {
    text: String,
    source: Option<Box<Cause>>,
    /// Why nothing answered ("connection refused"), when the chain said
    /// so in its types before it became text.
    no_answer: Option<String>,
    /// The request never went out (no time left, no token): this level's
    /// text says why.
    not_sent: bool,
    /// Where the connection could not be made, when the chain said so
    /// ([`Unreachable`]) before it became text.
    unreachable: Option<(String, bool)>,
    /// The server refused the request before processing any of it (an
    /// HTTP/2 `REFUSED_STREAM`, a `GOAWAY` past its stream).
    refused: bool,
}

impl Cause {
    /// `text`, then each level of `source`'s chain whose text is not
    /// already part of a level kept above it.
    pub(crate) fn new(text: String, source: Option<&(dyn std::error::Error + 'static)>) -> Self {
        let mut levels = vec![text];
        for level in std::iter::successors(source, |e| e.source()) {
            let text = level.to_string();
            if !text.is_empty() && !levels.iter().any(|kept| kept.contains(&text)) {
                levels.push(text);
            }
        }
        let mut cause: Option<Box<Cause>> = None;
        while let Some(text) = levels.pop() {
            cause = Some(Box::new(Cause {
                text,
                source: cause,
                no_answer: None,
                not_sent: false,
                unreachable: None,
                refused: false,
            }));
        }
        let mut cause = cause.map_or_else(
            || Cause {
                text: String::new(),
                source: None,
                no_answer: None,
                not_sent: false,
                unreachable: None,
                refused: false,
            },
            |c| *c,
        );
        cause.no_answer = source.and_then(no_answer);
        cause.unreachable = source.and_then(unreachable);
        cause
    }

    /// This cause, marked as the reason a request was never sent.
    pub(crate) fn never_sent(mut self) -> Self {
        self.not_sent = true;
        self
    }

    /// This cause, marked as a refusal before processing: the request was
    /// not applied.
    pub(crate) fn refused(mut self) -> Self {
        self.refused = true;
        self
    }

    /// This cause, marked as the end of an attempt Bigtable did not answer
    /// (a timeout, a broken stream), its text saying why where nothing
    /// more precise was found.
    pub(crate) fn unanswered(mut self) -> Self {
        if self.no_answer.is_none() {
            self.no_answer = Some(self.text.clone());
        }
        self
    }

    /// `error`'s chain, each cause once.
    pub(crate) fn of(error: &(dyn std::error::Error + 'static)) -> Self {
        Self::new(error.to_string(), error.source())
    }

    /// Every level, joined as reporters join them (`a: b: c`).
    pub(crate) fn chain(&self) -> String {
        let mut text = self.text.clone();
        let mut next = self.source.as_deref();
        while let Some(level) = next {
            text.push_str(": ");
            text.push_str(&level.text);
            next = level.source.as_deref();
        }
        text
    }
}

/// Why nothing answered, when `error`'s chain shows a connection that
/// was never made (refused, no route): a failure of the network, not an
/// answer from Bigtable. A cause already flattened to text ([`Cause`])
/// keeps what it found; a bare message is read for the one such failure
/// it can name surely, the operating system's "Connection refused".
pub(crate) fn no_answer(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    use std::io::ErrorKind;
    for level in std::iter::successors(Some(error), |e| e.source()) {
        if let Some(cause) = level.downcast_ref::<Cause>() {
            if cause.no_answer.is_some() {
                return cause.no_answer.clone();
            }
        }
        // Its own level is its source's, which the chain steps over.
        if let Some(wrapped) = level.downcast_ref::<Unreachable>() {
            if let Some(why) = no_answer(&*wrapped.source) {
                return Some(why);
            }
        }
        if let Some(io) = level.downcast_ref::<std::io::Error>() {
            if matches!(
                io.kind(),
                ErrorKind::ConnectionRefused
                    | ErrorKind::HostUnreachable
                    | ErrorKind::NetworkUnreachable
                    | ErrorKind::AddrNotAvailable
            ) {
                return Some(io.kind().to_string());
            }
        }
    }
    let last = std::iter::successors(Some(error), |e| e.source()).last()?;
    (last.source().is_none()
        && last.downcast_ref::<Cause>().is_none()
        && last.to_string().contains("Connection refused (os error"))
    .then(|| ErrorKind::ConnectionRefused.to_string())
}

/// A connection that could not be made, and to which address: kept in
/// the chain of the failure it wraps, whose text it shows as its own (so a
/// chain printed level by level does not grow a level), for the messages
/// that name the address. `first` when it was a connection to an emulator
/// that no connection had reached yet: a refusal then is not retried (the
/// emulator is not running there), rather than for half a minute.
#[derive(Debug)]
pub(crate) struct Unreachable {
    pub(crate) address: String,
    pub(crate) first: bool,
    pub(crate) source: BoxError,
}

impl fmt::Display for Unreachable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.source.fmt(f)
    }
}

impl std::error::Error for Unreachable {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.source()
    }
}

/// Where `error`'s chain says a connection could not be made, and whether
/// it was a first connection to an emulator ([`Unreachable`]).
pub(crate) fn unreachable(error: &(dyn std::error::Error + 'static)) -> Option<(String, bool)> {
    std::iter::successors(Some(error), |e| e.source()).find_map(|level| {
        if let Some(u) = level.downcast_ref::<Unreachable>() {
            return Some((u.address.clone(), u.first));
        }
        level.downcast_ref::<Cause>()?.unreachable.clone()
    })
}

/// Whether `error` is a refused (or unroutable) first connection to an
/// emulator: nothing listens where it was told to look, and retrying for
/// the policy's half a minute would only delay saying so.
pub(crate) fn emulator_not_there(error: &(dyn std::error::Error + 'static)) -> bool {
    no_answer(error).is_some() && unreachable(error).is_some_and(|(_, first)| first)
}

/// How the call `source` ended, when Bigtable did not answer it: refused
/// before processing, no answer (a connection never made, an attempt cut),
/// or never sent; `None` when Bigtable answered.
pub(crate) fn unanswered(source: &(dyn std::error::Error + 'static)) -> Option<Unanswered> {
    let causes = || {
        std::iter::successors(Some(source), |e| e.source())
            .filter_map(|level| level.downcast_ref::<Cause>())
    };
    if let Some(cause) = causes().find(|cause| cause.refused) {
        return Some(Unanswered::Refused(cause.text.clone()));
    }
    if let Some(why) = no_answer(source) {
        return Some(Unanswered::NoAnswer {
            why,
            at: unreachable(source),
        });
    }
    // Not sent for want of time or a token (a refused connection is
    // told above, as no answer).
    causes()
        .find(|cause| cause.not_sent)
        .map(|cause| Unanswered::NotSent(cause.text.clone()))
}

/// An [`Error::Server`](crate::model::error::Error)'s reason, source and
/// how it went unanswered, from the cause that ended the call: when
/// Bigtable answered, its status message is the reason (shown in the
/// message) and what lay under it the source; a connection never made or a
/// request never sent keep their whole cause.
pub(crate) fn reason_and_source(
    cause: BoxError,
) -> (Option<String>, Option<BoxError>, Option<Unanswered>) {
    let unanswered = unanswered(&*cause);
    if unanswered.is_some() {
        return (None, Some(cause), unanswered);
    }
    match cause.downcast::<Cause>() {
        Ok(cause) if cause.text.is_empty() => (None, Some(cause), None),
        Ok(cause) => (
            Some(cause.text),
            cause.source.map(|below| below as BoxError),
            None,
        ),
        Err(other) => (None, Some(other), None),
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for Cause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|c| c as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::error::{self, Code, Error};
    use std::time::Duration;

    fn chain(e: &(dyn std::error::Error + 'static)) -> Vec<String> {
        std::iter::successors(Some(e), |e| e.source())
            .map(ToString::to_string)
            .collect()
    }

    /// What the server said is part of the message, and not repeated by
    /// the chain under it.
    #[test]
    fn a_servers_reason_is_in_the_message_once() {
        let (reason, source, unanswered) =
            reason_and_source(Box::new(Cause::new("unknown family \"c\"".into(), None)));
        let err = Error::from(error::Server {
            table: "nofamily_t".into(),
            row_key: Some(b"c1".to_vec()),
            code: Code::Unknown,
            attempts: 1,
            elapsed: Duration::from_millis(3),
            retries_exhausted: false,
            reason,
            source,
            unanswered,
        });
        assert_eq!(
            chain(&err),
            vec!["Bigtable answered UNKNOWN for table `nofamily_t`, row \"c1\": unknown family \"c\" \
                  (1 attempt over 3.0ms)"
                .to_owned()]
        );
    }

    #[test]
    fn a_call_never_sent_tells_no_time_it_did_not_take() {
        let timed_out = |cause: Cause| {
            let unanswered = unanswered(&cause);
            Error::from(error::Server {
                table: "visits".into(),
                row_key: Some(b"v1".to_vec()),
                code: Code::DeadlineExceeded,
                attempts: 1,
                elapsed: Duration::ZERO,
                retries_exhausted: false,
                reason: None,
                source: Some(Box::new(cause)),
                unanswered,
            })
        };
        let why = || {
            Cause::new(
                "no time left for CheckAndMutateRow before the deadline".into(),
                None,
            )
        };
        assert_eq!(
            timed_out(why()).to_string(),
            "Bigtable answered DEADLINE_EXCEEDED for table `visits`, row \"v1\" (1 attempt)"
        );
        assert_eq!(
            timed_out(why().never_sent()).to_string(),
            "not sent to Bigtable for table `visits`, row \"v1\": no time left for \
             CheckAndMutateRow before the deadline (DEADLINE_EXCEEDED, 1 attempt)"
        );
    }

    #[test]
    fn a_refused_connection_is_no_answer_and_a_status_is_an_answer() {
        let server = |source: BoxError| {
            let (reason, source, unanswered) = reason_and_source(source);
            Error::from(error::Server {
                table: "clicks".into(),
                row_key: Some(b"c1".to_vec()),
                code: Code::Unavailable,
                attempts: 10,
                elapsed: Duration::from_secs(28),
                retries_exhausted: true,
                reason,
                source,
                unanswered,
            })
        };
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let transport = Cause::new("UNAVAILABLE: tcp connect error".into(), Some(&refused));
        let err = server(Box::new(transport));
        assert_eq!(
            err.to_string(),
            "no answer from Bigtable for table `clicks`, row \"c1\": connection refused \
             (UNAVAILABLE, 10 attempts over 28.0s, retries exhausted)"
        );
        // The raw layer's bulk write keeps only its rows' reasons, as text.
        let err = server("outcome unknown: Connection refused (os error 111)".into());
        assert!(
            err.to_string().starts_with("no answer from Bigtable"),
            "{err}"
        );
        let answered = server(Box::new(Cause::new("UNAVAILABLE: overloaded".into(), None)));
        assert!(
            answered
                .to_string()
                .starts_with("Bigtable answered UNAVAILABLE for table `clicks`"),
            "{answered}"
        );
    }

    /// An error whose `Display` repeats its source's, as tonic's and
    /// hyper's connection errors do.
    #[derive(Debug)]
    struct Level(&'static str, Option<Box<Level>>);

    impl fmt::Display for Level {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Level {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|l| l as _)
        }
    }

    #[test]
    fn a_cause_keeps_each_level_once() {
        let refused = Level("Connection refused (os error 111)", None);
        let hyper = Level("tcp connect error", Some(Box::new(refused)));
        let tonic = Level("tcp connect error", Some(Box::new(hyper)));
        let transport = Level("transport error", Some(Box::new(tonic)));
        let cause = Cause::new("UNAVAILABLE: tcp connect error".into(), Some(&transport));
        assert_eq!(
            chain(&cause),
            [
                "UNAVAILABLE: tcp connect error",
                "transport error",
                "Connection refused (os error 111)"
            ]
        );
        assert_eq!(
            cause.chain(),
            "UNAVAILABLE: tcp connect error: transport error: Connection refused (os error 111)"
        );
        assert_eq!(
            Cause::of(&transport).chain(),
            "transport error: tcp connect error: Connection refused (os error 111)"
        );
    }
}
