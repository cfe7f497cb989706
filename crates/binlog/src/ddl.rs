//! Statements in the log that change a followed table without row events:
//! `TRUNCATE`, `DROP TABLE`, `ALTER TABLE`, `RENAME TABLE`, `CREATE TABLE`
//! (which `CREATE OR REPLACE` makes a drop), `DROP DATABASE`, and DML
//! written as SQL text by a session that set `binlog_format=STATEMENT`.
//!
//! The log holds them as query events with their SQL text. A full SQL
//! parser would be a large dependency for six statement shapes, so just
//! enough is read here: keywords case-insensitively, comments skipped
//! (the body of a `/*!50100 … */` comment is read, as the server runs it),
//! names bare, backquoted or double-quoted, schema-qualified or in the
//! event's default schema.

/// How a statement changed a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DdlKind {
    /// `TRUNCATE [TABLE] t`: every row gone, with no row events.
    Truncate,
    /// `DROP TABLE t`, or `DROP DATABASE` of its schema.
    Drop,
    /// `ALTER TABLE t …`: columns may have been added, dropped or renamed.
    Alter,
    /// `RENAME TABLE a TO b` (or `ALTER TABLE a RENAME TO b`): reported for
    /// both names, since each now names other rows (or none).
    Rename,
    /// `CREATE [OR REPLACE] TABLE t`: a new table under a followed name.
    Create,
    /// `INSERT`/`UPDATE`/`DELETE`/`REPLACE` logged as SQL text rather than
    /// as rows (a session with `binlog_format=STATEMENT`): which rows
    /// changed is not in the log.
    Statement,
}

/// One table a statement changed: (schema, table, kind).
pub(crate) type Touched = (String, String, DdlKind);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// A bare word, as written: a keyword or an unquoted name.
    Word(String),
    /// A backquoted or double-quoted name, as written.
    Quoted(String),
    Dot,
    Comma,
    /// Any other character, or a string literal.
    Other,
}

/// Splits SQL text into tokens, skipping whitespace and comments.
fn tokens(sql: &str) -> Vec<Token> {
    let chars: Vec<char> = sql.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        // `/*!50100 …*/` runs on servers from that version on: read its body.
        if c == '/' && next == Some('*') && chars.get(i + 2) == Some(&'!') {
            i += 3;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            continue;
        }
        if c == '/' && next == Some('*') {
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                i += 1;
            }
            i += 2;
            continue;
        }
        // The end of an executable comment whose body was read.
        if c == '*' && next == Some('/') {
            i += 2;
            continue;
        }
        if c == '#' || (c == '-' && next == Some('-')) {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '`' || c == '"' {
            let (name, end) = quoted(&chars, i);
            out.push(Token::Quoted(name));
            i = end;
            continue;
        }
        if c == '\'' {
            // A string literal: skipped whole, as one token.
            let (_, end) = quoted(&chars, i);
            out.push(Token::Other);
            i = end;
            continue;
        }
        if c.is_alphanumeric() || c == '_' || c == '$' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$')
            {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            out.push(Token::Word(word));
            continue;
        }
        out.push(match c {
            '.' => Token::Dot,
            ',' => Token::Comma,
            _ => Token::Other,
        });
        i += 1;
    }
    out
}

/// Reads a quoted run starting at `start` (the quote); a doubled quote is
/// one quote character. Returns the text and the index after the run.
fn quoted(chars: &[char], start: usize) -> (String, usize) {
    let quote = chars[start];
    let mut text = String::new();
    let mut i = start + 1;
    while i < chars.len() {
        if chars[i] == quote {
            if chars.get(i + 1) == Some(&quote) {
                text.push(quote);
                i += 2;
                continue;
            }
            return (text, i + 1);
        }
        // Backslash escapes inside string literals.
        if quote == '\'' && chars[i] == '\\' {
            i += 2;
            continue;
        }
        text.push(chars[i]);
        i += 1;
    }
    (text, i)
}

/// A cursor over tokens.
struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek_word(&self) -> Option<&str> {
        match self.tokens.get(self.at) {
            Some(Token::Word(word)) => Some(word),
            _ => None,
        }
    }

    /// Whether the next token is the keyword `word` (upper case).
    fn at_word(&self, word: &str) -> bool {
        self.peek_word()
            .is_some_and(|next| next.eq_ignore_ascii_case(word))
    }

    /// Consumes the keyword `word` (upper case) if it is next.
    fn eat(&mut self, word: &str) -> bool {
        if self.at_word(word) {
            self.at += 1;
            return true;
        }
        false
    }

    /// Consumes any of the keywords `words` (upper case), as many as
    /// follow each other.
    fn eat_any(&mut self, words: &[&str]) {
        while words.iter().any(|word| self.at_word(word)) {
            self.at += 1;
        }
    }

    fn eat_comma(&mut self) -> bool {
        if self.tokens.get(self.at) == Some(&Token::Comma) {
            self.at += 1;
            return true;
        }
        false
    }

    /// One name part, bare or quoted.
    fn name_part(&mut self) -> Option<String> {
        let part = match self.tokens.get(self.at)? {
            Token::Word(word) => word.clone(),
            Token::Quoted(name) => name.clone(),
            _ => return None,
        };
        self.at += 1;
        Some(part)
    }

    /// `name` or `schema.name`, the schema defaulting to `default_schema`.
    fn table_name(&mut self, default_schema: &str) -> Option<(String, String)> {
        let first = self.name_part()?;
        if self.tokens.get(self.at) == Some(&Token::Dot) {
            self.at += 1;
            let second = self.name_part()?;
            return Some((first, second));
        }
        Some((default_schema.to_owned(), first))
    }
}

