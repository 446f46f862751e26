//! Resolving RUN specs and listing with filters, on SQLite and on PostgreSQL (`cases.rs`).

use model::CpuSet;

use crate::testdata::{TestStore, realistic, small};
use crate::{Filter, RunId, Store, StoreError};

mod sqlite {
    use super::*;

    fn fresh() -> Option<TestStore> {
        TestStore::sqlite()
    }

    include!("cases.rs");
}

mod postgres {
    use super::*;

    fn fresh() -> Option<TestStore> {
        TestStore::postgres()
    }

    include!("cases.rs");
}

/// A time filter must be a date the calendar has: `2026-13-01` matched nothing and
/// `2026-02-30` everything after March 2nd (issue #48).
#[test]
fn time_filters_are_dates_the_calendar_has() {
    for good in [
        "2026",
        "2026-02",
        "2024-02-29",
        "2026-12-31T23:59:59.5Z",
        "2026-01-12 11:52",
    ] {
        assert!(super::check_time("since", good).is_ok(), "{good}");
    }
    for bad in [
        "2026-13-01",
        "2026-00-10",
        "2026-02-30",
        "2025-02-29",
        "2026-04-31",
        "2026-01-00",
        "2026-01-12T24:00",
        "2026-01-12T10:60",
        "2026-01-12T10:10:61",
    ] {
        let e = super::check_time("since", bad).unwrap_err().to_string();
        assert!(e.contains("is not a date"), "{bad}: {e}");
    }
}
