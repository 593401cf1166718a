/* SQL's connectors (sql_connectors.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/util.h"
#include "connectors/connector_factory.h"
#include "sql/sql_connectors.h"
#include "streaming/stream_graph.h"

static const char *const known[] = { "datagen",   "filesystem",   "print",
                                     "blackhole", "upsert-kafka", "nexmark" };
static const char *const later[] = { "jdbc", "hbase", "elasticsearch", "socket" };

/* Any other connector is found by name (connectors/connector_factory.h:
 * "kafka" is libspate_kafka.so): it moves the lines the Calc reads and
 * writes (its value.format raw), the table's other options its own. */
#define NAMED "named"

static int
int_option(const struct sql_table *t, const char *key, int64_t def, int64_t *out, spate_error *err)
{
    const char *v = sql_table_option(t, key);
    char *end;

    *out = def;
    if (v == NULL)
        return 0;
    errno = 0;
    *out = strtoll(v, &end, 10);
    if (*v == '\0' || *end != '\0' || errno != 0)
        return spate_error_set(err, SPATE_EINVAL,
                               "table '%s': option '%s' = '%s' is not an "
                               "integer",
                               t->name, key, v);
    return 0;
}

static int
connector_of(const struct sql_table *t, const char **out, spate_error *err)
{
    const char *c = sql_table_option(t, "connector");

    if (c == NULL)
        return spate_error_set(err, SPATE_EINVAL,
                               "table '%s' names no connector: WITH (connector = 'datagen' | "
                               "'nexmark' | 'filesystem' | 'print' | 'blackhole' | 'kafka' | "
                               "'upsert-kafka', ...)",
                               t->name);
    for (size_t i = 0; i < ARRAY_SIZE(known); i++)
        if (strcmp(c, known[i]) == 0) {
            *out = known[i];
            return 0;
        }
    for (size_t i = 0; i < ARRAY_SIZE(later); i++)
        if (strcmp(c, later[i]) == 0)
            return spate_error_set(err, SPATE_ENOTSUP, "not supported: connector '%s' (table '%s')",
                                   c, t->name);
    *out = NAMED;
    return 0;
}

/* A named connector's lines: the table's format (format or value.format),
 * json or csv, which the Calc reads and writes. */
static int
named_format(const struct sql_table *t, enum sql_format *f, spate_error *err)
{
    const char *v = sql_table_option(t, "value.format");

    if (v == NULL)
        v = sql_table_option(t, "format");
    if (v != NULL && strcmp(v, "json") == 0)
        *f = SQL_FORMAT_JSON;
    else if (v != NULL && strcmp(v, "csv") == 0)
        *f = SQL_FORMAT_CSV;
    else
        return spate_error_set(err, SPATE_EINVAL,
                               "table '%s': connector '%s' needs 'format' (or 'value.format') "
                               "'json' or 'csv'%s%s%s",
                               t->name, sql_table_option(t, "connector"), v ? ", not '" : "",
                               v ? v : "", v ? "'" : "");
    return 0;
}

/* The table's options for a named connector: all but those SQL reads
 * itself, and value.format raw (lines). NULL-ended key, value pairs; free
 * with free() (the strings are the table's). */
static const char **
named_options(const struct sql_table *t)
{
    const char **o = xcalloc(2 * (size_t)t->noptions + 3, sizeof *o);
    size_t n = 0;

    for (int i = 0; i < t->noptions; i++) {
        const char *k = t->options[i].key;

        if (strcmp(k, "connector") == 0 || strcmp(k, "format") == 0 ||
            strcmp(k, "value.format") == 0 || strncmp(k, "csv.", 4) == 0 ||
            strncmp(k, "json.", 5) == 0 || strncmp(k, "key.json.", 9) == 0 ||
            strncmp(k, "value.json.", 11) == 0 || strcmp(k, "sink.changelog-mode") == 0)
            continue;
        o[n++] = k;
        o[n++] = t->options[i].value;
    }
    o[n++] = "value.format";
    o[n++] = "raw";
    return o;
}

