//! Parse-don't-validate types: a value of one of these types is known to be valid.

pub mod analytics;
