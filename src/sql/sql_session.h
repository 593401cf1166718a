/* A SQL session (Flink's TableEnvironment as the SQL client drives it): a
 * catalog, the settings SET changes (a copy of the client's
 * configuration: parallelism.default, execution.checkpointing.*,
 * table.exec.state.ttl, pipeline.name), and the statements of scripts run
 * in order — DDL, SHOW TABLES, DESCRIBE, SET and RESET, EXPLAIN, and
 * INSERT INTO and SELECT, each one job run by the executor the client
 * installs (the mini cluster, or a cluster over REST). An error stops the
 * script, never the session. One thread (the client's). */
#ifndef SPATE_SQL_SQL_SESSION_H
#define SPATE_SQL_SQL_SESSION_H

#include <stdbool.h>
#include <stdio.h>

#include <spate/spate.h>

#include "core/config.h"
#include "streaming/stream_graph.h"

struct sql_session;

struct sql_session_options {
    const struct config *conf; /* copied */
    /* Runs a job (its graph built from the session's environment); NULL:
     * plans only (INSERT and SELECT say they cannot run). */
    struct executor executor;
    FILE *out; /* results of SHOW, DESCRIBE, EXPLAIN, SET and DDL */
    /* Jobs run on a cluster: a SELECT's rows would print on its
     * TaskManagers, not here, so a SELECT without INSERT is refused. */
    bool remote;
};

struct sql_session *sql_session_new(const struct sql_session_options *o);
void sql_session_free(struct sql_session *s);
/* Runs script's statements in order, stopping at the first error (err:
 * where and why). */
int sql_session_run(struct sql_session *s, const char *script, spate_error *err);
/* Whether a statement set is open (BEGIN STATEMENT SET without its END). */
bool sql_session_in_set(const struct sql_session *s);
/* The session's configuration (with what SET changed). */
const struct config *sql_session_config(const struct sql_session *s);

#endif