static int
file_format(const struct sql_table *t, enum sql_format *f, spate_error *err)
{
    const char *v = sql_table_option(t, "format");

    if (sql_table_option(t, "path") == NULL)
        return spate_error_set(err, SPATE_EINVAL,
                               "table '%s': the filesystem connector needs 'path'", t->name);
    if (v == NULL)
        return spate_error_set(err, SPATE_EINVAL,
                               "table '%s': the filesystem connector needs 'format' ('csv' or "
                               "'json')",
                               t->name);
    if (strcmp(v, "csv") == 0)
        *f = SQL_FORMAT_CSV;
    else if (strcmp(v, "json") == 0)
        *f = SQL_FORMAT_JSON;
    else
        return spate_error_set(err, SPATE_ENOTSUP,
                               "not supported: format '%s' (table '%s'): "
                               "csv or json",
                               v, t->name);
    return 0;
}

/* A partitioned table (PARTITIONED BY): a filesystem table that appends,
 * a column left for the files. Flink's partition commit and rolling
 * options are refused: spate rolls and commits each bucket's files at
 * every checkpoint (or at the end of input), and writes no success file. */
static int
partition_check(const struct sql_table *t, const char *c, spate_error *err)
{
    static const char *const refused[] = { "sink.partition-commit.", "partition.time-extractor.",
                                           "sink.rolling-policy." };

    if (t->npartition == 0)
        return 0;
    if (strcmp(c, "filesystem") != 0 || sql_connector_upsert(t))
        return spate_error_set(err, SPATE_ENOTSUP,
                               "not supported: PARTITIONED BY (table '%s') on %s: the "
                               "filesystem connector's appending sink writes partition folders",
                               t->name,
                               strcmp(c, "filesystem") == 0
                                   ? "an upsert filesystem table"
                                   : "another connector than 'filesystem'");
    if (t->npartition >= t->ncols)
        return spate_error_set(err, SPATE_EINVAL,
                               "table '%s': every column is a partition column: its files "
                               "would hold nothing",
                               t->name);
    for (int i = 0; i < t->noptions; i++)
        for (size_t k = 0; k < ARRAY_SIZE(refused); k++)
            if (strncmp(t->options[i].key, refused[k], strlen(refused[k])) == 0)
                return spate_error_set(err, SPATE_ENOTSUP,
                                       "not supported: option '%s' (table '%s'): the filesystem "
                                       "sink rolls and commits each partition's files at every "
                                       "checkpoint, and writes no success file",
                                       t->options[i].key, t->name);
    return 0;
}

/* ---- upsert sinks ---- */

bool
sql_connector_upsert(const struct sql_table *t)
{
    const char *c = sql_table_option(t, "connector");
    const char *mode = sql_table_option(t, "sink.changelog-mode");

    return c != NULL && (strcmp(c, "upsert-kafka") == 0 ||
                         (strcmp(c, "filesystem") == 0 && mode && strcmp(mode, "upsert") == 0));
}

bool
sql_connector_keyed(const struct sql_table *t)
{
    const char *c = sql_table_option(t, "connector");

    if (sql_connector_upsert(t))
        return true;
    for (size_t i = 0; c != NULL && i < ARRAY_SIZE(known); i++)
        if (strcmp(c, known[i]) == 0)
            return false;
    return c != NULL && sql_table_option(t, "key.fields") != NULL;
}

/* A named connector's key.fields (Flink's: columns separated by ';'):
 * columns of t, in JSON lines. */
static int
key_fields_check(const struct sql_table *t, spate_error *err)
{
    const char *v = sql_table_option(t, "key.fields");
    enum sql_format f;
    int rc;

    if (v == NULL)
        return 0;
    if ((rc = named_format(t, &f, err)) != 0)
        return rc;
    if (f != SQL_FORMAT_JSON)
        return spate_error_set(err, SPATE_ENOTSUP,
                               "not supported: 'key.fields' with rows in CSV (table '%s'): "
                               "'value.format' = 'json'",
                               t->name);
    for (const char *p = v;; p++) {
        const char *end = strchr(p, ';');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        bool found = false;

        for (int i = 0; i < t->ncols && !found; i++)
            found = strlen(t->cols[i].name) == n && strncmp(t->cols[i].name, p, n) == 0;
        if (!found)
            return spate_error_set(err, SPATE_EINVAL,
                                   "table '%s': 'key.fields' names '%.*s', which is not one of "
                                   "its columns (names separated by ';')",
                                   t->name, (int)n, p);
        if (end == NULL)
            return 0;
        p = end;
    }
}

