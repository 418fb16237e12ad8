//! A limited typed read ([`crate::Scan::limit`]): the first `n` rows the
//! reader returns, not the first `n` rows the server sends.
//!
//! The server's row limit counts every row it sends, and the reader leaves
//! some out (a row whose required column has expired while another cell of
//! it is live; one skipped as undecodable). The limit is still sent, so
//! that the common case is one request reading no more than it needs; when
//! that request ends with its limit used up and fewer rows returned, the
//! read goes on after the last key the server sent (below it, reversed),
//! asking for the rows still wanted, or twice the last request's limit
//! when more (a run of rows left out then costs a few requests, not one
//! per row). It stops as soon as `n` rows are returned.

use std::pin::Pin;

use bytes::Bytes;
use futures_util::{Stream, StreamExt as _};

use crate::model::error::Result;
use crate::model::proto::ReadRowsRequest;
use crate::model::scan::resume_request;

/// One row the server sent, as the reader judged it.
pub(crate) struct Judged<R> {
    /// The row's key; `None` for a read that failed (no row, and the read
    /// ends).
    pub(crate) key: Option<Bytes>,
    /// What the reader returns for it: `None` for a row left out. A row
    /// that fails to decode is returned, as its error, and counts.
    pub(crate) row: Option<Result<R>>,
}

/// The limited read as it goes.
struct Reading<S, F> {
    open: F,
    /// The request of the page being read.
    request: ReadRowsRequest,
    page: Pin<Box<S>>,
    /// Rows the server sent for this page.
    sent: u64,
    last_key: Option<Bytes>,
    failed: bool,
    returned: u64,
}

/// The first `limit` rows the reader returns from `request` (whose
/// `rows_limit` is `limit`), each page of rows read by `open`.
pub(crate) fn limited<R, S, F>(
    request: ReadRowsRequest,
    limit: u64,
    mut open: F,
) -> impl Stream<Item = Result<R>>
where
    F: FnMut(ReadRowsRequest) -> S,
    S: Stream<Item = Judged<R>>,
{
    let page = Box::pin(open(request.clone()));
    let reading = Reading {
        open,
        request,
        page,
        sent: 0,
        last_key: None,
        failed: false,
        returned: 0,
    };
    futures_util::stream::unfold(Some(reading), move |reading| async move {
        let mut r = reading?;
        loop {
            let Some(Judged { key, row }) = r.page.next().await else {
                if r.go_on(limit) {
                    continue;
                }
                return None;
            };
            match key {
                Some(key) => {
                    r.sent += 1;
                    r.last_key = Some(key);
                }
                None => r.failed = true,
            }
            if let Some(row) = row {
                r.returned += 1;
                // The page is dropped with the read once the limit is
                // reached: the server may still be sending.
                let more = (r.returned < limit).then_some(r);
                return Some((row, more));
            }
        }
    })
}

impl<S, F: FnMut(ReadRowsRequest) -> S> Reading<S, F> {
    /// At the end of a page: open the next one, if the server's limit was
    /// used up and the range goes on; `false` when the read is over.
    fn go_on(&mut self, limit: u64) -> bool {
        let asked = u64::try_from(self.request.rows_limit).unwrap_or(0);
        // Fewer rows than asked: the range is read out.
        if self.failed || self.sent < asked {
            return false;
        }
        let Some(last_key) = self.last_key.take() else {
            return false;
        };
        let mut next = self.request.clone();
        let wanted = (limit - self.returned).max(asked.saturating_mul(2));
        next.rows_limit = i64::try_from(wanted).unwrap_or(i64::MAX);
        let Some(next) = resume_request(next, &last_key, 0) else {
            return false;
        };
        tracing::debug!(
            rows_limit = next.rows_limit,
            after = %last_key.escape_ascii(),
            "a limited read goes on: the server's limit counted rows left out"
        );
        self.page = Box::pin((self.open)(next.clone()));
        self.request = next;
        self.sent = 0;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::model::error::{self, Error};
    use crate::model::proto::row_range::StartKey;
    use crate::model::scan::Scan;
    use futures_util::TryStreamExt as _;

    /// Pages served from `rows` (key, returned?) in key order, honouring
    /// each request's start and limit, as a server would; the requests
    /// are recorded.
    fn serve<'r>(
        rows: &[(&str, bool)],
        requests: &'r mut Vec<ReadRowsRequest>,
    ) -> impl FnMut(ReadRowsRequest) -> futures_util::stream::Iter<std::vec::IntoIter<Judged<String>>> + 'r
    {
        let rows: Vec<(String, bool)> = rows.iter().map(|(k, r)| ((*k).to_owned(), *r)).collect();
        move |request: ReadRowsRequest| {
            let after = request
                .rows
                .as_ref()
                .and_then(|set| set.row_ranges.first())
                .and_then(|range| match &range.start_key {
                    Some(StartKey::StartKeyOpen(k)) => Some(k.clone()),
                    _ => None,
                });
            let limit = usize::try_from(request.rows_limit).unwrap();
            requests.push(request);
            let page: Vec<Judged<String>> = rows
                .iter()
                .filter(|(k, _)| after.as_ref().is_none_or(|a| k.as_bytes() > a.as_slice()))
                .take(limit)
                .map(|(k, returned)| Judged {
                    key: Some(k.clone().into_bytes().into()),
                    row: returned.then(|| Ok(k.clone())),
                })
                .collect();
            futures_util::stream::iter(page)
        }
    }

