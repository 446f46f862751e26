//! Pure parsers of kernel text (being written).