/* An upsert sink's table: a PRIMARY KEY, JSON values, a key format the
 * sink writes (connectors/changelog_line.h). */
static int
upsert_check(const struct sql_table *t, const char *c, spate_error *err)
{
    const char *mode = sql_table_option(t, "sink.changelog-mode");
    const char *kf = sql_table_option(t, "key.format");
    const char *inc = sql_table_option(t, "value.fields-include");
    bool kafka = strcmp(c, "upsert-kafka") == 0;
    enum sql_format f;
    int rc;

    if (mode != NULL && strcmp(c, "filesystem") != 0)
        return spate_error_set(err, SPATE_EINVAL,
                               "table '%s': 'sink.changelog-mode' is the filesystem connector's "
                               "(an upsert Kafka table is connector 'upsert-kafka')",
                               t->name);
    if (mode != NULL && strcmp(mode, "upsert") != 0 && strcmp(mode, "insert-only") != 0)
        return spate_error_set(err, SPATE_EINVAL,
                               "table '%s': 'sink.changelog-mode' is 'insert-only' or 'upsert', "
                               "not '%s'",
                               t->name, mode);
    if (!sql_connector_upsert(t))
        return 0;
    if (t->npk == 0)
        return spate_error_set(err, SPATE_EINVAL,
                               "table '%s': %s needs a PRIMARY KEY (...) NOT ENFORCED: the key "
                               "its rows are updated and deleted by",
                               t->name,
                               kafka ? "an 'upsert-kafka' table"
                                     : "a filesystem table with 'sink.changelog-mode' = 'upsert'");
    if ((rc = kafka ? named_format(t, &f, err) : file_format(t, &f, err)) != 0)
        return rc;
    if (f != SQL_FORMAT_JSON)
        return spate_error_set(err, SPATE_ENOTSUP,
                               "not supported: an upsert sink's rows in CSV (table '%s'): "
                               "'%s' = 'json'",
                               t->name, kafka ? "value.format" : "format");
    if (kafka && sql_table_option(t, "key.fields") != NULL)
        return spate_error_set(err, SPATE_EINVAL,
                               "table '%s': an 'upsert-kafka' table's key is its PRIMARY KEY: "
                               "no 'key.fields'",
                               t->name);
    if (kafka && kf == NULL)
        return spate_error_set(err, SPATE_EINVAL,
                               "table '%s': an 'upsert-kafka' table needs 'key.format' ('json' or "
                               "'raw')",
                               t->name);
    if (kafka && strcmp(kf, "json") != 0 && strcmp(kf, "raw") != 0)
        return spate_error_set(err, SPATE_ENOTSUP,
                               "not supported: key.format '%s' (table '%s'): 'json' or 'raw'", kf,
                               t->name);
    if (kafka && strcmp(kf, "raw") == 0 && t->npk != 1)
        return spate_error_set(err, SPATE_EINVAL,
                               "table '%s': key.format 'raw' writes one column, and the PRIMARY "
                               "KEY has %d",
                               t->name, t->npk);
    if (kafka && inc != NULL && strcmp(inc, "ALL") != 0 && strcmp(inc, "EXCEPT_KEY") != 0)
        return spate_error_set(err, SPATE_EINVAL,
                               "table '%s': 'value.fields-include' is 'ALL' or 'EXCEPT_KEY', not "
                               "'%s'",
                               t->name, inc);
    return 0;
}

/* An upsert sink's options: the named connector's (and the kafka sink's
 * own for upsert-kafka), the changelog lines' mode and the key's columns. */