    async fn read(rows: &[(&str, bool)], limit: u64) -> (Vec<String>, Vec<ReadRowsRequest>) {
        let mut requests = Vec::new();
        let request = Scan::all()
            .limit(limit)
            .into_request("t".into())
            .unwrap()
            .unwrap();
        let got = limited(request, limit, serve(rows, &mut requests))
            .try_collect::<Vec<_>>()
            .await
            .unwrap();
        (got, requests)
    }

    #[tokio::test]
    async fn rows_left_out_do_not_count_and_the_read_goes_on_after_the_last_key() {
        let rows = [
            ("a", false),
            ("b", true),
            ("c", false),
            ("d", true),
            ("e", true),
        ];
        let (got, requests) = read(&rows, 2).await;
        assert_eq!(got, ["b", "d"]);
        let limits: Vec<i64> = requests.iter().map(|r| r.rows_limit).collect();
        // Two asked, one returned; then twice as many after "b".
        assert_eq!(limits, [2, 4]);
        assert_eq!(
            requests[1].rows.as_ref().unwrap().row_ranges[0].start_key,
            Some(StartKey::StartKeyOpen(b"b".to_vec()))
        );

        // Fewer live rows than the limit: every one, then the range ends.
        let (got, requests) = read(&rows, 10).await;
        assert_eq!(got, ["b", "d", "e"]);
        assert_eq!(requests.len(), 1);

        // A run of rows left out: a few requests, not one per row.
        let mut many: Vec<(String, bool)> = (0..100).map(|i| (format!("k{i:03}"), false)).collect();
        many.push(("z".to_owned(), true));
        let many: Vec<(&str, bool)> = many.iter().map(|(k, r)| (k.as_str(), *r)).collect();
        let (got, requests) = read(&many, 1).await;
        assert_eq!(got, ["z"]);
        assert!(requests.len() <= 8, "{} requests", requests.len());
    }

    fn failure() -> Error {
        Error::from(error::InvalidRange {
            start: b"x".to_vec(),
            end: b"y".to_vec(),
        })
    }

    #[tokio::test]
    async fn a_row_that_fails_counts_and_a_failed_read_ends() {
        let page = |items: Vec<Judged<String>>| futures_util::stream::iter(items);
        let request = |limit| {
            Scan::all()
                .limit(limit)
                .into_request("t".into())
                .unwrap()
                .unwrap()
        };
        // A row returned as its error is one of the limit's rows.
        let mut opened = 0;
        let rows: Vec<Result<String>> = limited(request(1), 1, |_| {
            opened += 1;
            page(vec![Judged {
                key: Some(Bytes::from_static(b"a")),
                row: Some(Err(failure())),
            }])
        })
        .collect()
        .await;
        assert_eq!((rows.len(), opened), (1, 1));
        assert!(rows[0].is_err());

        // A row left out and then a read that failed: the limit is used
        // up, but the read is not gone on with.
        let mut opened = 0;
        let rows: Vec<Result<String>> = limited(request(1), 1, |_| {
            opened += 1;
            page(vec![
                Judged {
                    key: Some(Bytes::from_static(b"a")),
                    row: None,
                },
                Judged {
                    key: None,
                    row: Some(Err(failure())),
                },
            ])
        })
        .collect()
        .await;
        assert_eq!((rows.len(), opened), (1, 1));
    }
}
