//! SET, SHOW, RESET, DISCARD and `set_config`: the session's settings ([`crate::settings`] checks and
//! shows each value), and the messages `client_min_messages` lets through.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::Session;
use crate::error::{QueryError, Result};
use crate::output::{Notice, Output};
use crate::plan::{OutputColumn, Plan};
use crate::settings::*;
use crate::types::{Datum, SqlType};

impl Session {
    /// Takes the settings a client gives at connection start (see [`startup_settings`]). The server checks
    /// them before the connection is accepted and refuses it if one is bad, as PostgreSQL does.
    pub fn apply_startup<'a>(&mut self, params: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<()> {
        for (k, v) in startup_settings(params)? {
            self.set(&k, Some(&v))?;
        }
        Ok(())
    }

    pub fn setting(&self, name: &str) -> Option<&str> {
        // Every statement looks up `statement_timeout`: no lowercased copy for a name already in lower case.
        if name.chars().any(char::is_uppercase) {
            self.settings.get(&name.to_lowercase()).map(|s| s.as_str())
        } else {
            self.settings.get(name).map(|s| s.as_str())
        }
    }

    /// The session's `TimeZone`, in which it reads and shows `timestamptz` values.
    pub fn zone(&self) -> crate::types::Zone {
        crate::types::Zone::of_setting(self.setting("timezone").unwrap_or("UTC"))
    }

    pub fn settings(&self) -> &BTreeMap<String, String> {
        &self.settings
    }

    pub(super) fn set(&mut self, name: &str, value: Option<&str>) -> Result<Output> {
        if name == "transaction_characteristics" || name == "session characteristics" {
            return Ok(Output::Command { tag: "SET".into() });
        }
        let key = match name {
            "transaction isolation level" | "transaction_isolation" => "transaction_isolation",
            "names" => "client_encoding",
            "time zone" => "timezone",
            other => other,
        }
        .to_string();
        let value = match value {
            Some(v) => v.to_string(),
            None => self.db.default_settings().get(&key).cloned().unwrap_or_default(),
        };
        refuse_fixed(&key.to_lowercase())?;
        let (key, value) = check_setting(&key, &value)?;
        Arc::make_mut(&mut self.settings).insert(key.clone(), value.clone());
        if REPORTED_SETTINGS.contains(&key.as_str()) {
            Ok(Output::Set { tag: "SET".into(), name: display_setting_name(&key).to_string(), value })
        } else {
            Ok(Output::Command { tag: "SET".into() })
        }
    }

    /// `SELECT set_config(name, value, false)`: SET, answering the new value.
    pub(super) fn set_config(&mut self, plan: &Plan, name: &str, value: &str, if_exists: bool) -> Result<Output> {
        if if_exists && self.setting(name).is_none() {
            return Ok(Output::Rows { columns: plan.output_columns(), rows: vec![], tag: "SELECT 0".into() });
        }
        self.set(name, Some(value))?;
        let now = self.setting(name).unwrap_or_default().to_string();
        Ok(Output::Rows { columns: plan.output_columns(), rows: vec![vec![Datum::Text(now)]], tag: "SELECT 1".into() })
    }

    /// `SHOW ALL`: every setting with its description.
    pub(super) fn show_all(&self, plan: &Plan) -> Result<Output> {
        let text = |s: &str| Datum::Text(s.to_string());
        let rows = self.settings.iter().map(|(k, v)| vec![text(display_setting_name(k)), text(v), text(setting_description(k))]).collect();
        Ok(Output::Rows { columns: plan.output_columns(), rows, tag: "SHOW".into() })
    }

    /// `SHOW name`.
    pub(super) fn show(&self, name: &str) -> Result<Output> {
        let value = match name {
            "session_authorization" => Some(self.user.clone()),
            "role" => Some(self.role.clone().unwrap_or_else(|| "none".into())),
            _ => self.setting(name).map(|s| s.to_string()),
        }
        .ok_or_else(|| QueryError::UndefinedParameter(name.to_string()))?;
        Ok(Output::Rows {
            columns: vec![OutputColumn { name: display_setting_name(name).to_string(), ty: SqlType::Text, source: None }],
            rows: vec![vec![Datum::Text(value)]],
            tag: "SHOW".into(),
        })
    }

    /// `RESET name`: the setting back to its default, reported to the client as SET's change is.
    pub(super) fn reset(&mut self, name: &str) -> Result<Output> {
        match self.set(name, None)? {
            Output::Set { name, value, .. } => Ok(Output::Set { tag: "RESET".into(), name, value }),
            _ => Ok(Output::Command { tag: "RESET".into() }),
        }
    }

    /// `RESET ALL`: settings back to their defaults; the role stays, as PostgreSQL's RESET ALL leaves it.
    pub(super) fn reset_all(&mut self) -> Result<Output> {
        self.settings = self.db.default_settings();
        Ok(Output::Command { tag: "RESET".into() })
    }

    /// `DISCARD ALL`: settings, the role, cursors and prepared statements; never inside a transaction.
    pub(super) fn discard_all(&mut self) -> Result<Output> {
        if self.txn.is_some() {
            return Err(QueryError::ActiveTransaction("DISCARD ALL"));
        }
        self.settings = self.db.default_settings();
        self.role = None;
        self.cursors.close(None)?;
        self.statements.clear();
        self.drop_temp_tables()?;
        Ok(Output::Command { tag: "DISCARD ALL".into() })
    }
}

impl Session {
    /// Sends a NOTICE with the statement's result, unless `client_min_messages` asks for fewer messages.
    pub(super) fn notice(&mut self, sqlstate: &'static str, message: String, hint: Option<String>) {
        if !matches!(self.setting("client_min_messages"), Some("warning" | "error")) {
            self.notices.push(Notice { severity: "NOTICE", sqlstate, message, hint });
        }
    }

    /// Sends a WARNING with the statement's result, unless `client_min_messages` is `error`.
    pub(super) fn warning(&mut self, sqlstate: &'static str, message: String) {
        if self.setting("client_min_messages") != Some("error") {
            self.notices.push(Notice { severity: "WARNING", sqlstate, message, hint: None });
        }
    }

    /// Sends an INFO with the statement's result: VERBOSE's report, which PostgreSQL always sends.
    pub(super) fn info(&mut self, message: String) {
        self.notices.push(Notice { severity: "INFO", sqlstate: "00000", message, hint: None });
    }

    /// The NOTICEs to send the client, in the order the statements raised them.
    pub fn take_notices(&mut self) -> Vec<Notice> {
        std::mem::take(&mut self.notices)
    }
}