static const char **
upsert_options(const struct sql_table *t, bool kafka, char **key_fields, char **path)
{
    const char **named = named_options(t);
    size_t n = 0, len = 0;
    const char **o;
    char *k;

    while (named[n] != NULL)
        n++;
    o = xcalloc(n + 7, sizeof *o);
    for (int i = 0; i < t->npk; i++)
        len += strlen(t->cols[t->pk[i]].name) + 1;
    k = xcalloc(len + 1, 1);
    for (int i = 0; i < t->npk; i++) {
        if (i > 0)
            strcat(k, ";");
        strcat(k, t->cols[t->pk[i]].name);
    }
    n = 0;
    for (size_t i = 0; named[i] != NULL; i += 2)
        if (kafka || strcmp(named[i], "value.format") == 0) {
            o[n++] = named[i];
            o[n++] = named[i + 1];
        } else if (strcmp(named[i], "path") == 0) {
            o[n++] = named[i];
            o[n++] = *path = stream_path_absolute(named[i + 1]);
        }
    o[n++] = "sink.changelog-mode";
    o[n++] = "upsert";
    o[n++] = "key.fields";
    o[n++] = k;
    free(named);
    *key_fields = k;
    return o;
}

/* The datagen fields of t, from fields.NAME.* options. */
static int
datagen_fields(const struct sql_table *t, struct sql_relation *rel, int64_t *bound,
               spate_error *err)
{
    char key[160];
    int rc = 0;

    rel->datagen = xcalloc((size_t)t->ncols + 1, sizeof *rel->datagen);
    *bound = 0;
    for (int i = 0; i < t->ncols && rc == 0; i++) {
        struct sql_datagen_field *f = &rel->datagen[i];
        const struct sql_type *ty = &t->cols[i].type;
        const char *kind, *nr;
        int64_t dmin = 0, dmax = 1000;

        snprintf(key, sizeof key, "fields.%s.kind", t->cols[i].name);
        kind = sql_table_option(t, key);
        if (kind != NULL && strcmp(kind, "sequence") != 0 && strcmp(kind, "random") != 0)
            return spate_error_set(err, SPATE_EINVAL,
                                   "table '%s': '%s' is 'random' or 'sequence', not '%s'", t->name,
                                   key, kind);
        f->sequence = kind != NULL && strcmp(kind, "sequence") == 0;
        if (ty->id == SQL_INT) {
            dmin = INT32_MIN;
            dmax = INT32_MAX;
        } else if (ty->id == SQL_BIGINT) {
            dmin = INT64_MIN / 2;
            dmax = INT64_MAX / 2;
        } else if (ty->id == SQL_DECIMAL) {
            dmax = sql_pow10(ty->precision) - 1;
        } else if (ty->id == SQL_TIMESTAMP) {
            dmin = 1577836800000; /* 2020-01-01 */
            dmax = dmin + 86400000LL * 366;
        } else if (ty->id == SQL_DATE) {
            dmin = 18262;
            dmax = dmin + 366;
        }
#define FIELD_OPT(opt, var, def)                                  \
    snprintf(key, sizeof key, "fields.%s." opt, t->cols[i].name); \
    if ((rc = int_option(t, key, def, &f->var, err)) != 0)        \
        return rc;
        FIELD_OPT("min", min, dmin)
        FIELD_OPT("max", max, dmax)
        FIELD_OPT("length", length, 100)
        FIELD_OPT("start", start, 0)
        FIELD_OPT("end", end, INT64_MAX)
        if (f->min > f->max)
            return spate_error_set(err, SPATE_EINVAL, "table '%s': fields.%s.min > max", t->name,
                                   t->cols[i].name);
        snprintf(key, sizeof key, "fields.%s.null-rate", t->cols[i].name);
        if ((nr = sql_table_option(t, key)) != NULL) {
            char *end;

            f->null_rate = strtod(nr, &end);
            if (*end != '\0' || f->null_rate < 0 || f->null_rate > 1)
                return spate_error_set(err, SPATE_EINVAL,
                                       "table '%s': '%s' is a number from 0 to 1", t->name, key);
        }
        if (f->sequence) {
            snprintf(key, sizeof key, "fields.%s.end", t->cols[i].name);
            if (sql_table_option(t, key) == NULL || f->end < f->start)
                return spate_error_set(err, SPATE_EINVAL,
                                       "table '%s': a sequence field needs fields.%s.start and "
                                       "end (end >= start)",
                                       t->name, t->cols[i].name);
            /* A sequence bounds the source: it ends with the sequence. */
            if (*bound == 0 || f->end - f->start + 1 < *bound)
                *bound = f->end - f->start + 1;
        }
    }
    return rc;
}