/// The tables `sql` changes without row events, with how. Empty for any
/// other statement.
pub(crate) fn touched(sql: &str, default_schema: &str) -> Vec<Touched> {
    let mut parser = Parser {
        tokens: tokens(sql),
        at: 0,
    };
    let mut found = Vec::new();
    let Some(verb) = parser.peek_word().map(str::to_ascii_uppercase) else {
        return found;
    };
    parser.at += 1;
    match verb.as_str() {
        "TRUNCATE" => {
            parser.eat("TABLE");
            if let Some((schema, table)) = parser.table_name(default_schema) {
                found.push((schema, table, DdlKind::Truncate));
            }
        }
        "DROP" => drop(&mut parser, default_schema, &mut found),
        "ALTER" => alter(&mut parser, default_schema, &mut found),
        "RENAME" => {
            if !parser.eat("TABLE") && !parser.eat("TABLES") {
                return found;
            }
            parser.eat_any(&["IF", "EXISTS"]);
            while let Some((schema, table)) = parser.table_name(default_schema) {
                found.push((schema, table, DdlKind::Rename));
                // MariaDB: `a WAIT 5 TO b`, `a NOWAIT TO b`.
                if parser.eat("WAIT") {
                    parser.at += 1;
                }
                parser.eat("NOWAIT");
                if !parser.eat("TO") {
                    break;
                }
                let Some((schema, table)) = parser.table_name(default_schema) else {
                    break;
                };
                found.push((schema, table, DdlKind::Rename));
                if !parser.eat_comma() {
                    break;
                }
            }
        }
        "CREATE" => {
            if parser.eat("OR") && !parser.eat("REPLACE") {
                return found;
            }
            if parser.eat("TEMPORARY") {
                return found;
            }
            if !parser.eat("TABLE") {
                return found;
            }
            parser.eat_any(&["IF", "NOT", "EXISTS"]);
            if let Some((schema, table)) = parser.table_name(default_schema) {
                found.push((schema, table, DdlKind::Create));
            }
        }
        "INSERT" | "REPLACE" => {
            parser.eat_any(&["LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY", "IGNORE", "INTO"]);
            if let Some((schema, table)) = parser.table_name(default_schema) {
                found.push((schema, table, DdlKind::Statement));
            }
        }
        "UPDATE" => {
            parser.eat_any(&["LOW_PRIORITY", "IGNORE"]);
            if let Some((schema, table)) = parser.table_name(default_schema) {
                found.push((schema, table, DdlKind::Statement));
            }
        }
        "DELETE" => {
            parser.eat_any(&["LOW_PRIORITY", "QUICK", "IGNORE", "FROM"]);
            if let Some((schema, table)) = parser.table_name(default_schema) {
                found.push((schema, table, DdlKind::Statement));
            }
        }
        _ => {}
    }
    found
}

/// `DROP [TEMPORARY] TABLE [IF EXISTS] a, b …` and `DROP DATABASE s`
/// (the latter as `(s, "", Drop)`: every followed table of `s`).
fn drop(parser: &mut Parser, default_schema: &str, found: &mut Vec<Touched>) {
    if parser.eat("DATABASE") || parser.eat("SCHEMA") {
        parser.eat_any(&["IF", "EXISTS"]);
        if let Some(schema) = parser.name_part() {
            found.push((schema, String::new(), DdlKind::Drop));
        }
        return;
    }
    // A temporary table is the session's own, never the followed one.
    if parser.eat("TEMPORARY") {
        return;
    }
    if !parser.eat("TABLE") && !parser.eat("TABLES") {
        return;
    }
    parser.eat_any(&["IF", "EXISTS"]);
    loop {
        let Some((schema, table)) = parser.table_name(default_schema) else {
            return;
        };
        found.push((schema, table, DdlKind::Drop));
        if !parser.eat_comma() {
            return;
        }
    }
}

