//! information_schema, generated from Tabula's catalog, one relation per file.

mod columns;
mod key_column_usage;
mod referential_constraints;
mod schemata;
mod table_constraints;
mod tables;
mod views;

pub use columns::Columns;
pub use key_column_usage::KeyColumnUsage;
pub use referential_constraints::ReferentialConstraints;
pub use schemata::Schemata;
pub use table_constraints::TableConstraints;
pub use tables::Tables;
pub use views::Views;