/* Flink's MemorySize as the nexmark options write it: bytes, or with b,
 * kb or mb. */
static int
size_option(const struct sql_table *t, const char *key, int32_t def, int32_t *out, spate_error *err)
{
    const char *v = sql_table_option(t, key);
    long long n;
    char *end;

    *out = def;
    if (v == NULL)
        return 0;
    errno = 0;
    n = strtoll(v, &end, 10);
    if (end != v && errno == 0 && n >= 0) {
        long long unit = strcmp(end, "") == 0 || strcmp(end, "b") == 0     ? 1
                         : strcmp(end, "kb") == 0 || strcmp(end, "k") == 0 ? 1024
                         : strcmp(end, "mb") == 0 || strcmp(end, "m") == 0 ? 1024 * 1024
                                                                           : 0;

        if (unit != 0 && n <= INT32_MAX / unit) {
            *out = (int32_t)(n * unit);
            return 0;
        }
    }
    return spate_error_set(err, SPATE_EINVAL,
                           "table '%s': option '%s' = '%s' is not a size (as '200b' or '1kb')",
                           t->name, key, v);
}

static int
int32_option(const struct sql_table *t, const char *key, int32_t def, int32_t *out,
             spate_error *err)
{
    int64_t v;
    int rc = int_option(t, key, def, &v, err);

    if (rc == 0 && (v < 1 || v > INT32_MAX))
        return spate_error_set(err, SPATE_EINVAL, "table '%s': option '%s' is from 1 to %d",
                               t->name, key, INT32_MAX);
    *out = (int32_t)v;
    return rc;
}

/* The nexmark connector's options: the Nexmark repository's Flink
 * connector's (NexmarkSourceOptions), and spate's 'table' (which of its
 * events the table holds) and 'base-time'. */
static const char *const nexmark_options[] = {
    "connector",
    "table",
    "base-time",
    "events.num",
    "first-event.rate",
    "next-event.rate",
    "rate.shape",
    "rate.period",
    "rate.limited",
    "max-emit-speed",
    "person.proportion",
    "auction.proportion",
    "bid.proportion",
    "person.avg-size",
    "auction.avg-size",
    "bid.avg-size",
    "bid.hot-ratio.auctions",
    "bid.hot-ratio.bidders",
    "auction.hot-ratio.sellers",
};

/* A nexmark table: its generator's configuration, the event field of each
 * column, its event count (0: without end) and its emission rate a second
 * (0: as fast as it goes). */
