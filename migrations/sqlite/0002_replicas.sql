-- See migrations/mysql/0002_replicas.sql.
CREATE TABLE search_replicas (
    replica_id TEXT NOT NULL PRIMARY KEY,
    applied_seq INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE search_outbox_pruned (
    id INTEGER NOT NULL PRIMARY KEY,
    pruned_through INTEGER NOT NULL
);

INSERT INTO search_outbox_pruned (id, pruned_through) VALUES (1, 0);
