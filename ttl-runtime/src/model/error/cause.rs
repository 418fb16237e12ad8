//! Causes of an error as the transport gives them, flattened to their
//! chain's text and read for why nothing answered.

use std::fmt;

use super::BoxError;

/// A cause as its chain's text, each level saying something the levels
/// above it did not: what a dependency's error chain becomes before it is
/// an [`Error`]'s `source()`. tonic's `Status` prints its source's `Debug`
/// in its own `Display`, and its transport errors wrap each other printing
/// the same words ("tcp connect error" three times over one "Connection
/// refused"), so a reporter printing each level would name one cause
/// several times.
#[derive(Debug)]
pub(crate) struct Cause {
    pub(super) text: String,
    pub(super) source: Option<Box<Cause>>,
    /// Why nothing answered ("connection refused"), when the chain said
    /// so in its types before it became text.
    pub(super) no_answer: Option<String>,
    /// The request never went out (no time left, no token): this level's
    /// text says why.
    pub(super) not_sent: bool,
    /// Where the connection could not be made, when the chain said so
    /// ([`Unreachable`]) before it became text.
    pub(super) unreachable: Option<(String, bool)>,
    /// The server refused the request before processing any of it (an
    /// HTTP/2 `REFUSED_STREAM`, a `GOAWAY` past its stream).
    pub(super) refused: bool,
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

/// An [`Error::Server`]'s reason and source, from the cause that ended the
/// call: when Bigtable answered, its status message is the reason (shown
/// in the message) and what lay under it the source; a connection never
/// made or a request never sent keep their whole cause, which the message
/// reads for why.
pub(crate) fn reason_and_source(cause: BoxError) -> (Option<String>, Option<BoxError>) {
    if no_answer(&*cause).is_some() {
        return (None, Some(cause));
    }
    match cause.downcast::<Cause>() {
        Ok(cause) if cause.not_sent || cause.refused || cause.text.is_empty() => {
            (None, Some(cause))
        }
        Ok(cause) => (
            Some(cause.text),
            cause.source.map(|below| below as BoxError),
        ),
        Err(other) => (None, Some(other)),
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
