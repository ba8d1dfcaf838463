//! A FOREIGN KEY as a table's metadata holds it: one line
//! `!fkey<TAB>name<TAB>columns<TAB>parent<TAB>parent columns<TAB>on delete<TAB>on update<TAB>timing[<TAB>f]`,
//! column lists joined by U+001F (no SQL name holds it), actions as pg_constraint's letters (`a` NO ACTION,
//! `r` RESTRICT, `c` CASCADE, `n` SET NULL), timing `i` (not deferrable), `d` (deferrable, initially
//! immediate) or `D` (deferrable, initially deferred), and `f` last for MATCH FULL (MATCH SIMPLE writes
//! nothing there, as every line did before MATCH FULL was built).

/// What a change to a referenced row does to the rows that reference it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FkAction {
    /// The references must be gone by the end of the statement (or of the transaction when deferred).
    NoAction,
    /// As NO ACTION, never deferred.
    Restrict,
    /// The referencing rows are deleted with the row.
    Cascade,
    /// The referencing columns become NULL.
    SetNull,
    /// The referencing columns take their DEFAULTs (NULL without one), which must reference a row in turn.
    SetDefault,
}

impl FkAction {
    /// pg_constraint's `confdeltype` letter.
    pub fn letter(self) -> char {
        match self {
            FkAction::NoAction => 'a',
            FkAction::Restrict => 'r',
            FkAction::Cascade => 'c',
            FkAction::SetNull => 'n',
            FkAction::SetDefault => 'd',
        }
    }

    fn from_letter(c: &str) -> Option<FkAction> {
        Some(match c {
            "a" => FkAction::NoAction,
            "r" => FkAction::Restrict,
            "c" => FkAction::Cascade,
            "n" => FkAction::SetNull,
            "d" => FkAction::SetDefault,
            _ => return None,
        })
    }

    /// As `pg_get_constraintdef` prints it after `ON DELETE` (nothing for NO ACTION, the default).
    pub fn sql(self) -> &'static str {
        match self {
            FkAction::NoAction => "NO ACTION",
            FkAction::Restrict => "RESTRICT",
            FkAction::Cascade => "CASCADE",
            FkAction::SetNull => "SET NULL",
            FkAction::SetDefault => "SET DEFAULT",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ForeignKey {
    pub name: String,
    /// The referencing columns of this table.
    pub columns: Vec<String>,
    pub parent: String,
    /// The parent's columns, in the order of `columns`: its primary key or a UNIQUE constraint's.
    pub parent_columns: Vec<String>,
    pub on_delete: FkAction,
    pub on_update: FkAction,
    pub deferrable: bool,
    /// Checked at COMMIT unless `SET CONSTRAINTS` says otherwise.
    pub initially_deferred: bool,
    /// MATCH FULL: a row references nothing only when every referencing column is NULL, and may not have
    /// some NULL and some not (MATCH SIMPLE, the default: any NULL column makes it reference nothing).
    pub match_full: bool,
}

const SEP: char = '\u{1f}';

impl ForeignKey {
    pub fn encode(&self) -> String {
        let timing = match (self.deferrable, self.initially_deferred) {
            (false, _) => 'i',
            (true, false) => 'd',
            (true, true) => 'D',
        };
        format!(
            "!fkey\t{}\t{}\t{}\t{}\t{}\t{}\t{timing}{}\n",
            self.name,
            self.columns.join(&SEP.to_string()),
            self.parent,
            self.parent_columns.join(&SEP.to_string()),
            self.on_delete.letter(),
            self.on_update.letter(),
            if self.match_full { "\tf" } else { "" }
        )
    }

    /// The fields after `!fkey` of a metadata line.
    pub fn decode(f: &[&str]) -> Option<ForeignKey> {
        let (f, match_full) = match f {
            [head @ .., "f"] if f.len() == 8 => (head, true),
            _ => (f, false),
        };
        let [name, columns, parent, parent_columns, on_delete, on_update, timing] = f else { return None };
        let split = |s: &str| s.split(SEP).map(String::from).collect::<Vec<_>>();
        Some(ForeignKey {
            name: name.to_string(),
            columns: split(columns),
            parent: parent.to_string(),
            parent_columns: split(parent_columns),
            on_delete: FkAction::from_letter(on_delete)?,
            on_update: FkAction::from_letter(on_update)?,
            deferrable: *timing != "i",
            initially_deferred: *timing == "D",
            match_full,
        })
    }

    /// `pg_get_constraintdef`: `FOREIGN KEY (a) REFERENCES p(id) [MATCH FULL] ON DELETE CASCADE DEFERRABLE
    /// INITIALLY DEFERRED`;
    /// `qualified`: the referenced table as `public.p`, as PostgreSQL names a table whose schema is not on
    /// the search path (pg_dump's empty one).
    pub fn definition(&self, quote: impl Fn(&str) -> String, qualified: bool) -> String {
        let list = |cols: &[String]| cols.iter().map(|c| quote(c)).collect::<Vec<_>>().join(", ");
        let schema = if qualified { "public." } else { "" };
        let mut s =
            format!("FOREIGN KEY ({}) REFERENCES {schema}{}({})", list(&self.columns), quote(&self.parent), list(&self.parent_columns));
        if self.match_full {
            s.push_str(" MATCH FULL");
        }
        if self.on_update != FkAction::NoAction {
            s.push_str(&format!(" ON UPDATE {}", self.on_update.sql()));
        }
        if self.on_delete != FkAction::NoAction {
            s.push_str(&format!(" ON DELETE {}", self.on_delete.sql()));
        }
        if self.deferrable {
            s.push_str(" DEFERRABLE");
            if self.initially_deferred {
                s.push_str(" INITIALLY DEFERRED");
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_foreign_key_survives_its_metadata_line() {
        let fk = ForeignKey {
            name: "c_a_b_fkey".into(),
            columns: vec!["a".into(), "b c".into()],
            parent: "p".into(),
            parent_columns: vec!["x".into(), "y".into()],
            on_delete: FkAction::Cascade,
            on_update: FkAction::Restrict,
            deferrable: true,
            initially_deferred: true,
            match_full: true,
        };
        let line = fk.encode();
        let fields: Vec<&str> = line.trim_end().split('\t').collect();
        assert_eq!(fields[0], "!fkey");
        assert_eq!(ForeignKey::decode(&fields[1..]), Some(fk.clone()));
        assert_eq!(
            fk.definition(|s| s.to_string(), false),
            "FOREIGN KEY (a, b c) REFERENCES p(x, y) MATCH FULL ON UPDATE RESTRICT ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED"
        );
        // A line from before MATCH FULL was kept: seven fields, MATCH SIMPLE.
        let simple = ForeignKey { match_full: false, ..fk };
        let line = simple.encode();
        let fields: Vec<&str> = line.trim_end().split('\t').collect();
        assert_eq!(fields.len(), 8);
        assert_eq!(ForeignKey::decode(&fields[1..]), Some(simple));
    }
}
