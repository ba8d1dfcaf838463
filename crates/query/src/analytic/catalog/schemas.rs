//! The providers DataFusion reads the generated catalog through: a generated relation as a table, and the
//! pg_catalog, information_schema and tabula schemas that hold them.

use super::*;

/// A catalog relation generated on each scan.
pub struct GeneratedTable {
    which: Generated,
    schema: SchemaRef,
    db: Weak<dyn Source>,
    list: Weak<dyn CatalogProviderList>,
}

impl fmt::Debug for GeneratedTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GeneratedTable({:?})", self.which)
    }
}

impl GeneratedTable {
    fn new(which: Generated, db: Weak<dyn Source>, list: Weak<dyn CatalogProviderList>) -> Self {
        GeneratedTable { which, schema: which.schema(), db, list }
    }

    async fn batch(
        &self,
        settings: crate::settings::Settings,
        viewer: Option<String>,
        session: Option<(u64, Vec<String>)>,
    ) -> DfResult<RecordBatch> {
        let db = self.db.upgrade().ok_or_else(|| DataFusionError::Execution("the database is shut down".into()))?;
        let relation = match self.which {
            Generated::Relation(r) => r,
            Generated::System(v) => {
                let mut rows = v.rows(db.store()).map_err(df_err)?;
                let n = self.schema.fields().len();
                rows.iter_mut().for_each(|r| r.truncate(n));
                return crate::analytic::arrow::rows_to_batch(&self.schema, &rows).map_err(df_err);
            }
        };
        let list = self.list.upgrade().ok_or_else(|| DataFusionError::Execution("the catalog is gone".into()))?;
        let snapshot = Snapshot::take(&db, &list, relation.reads_relations(), settings, viewer, session).await?;
        build_batch(&self.schema, &relation.rows(&snapshot)?)
    }
}

#[async_trait]
impl TableProvider for GeneratedTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        state: &dyn DfSession,
        projection: Option<&Vec<usize>>,
        _filters: &[datafusion::logical_expr::Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let read = state.config().get_extension::<crate::analytic::provider::ReadCtx>();
        let settings = read.as_ref().map(|r| r.settings.clone()).unwrap_or_default();
        let session = read.as_ref().map(|r| (r.session, r.temp_tables.clone()));
        let viewer = read.map(|r| r.user.clone()).filter(|u| self.db.upgrade().is_some_and(|db| db.roles().is_superuser(u) == Some(false)));
        let batch = self.batch(settings, viewer, session).await?;
        Ok(MemorySourceConfig::try_new_exec(&[vec![batch]], self.schema.clone(), projection.cloned())?)
    }
}

/// pg_catalog: the library's provider, with the relations about Tabula's tables generated here.
#[derive(Debug)]
pub struct PgCatalogSchema {
    pub inner: Arc<dyn SchemaProvider>,
    pub db: Weak<dyn Source>,
    pub list: Weak<dyn CatalogProviderList>,
}

fn pg_catalog_generated(name: &str) -> Option<Generated> {
    use pg_catalog::*;
    let relation: &'static dyn Relation = match name {
        "pg_class" => &PgClass,
        "pg_attribute" => &PgAttribute,
        "pg_namespace" => &PgNamespace,
        "pg_index" => &PgIndex,
        "pg_indexes" => &PgIndexes,
        "pg_constraint" => &PgConstraint,
        "pg_attrdef" => &PgAttrdef,
        "pg_database" => &PgDatabase,
        "pg_roles" => &PgRoles,
        "pg_settings" => &PgSettings,
        "pg_stat_user_tables" | "pg_stat_all_tables" => &PgStatUserTables,
        "pg_stat_activity" => &PgStatActivity,
        "pg_stat_progress_copy" => &PgStatProgressCopy,
        "pg_stat_progress_create_index" => &PgStatProgressCreateIndex,
        "pg_extension" => &PgExtension,
        "pg_depend" => &PgDepend,
        "pg_sequence" => &PgSequence,
        "pg_sequences" => &PgSequences,
        "pg_views" => &PgViews,
        "pg_init_privs" => &PgInitPrivs,
        _ => return empty_relation(name).map(|e| Generated::Relation(e as &'static dyn Relation)),
    };
    Some(Generated::Relation(relation))
}

#[async_trait]
impl SchemaProvider for PgCatalogSchema {
    fn table_names(&self) -> Vec<String> {
        let mut names = self.inner.table_names();
        for extra in ["pg_stat_all_tables", "pg_transform", "pg_seclabels", "pg_sequences"] {
            if !names.iter().any(|n| n == extra) {
                names.push(extra.into());
            }
        }
        names
    }

    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        let name = name.to_ascii_lowercase();
        match pg_catalog_generated(&name) {
            Some(g) => Ok(Some(Arc::new(GeneratedTable::new(g, self.db.clone(), self.list.clone())))),
            None if name == "pg_proc" => match self.inner.table(&name).await? {
                Some(library) => Ok(Some(Arc::new(pg_catalog::PgProc::new(library)?))),
                None => Ok(None),
            },
            None => self.inner.table(&name).await,
        }
    }

    fn table_exist(&self, name: &str) -> bool {
        pg_catalog_generated(&name.to_ascii_lowercase()).is_some() || self.inner.table_exist(name)
    }
}

/// A schema whose relations are all generated: information_schema and tabula.
#[derive(Debug)]
pub struct GeneratedSchema {
    tables: BTreeMap<&'static str, Generated>,
    pub db: Weak<dyn Source>,
    pub list: Weak<dyn CatalogProviderList>,
}

impl GeneratedSchema {
    pub fn information_schema(db: Weak<dyn Source>, list: Weak<dyn CatalogProviderList>) -> Self {
        use information_schema::*;
        let tables = BTreeMap::from([
            ("schemata", Generated::Relation(&Schemata)),
            ("tables", Generated::Relation(&Tables)),
            ("columns", Generated::Relation(&Columns)),
            ("key_column_usage", Generated::Relation(&KeyColumnUsage)),
            ("table_constraints", Generated::Relation(&TableConstraints)),
            ("views", Generated::Relation(&Views)),
            ("referential_constraints", Generated::Relation(&ReferentialConstraints)),
        ]);
        GeneratedSchema { tables, db, list }
    }

    pub fn tabula(db: Weak<dyn Source>, list: Weak<dyn CatalogProviderList>) -> Self {
        let tables =
            BTreeMap::from([("tables", Generated::System(SystemView::Tables)), ("partitions", Generated::System(SystemView::Partitions))]);
        GeneratedSchema { tables, db, list }
    }
}

#[async_trait]
impl SchemaProvider for GeneratedSchema {
    fn table_names(&self) -> Vec<String> {
        self.tables.keys().map(|k| k.to_string()).collect()
    }

    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        Ok(self
            .tables
            .get(name.to_ascii_lowercase().as_str())
            .map(|g| Arc::new(GeneratedTable::new(*g, self.db.clone(), self.list.clone())) as Arc<dyn TableProvider>))
    }

    fn table_exist(&self, name: &str) -> bool {
        self.tables.contains_key(name.to_ascii_lowercase().as_str())
    }
}
