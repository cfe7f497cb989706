-- See migrations/mysql/0003_secrets.sql.
CREATE TABLE search_secrets (
    name TEXT NOT NULL PRIMARY KEY,
    value TEXT NOT NULL
);