static int
nexmark_source(const struct sql_table *t, struct sql_nexmark_source **out, int64_t *events,
               double *rate, spate_error *err)
{
    static const char *const kinds[] = { "person", "auction", "bid" };
    const char *table = sql_table_option(t, "table"), *next, *fast, *why;
    struct sql_nexmark_config c;
    struct sql_nexmark_gen g;
    struct sql_nexmark_source *n;
    int64_t base;
    int kind = -1, rc;

    *out = NULL;
    for (int i = 0; i < t->noptions; i++) {
        bool ok = false;

        for (size_t k = 0; k < ARRAY_SIZE(nexmark_options) && !ok; k++)
            ok = strcmp(t->options[i].key, nexmark_options[k]) == 0;
        if (!ok)
            return spate_error_set(err, SPATE_EINVAL,
                                   "table '%s': the nexmark connector has no option '%s'", t->name,
                                   t->options[i].key);
    }
    if (table == NULL)
        table = t->name; /* a table named bid, auction or person */
    for (int i = 0; i < (int)ARRAY_SIZE(kinds); i++)
        if (strcasecmp(table, kinds[i]) == 0)
            kind = i;
    if (kind < 0)
        return spate_error_set(err, SPATE_EINVAL,
                               "table '%s': the nexmark connector needs 'table' = 'bid', "
                               "'auction' or 'person'%s%s%s",
                               t->name, sql_table_option(t, "table") ? ", not '" : "",
                               sql_table_option(t, "table") ? table : "",
                               sql_table_option(t, "table") ? "'" : "");
    sql_nexmark_config_default(&c);
    if ((rc = int_option(t, "events.num", 0, events, err)) != 0 ||
        (rc = int_option(t, "first-event.rate", c.first_event_rate, &c.first_event_rate, err)) !=
            0 ||
        (rc = int_option(t, "base-time", clock_wall_ms(), &base, err)) != 0 ||
        (rc = int32_option(t, "person.proportion", c.person_proportion, &c.person_proportion,
                           err)) != 0 ||
        (rc = int32_option(t, "auction.proportion", c.auction_proportion, &c.auction_proportion,
                           err)) != 0 ||
        (rc = int32_option(t, "bid.proportion", c.bid_proportion, &c.bid_proportion, err)) != 0 ||
        (rc = int32_option(t, "bid.hot-ratio.auctions", c.hot_auction_ratio, &c.hot_auction_ratio,
                           err)) != 0 ||
        (rc = int32_option(t, "bid.hot-ratio.bidders", c.hot_bidders_ratio, &c.hot_bidders_ratio,
                           err)) != 0 ||
        (rc = int32_option(t, "auction.hot-ratio.sellers", c.hot_sellers_ratio,
                           &c.hot_sellers_ratio, err)) != 0 ||
        (rc = size_option(t, "person.avg-size", c.avg_person_size, &c.avg_person_size, err)) != 0 ||
        (rc = size_option(t, "auction.avg-size", c.avg_auction_size, &c.avg_auction_size, err)) !=
            0 ||
        (rc = size_option(t, "bid.avg-size", c.avg_bid_size, &c.avg_bid_size, err)) != 0)
        return rc;
    c.base_time_ms = base;
    if (*events < 0)
        return spate_error_set(err, SPATE_EINVAL, "table '%s': 'events.num' is not negative",
                               t->name);
    next = sql_table_option(t, "next-event.rate");
    if (next != NULL && strtoll(next, NULL, 10) != c.first_event_rate)
        return spate_error_set(err, SPATE_ENOTSUP,
                               "not supported: 'next-event.rate' other than 'first-event.rate' "
                               "(table '%s'): the generator has one rate",
                               t->name);
    if (sql_nexmark_gen_init(&g, &c, &why) != 0)
        return spate_error_set(err, SPATE_EINVAL, "table '%s': %s", t->name, why);
    sql_nexmark_gen_release(&g);
    fast = sql_table_option(t, "max-emit-speed");
    *rate = fast != NULL && strcmp(fast, "true") == 0 ? 0 : (double)c.first_event_rate;
    n = xcalloc(1, sizeof *n);
    n->config = c;
    n->kind = (enum sql_nexmark_kind)kind;
    n->fields = xcalloc((size_t)t->ncols + 1, sizeof *n->fields);
    for (int i = 0; i < t->ncols; i++) {
        static const enum sql_type_id want[] = { SQL_BIGINT, SQL_VARCHAR, SQL_TIMESTAMP };
        static const char *const names[] = { "BIGINT", "VARCHAR", "TIMESTAMP(3)" };
        enum sql_nexmark_value v;
        int f = sql_nexmark_field_find(n->kind, t->cols[i].name, &v);

        if (f < 0) {
            rc = spate_error_set(
                err, SPATE_EINVAL, "table '%s': column '%s' is no field of a nexmark %s (%s)",
                t->name, t->cols[i].name, kinds[kind], sql_nexmark_field_names(n->kind));
            break;
        }
        if (t->cols[i].type.id != want[v]) {
            char b[32];

            rc = spate_error_set(err, SPATE_EINVAL,
                                 "table '%s': column '%s' is %s, not %s, in a nexmark %s", t->name,
                                 t->cols[i].name, names[v], sql_type_name(&t->cols[i].type, b),
                                 kinds[kind]);
            break;
        }
        n->fields[i] = f;
    }
    if (rc != 0) {
        sql_nexmark_source_free(n);
        return rc;
    }
    *out = n;
    return 0;
}