/// `ALTER [ONLINE] [IGNORE] TABLE [IF EXISTS] t …`, and the new name of
/// an `ALTER TABLE t RENAME [TO|AS] u`.
fn alter(parser: &mut Parser, default_schema: &str, found: &mut Vec<Touched>) {
    parser.eat_any(&["ONLINE", "OFFLINE", "IGNORE"]);
    if !parser.eat("TABLE") {
        return;
    }
    parser.eat_any(&["IF", "EXISTS"]);
    let Some((schema, table)) = parser.table_name(default_schema) else {
        return;
    };
    found.push((schema, table, DdlKind::Alter));
    // Look for a table rename among the alter's clauses: RENAME not
    // followed by COLUMN, INDEX or KEY.
    while parser.at < parser.tokens.len() {
        if !parser.eat("RENAME") {
            parser.at += 1;
            continue;
        }
        if parser.at_word("COLUMN") || parser.at_word("INDEX") || parser.at_word("KEY") {
            continue;
        }
        parser.eat_any(&["TO", "AS"]);
        if let Some((schema, table)) = parser.table_name(default_schema) {
            found.push((schema, table, DdlKind::Rename));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(schema: &str, table: &str, kind: DdlKind) -> Touched {
        (schema.to_owned(), table.to_owned(), kind)
    }

    #[test]
    fn truncate_in_any_spelling() {
        assert_eq!(
            touched("TRUNCATE TABLE question", "site"),
            vec![t("site", "question", DdlKind::Truncate)]
        );
        assert_eq!(
            touched("truncate `site`.`question`", "x"),
            vec![t("site", "question", DdlKind::Truncate)]
        );
        assert_eq!(
            touched("/* by the app */ Truncate Table \"Question\"", "site"),
            vec![t("site", "Question", DdlKind::Truncate)]
        );
    }

    #[test]
    fn drop_lists_each_table() {
        assert_eq!(
            touched(
                "DROP TABLE IF EXISTS `a`, s.`b` /* generated by server */",
                "site"
            ),
            vec![t("site", "a", DdlKind::Drop), t("s", "b", DdlKind::Drop)]
        );
        assert_eq!(touched("DROP TEMPORARY TABLE a", "site"), vec![]);
        assert_eq!(
            touched("DROP DATABASE `site`", "x"),
            vec![t("site", "", DdlKind::Drop)]
        );
        assert_eq!(touched("DROP INDEX i ON a", "site"), vec![]);
    }

    #[test]
    fn alter_and_its_renames() {
        assert_eq!(
            touched("ALTER TABLE `question` ADD COLUMN `extra` INT", "site"),
            vec![t("site", "question", DdlKind::Alter)]
        );
        assert_eq!(
            touched(
                "alter table question rename column title to headline",
                "site"
            ),
            vec![t("site", "question", DdlKind::Alter)]
        );
        assert_eq!(
            touched("ALTER ONLINE IGNORE TABLE site.q RENAME TO site.q2", "x"),
            vec![
                t("site", "q", DdlKind::Alter),
                t("site", "q2", DdlKind::Rename)
            ]
        );
    }

    #[test]
    fn rename_reports_both_names() {
        assert_eq!(
            touched("RENAME TABLE `a` TO `old_a`, `new_a` TO `a`", "site"),
            vec![
                t("site", "a", DdlKind::Rename),
                t("site", "old_a", DdlKind::Rename),
                t("site", "new_a", DdlKind::Rename),
                t("site", "a", DdlKind::Rename),
            ]
        );
    }

    #[test]
    fn create_counts_unless_temporary() {
        assert_eq!(
            touched("CREATE OR REPLACE TABLE a (id INT)", "s"),
            vec![t("s", "a", DdlKind::Create)]
        );
        assert_eq!(
            touched("CREATE TABLE IF NOT EXISTS `a` LIKE b", "s"),
            vec![t("s", "a", DdlKind::Create)]
        );
        assert_eq!(touched("CREATE TEMPORARY TABLE a (id INT)", "s"), vec![]);
        assert_eq!(touched("CREATE INDEX i ON a (id)", "s"), vec![]);
    }

    #[test]
    fn statement_logged_dml() {
        assert_eq!(
            touched("INSERT INTO `a` VALUES (1)", "s"),
            vec![t("s", "a", DdlKind::Statement)]
        );
        assert_eq!(
            touched("update low_priority s2.a set x = 1", "s"),
            vec![t("s2", "a", DdlKind::Statement)]
        );
        assert_eq!(
            touched("DELETE FROM `a` WHERE id = 1", "s"),
            vec![t("s", "a", DdlKind::Statement)]
        );
    }

    #[test]
    fn other_statements_touch_nothing() {
        for sql in [
            "BEGIN",
            "COMMIT",
            "SAVEPOINT x",
            "GRANT SELECT ON *.* TO u",
            "FLUSH PRIVILEGES",
            "",
        ] {
            assert_eq!(touched(sql, "s"), vec![], "{sql}");
        }
    }

    #[test]
    fn quoting_and_executable_comments() {
        assert_eq!(
            touched("TRUNCATE `we``ird`", "s"),
            vec![t("s", "we`ird", DdlKind::Truncate)]
        );
        assert_eq!(
            touched("/*!40000 ALTER TABLE `a` DISABLE KEYS */", "s"),
            vec![t("s", "a", DdlKind::Alter)]
        );
        assert_eq!(
            touched("-- note\nDROP TABLE a", "s"),
            vec![t("s", "a", DdlKind::Drop)]
        );
    }
}
