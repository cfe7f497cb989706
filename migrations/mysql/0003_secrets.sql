-- Secrets every replica must share, generated once by the first server that
-- needs one (the search cursor MAC key, when CHAJA_CURSOR_SECRET is unset).
CREATE TABLE search_secrets (
    name VARCHAR(32) NOT NULL PRIMARY KEY,
    value VARCHAR(128) NOT NULL
) ENGINE = InnoDB;