int
sql_connector_check(const struct sql_table *t, spate_error *err)
{
    struct sql_relation rel = { 0 };
    enum sql_format f;
    const char *c;
    int64_t v;
    int rc;

    if ((rc = connector_of(t, &c, err)) != 0)
        return rc;
    if ((rc = upsert_check(t, c, err)) != 0)
        return rc;
    if ((rc = partition_check(t, c, err)) != 0)
        return rc;
    if (strcmp(c, "upsert-kafka") == 0) {
        const struct connector_plugin *plugin;

        if ((rc = connector_factory_find("kafka", &plugin, err)) != 0)
            return spate_error_wrap(err, "table '%s'", t->name);
        return 0;
    }
    if (strcmp(c, "filesystem") == 0) {
        const char *delim = sql_table_option(t, "csv.field-delimiter");

        if (delim != NULL && (strlen(delim) != 1 || *delim == '"' || *delim == '\n'))
            return spate_error_set(err, SPATE_EINVAL,
                                   "table '%s': 'csv.field-delimiter' is one character, not a "
                                   "quote or a newline",
                                   t->name);
        return file_format(t, &f, err);
    }
    if (strcmp(c, NAMED) == 0) {
        const struct connector_plugin *plugin;

        if ((rc = connector_factory_find(sql_table_option(t, "connector"), &plugin, err)) != 0)
            return spate_error_wrap(err, "table '%s'", t->name);
        if ((rc = key_fields_check(t, err)) != 0)
            return rc;
        return named_format(t, &f, err);
    }
    if (strcmp(c, "nexmark") == 0) {
        struct sql_nexmark_source *n;
        double rate;

        rc = nexmark_source(t, &n, &v, &rate, err);
        sql_nexmark_source_free(n);
        return rc;
    }
    if (strcmp(c, "datagen") == 0) {
        if ((rc = int_option(t, "rows-per-second", 10000, &v, err)) != 0 ||
            (rc = int_option(t, "number-of-rows", 0, &v, err)) != 0)
            return rc;
        rc = datagen_fields(t, &rel, &v, err);
        free(rel.datagen);
        return rc;
    }
    return 0;
}

int
sql_connector_source(struct spate_env *env, const struct sql_table *t, struct sql_relation *rel,
                     spate_error *err)
{
    const char *c;
    int rc;

    if ((rc = connector_of(t, &c, err)) != 0)
        return rc;
    if (strcmp(c, "filesystem") == 0) {
        const char *delim = sql_table_option(t, "csv.field-delimiter");
        const char *ignore = sql_table_option(t, "csv.ignore-parse-errors");

        if ((rc = file_format(t, &rel->format, err)) != 0)
            return rc;
        if (rel->format == SQL_FORMAT_JSON)
            ignore = sql_table_option(t, "json.ignore-parse-errors");
        if (delim != NULL && strlen(delim) != 1)
            return spate_error_set(err, SPATE_EINVAL,
                                   "table '%s': 'csv.field-delimiter' is one character", t->name);
        rel->csv_delimiter = delim ? delim[0] : ',';
        rel->ignore_parse_errors = ignore != NULL && strcmp(ignore, "true") == 0;
        rel->stream = spate_source_text_file(env, sql_table_option(t, "path"));
        return 0;
    }
    if (strcmp(c, NAMED) == 0) {
        const char **o = named_options(t);
        const char *ignore = sql_table_option(t, "json.ignore-parse-errors");

        if ((rc = named_format(t, &rel->format, err)) != 0) {
            free(o);
            return rc;
        }
        if (rel->format == SQL_FORMAT_CSV)
            ignore = sql_table_option(t, "csv.ignore-parse-errors");
        rel->ignore_parse_errors = ignore != NULL && strcmp(ignore, "true") == 0;
        rel->csv_delimiter = ',';
        rel->stream =
            spate_from_source(env, sql_table_option(t, "connector"), spate_type_string(), o);
        free(o);
        return 0;
    }
    if (strcmp(c, "datagen") == 0) {
        int64_t rate, rows, bound;
        struct spate_stream *s;

        if ((rc = int_option(t, "rows-per-second", 10000, &rate, err)) != 0 ||
            (rc = int_option(t, "number-of-rows", 0, &rows, err)) != 0 ||
            (rc = datagen_fields(t, rel, &bound, err)) != 0)
            return rc;
        if (rate < 0 || rows < 0)
            return spate_error_set(err, SPATE_EINVAL,
                                   "table '%s': rows-per-second and number-of-rows are not "
                                   "negative",
                                   t->name);
        if (bound > 0 && (rows == 0 || bound < rows))
            rows = bound;
        s = stream_node_new(env, OP_SOURCE_GENERATOR, NULL, spate_type_int64());
        s->conn.generator = (struct generator_source_config){ spate_type_int64(), NULL,
                                                              (uint64_t)rows, (double)rate };
        rel->stream = s;
        rel->format = SQL_FORMAT_DATAGEN;
        rel->datagen_seed = 0x5ba7e5ULL;
        return 0;
    }
    if (strcmp(c, "nexmark") == 0) {
        int64_t events;
        double rate;
        struct spate_stream *s;

        if ((rc = nexmark_source(t, &rel->nexmark, &events, &rate, err)) != 0)
            return rc;
        /* The generator's records are event numbers; the Calc makes each
         * event and keeps those of the table's kind. */
        s = stream_node_new(env, OP_SOURCE_GENERATOR, NULL, spate_type_int64());
        s->conn.generator =
            (struct generator_source_config){ spate_type_int64(), NULL, (uint64_t)events, rate };
        rel->stream = s;
        rel->format = SQL_FORMAT_NEXMARK;
        return 0;
    }
    if (strcmp(c, "upsert-kafka") == 0)
        return spate_error_set(err, SPATE_ENOTSUP,
                               "not supported: reading an upsert-kafka table (table '%s'): it is "
                               "a sink here",
                               t->name);
    return spate_error_set(err, SPATE_EINVAL,
                           "table '%s': connector '%s' is a sink: it cannot "
                           "be read",
                           t->name, c);
}

