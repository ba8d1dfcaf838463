//! `pg_proc`: the library's functions, with no ACL.
//!
//! The library's `proacl` values are those of the PostgreSQL its data came from: they name roles Tabula
//! does not have (pg_monitor, pg_read_server_files, ...) and privileges nobody can grant or revoke here.
//! In Tabula every function may be called by every role, which PostgreSQL writes as a NULL ACL; and
//! pg_init_privs has no entry for them to match. (pg_dump dumps the privileges of every function whose
//! `proacl` differs from its `pg_init_privs` entry.)

use datafusion::arrow::datatypes::Field;

use crate::analytic::catalog::*;

#[derive(Debug)]
pub struct PgProc {
    inner: Arc<dyn TableProvider>,
    schema: SchemaRef,
    acl: usize,
}

impl PgProc {
    pub fn new(inner: Arc<dyn TableProvider>) -> DfResult<PgProc> {
        let source = inner.schema();
        let acl = source.index_of("proacl")?;
        let fields: Vec<Field> = source
            .fields()
            .iter()
            .enumerate()
            // aclitem[], as the other catalogs' ACL columns (the library has text).
            .map(|(i, f)| if i == acl { Field::new(f.name(), data_type(K::Texts), true) } else { f.as_ref().clone() })
            .collect();
        Ok(PgProc { inner, schema: Arc::new(Schema::new(fields)), acl })
    }
}

#[async_trait]
impl TableProvider for PgProc {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        self.inner.table_type()
    }

    async fn scan(
        &self,
        state: &dyn DfSession,
        projection: Option<&Vec<usize>>,
        _filters: &[datafusion::logical_expr::Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let plan = self.inner.scan(state, None, &[], None).await?;
        let batches = datafusion::physical_plan::collect(plan, state.task_ctx()).await?;
        let batches = batches
            .into_iter()
            .map(|b| {
                let mut columns = b.columns().to_vec();
                columns[self.acl] = new_null_array(self.schema.field(self.acl).data_type(), b.num_rows());
                RecordBatch::try_new(self.schema.clone(), columns)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(MemorySourceConfig::try_new_exec(&[batches], self.schema.clone(), projection.cloned())?)
    }
}
