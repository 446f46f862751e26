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
