/* The connectors a SQL table names (WITH (connector = '...')), behind the
 * functions the planner calls: datagen, filesystem (CSV and JSON lines as
 * source, and the exactly-once file sink), print and blackhole, with
 * Flink's option names; any other name is a connector found by name
 * (streaming's OP_SOURCE_CONNECTOR and OP_SINK_CONNECTOR: "kafka" is
 * libspate_kafka.so) carrying the lines the Calc reads and writes. Client
 * thread. */
#ifndef SPATE_SQL_SQL_CONNECTORS_H
#define SPATE_SQL_SQL_CONNECTORS_H

#include <stdbool.h>

#include <spate/spate.h>

#include "sql/sql_catalog.h"
#include "sql/sql_planner.h"

/* Checks a CREATE TABLE's options (a connector that exists, its required
 * options, values that read), so that errors come at CREATE, not later. */
int sql_connector_check(const struct sql_table *t, spate_error *err);

/* The source of table t in env: rel->stream and the format its records
 * have for the Calc behind it. */
int sql_connector_source(struct spate_env *env, const struct sql_table *t, struct sql_relation *rel,
                         spate_error *err);

/* The format a Calc writes for table t's sink. */
int sql_connector_sink_format(const struct sql_table *t, enum sql_format *format, spate_error *err);
/* Whether table t's sink takes updates: upsert-kafka, a filesystem table
 * with 'sink.changelog-mode' = 'upsert' (its Calc writes changelog lines,
 * connectors/changelog_line.h; the sink keys them by the PRIMARY KEY). */
bool sql_connector_upsert(const struct sql_table *t);
/* Whether table t's sink gets changelog lines from its Calc: an upsert
 * sink, or a connector found by name with 'key.fields' (Flink's: the
 * columns written as each record's key, separated by ';'; `key.format`
 * json or raw, `value.fields-include`). */
bool sql_connector_keyed(const struct sql_table *t);
/* The sink of table t behind in (lines, or nothing for blackhole). */
int sql_connector_sink(struct spate_env *env, const struct sql_table *t, struct spate_stream *in,
                       spate_error *err);

#endif