int
sql_connector_sink_format(const struct sql_table *t, enum sql_format *format, spate_error *err)
{
    const char *c;
    int rc;

    if ((rc = connector_of(t, &c, err)) != 0)
        return rc;
    if (strcmp(c, "filesystem") == 0)
        return file_format(t, format, err);
    if (strcmp(c, NAMED) == 0 || strcmp(c, "upsert-kafka") == 0)
        return named_format(t, format, err);
    if (strcmp(c, "print") == 0) {
        *format = SQL_FORMAT_PRINT;
        return 0;
    }
    if (strcmp(c, "blackhole") == 0) {
        *format = SQL_FORMAT_NONE;
        return 0;
    }
    return spate_error_set(err, SPATE_EINVAL,
                           "table '%s': connector '%s' is a source: it cannot be written", t->name,
                           c);
}

int
sql_connector_sink(struct spate_env *env, const struct sql_table *t, struct spate_stream *in,
                   spate_error *err)
{
    const char *c;
    int rc;

    UNUSED(env);
    if ((rc = connector_of(t, &c, err)) != 0)
        return rc;
    if (sql_connector_upsert(t)) {
        bool kafka = strcmp(c, "upsert-kafka") == 0;
        char *key_fields, *path = NULL;
        const char **o = upsert_options(t, kafka, &key_fields, &path);
        struct spate_stream *s = spate_sink_to(in, kafka ? "kafka" : "upsert-filesystem", o);

        spate_name(s, t->name);
        if (!kafka)
            spate_set_parallelism(s, 1); /* one file holds every key */
        free(key_fields);
        free(path);
        free(o);
    } else if (strcmp(c, "filesystem") == 0) {
        struct spate_stream *s = spate_sink_text_file(in, sql_table_option(t, "path"));

        /* A partitioned table's lines are led by their bucket (the Calc's
         * partition path). */
        s->conn.file_sink.bucketed = t->npartition > 0;
        spate_name(s, t->name);
    } else if (strcmp(c, "print") == 0)
        spate_name(spate_sink_print(in), t->name);
    else if (strcmp(c, NAMED) == 0) {
        const char **o = named_options(t);
        size_t n = 0;

        if (sql_connector_keyed(t)) {
            /* Keyed lines: the Calc's are +I changelog lines. */
            while (o[n] != NULL)
                n++;
            o = xrealloc(o, (n + 3) * sizeof *o);
            o[n] = "sink.changelog-mode";
            o[n + 1] = "upsert";
            o[n + 2] = NULL;
        }
        spate_name(spate_sink_to(in, sql_table_option(t, "connector"), o), t->name);
        free(o);
    }
    return 0;
}
