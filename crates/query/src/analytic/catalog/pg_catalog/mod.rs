//! The pg_catalog relations Tabula generates from its own catalog (the rest come from
//! datafusion-pg-catalog), one per file.

mod empty;
mod pg_attrdef;
mod pg_attribute;
mod pg_class;
mod pg_constraint;
mod pg_database;
mod pg_extension;
mod pg_index;
mod pg_indexes;
mod pg_namespace;
mod pg_proc;
mod pg_roles;
mod pg_sequence;
mod pg_settings;
mod pg_stat_activity;
mod pg_stat_progress_copy;
mod pg_stat_progress_create_index;
mod pg_stat_user_tables;
mod pg_views;

pub use empty::empty_relation;
pub use pg_attrdef::PgAttrdef;
pub use pg_attribute::PgAttribute;
pub use pg_class::PgClass;
pub use pg_constraint::PgConstraint;
pub use pg_database::PgDatabase;
pub use pg_extension::{PgDepend, PgExtension};
pub use pg_index::PgIndex;
pub use pg_indexes::PgIndexes;
pub use pg_namespace::{PgInitPrivs, PgNamespace};
pub use pg_proc::PgProc;
pub use pg_roles::PgRoles;
pub use pg_sequence::{PgSequence, PgSequences};
pub use pg_settings::PgSettings;
pub use pg_stat_activity::PgStatActivity;
pub use pg_stat_progress_copy::PgStatProgressCopy;
pub use pg_stat_progress_create_index::PgStatProgressCreateIndex;
pub use pg_stat_user_tables::PgStatUserTables;
pub use pg_views::PgViews;
