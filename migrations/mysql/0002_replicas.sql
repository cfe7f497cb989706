-- Outbox retention: every replica records how far it has applied the
-- outbox; rows every live replica has applied can be pruned. The prune
-- position tells a replica that comes back too late that it must rebuild.
CREATE TABLE search_replicas (
    replica_id VARCHAR(64) NOT NULL PRIMARY KEY,
    applied_seq BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
) ENGINE = InnoDB;

CREATE TABLE search_outbox_pruned (
    id INT NOT NULL PRIMARY KEY,
    pruned_through BIGINT NOT NULL
) ENGINE = InnoDB;

INSERT INTO search_outbox_pruned (id, pruned_through) VALUES (1, 0);
