/* The DataStream API's building calls (include/spate/spate.h) and the
 * StreamGraph they make (stream_graph.h). A misuse is recorded once in the
 * environment and reported by spate_execute; the calls then keep returning
 * usable handles so that nested calls never see NULL. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/util.h"
#include "streaming/job_graph.h"
#include "streaming/stream_graph.h"
#include "streaming/types.h"

/* ---- environment ---- */

struct spate_env *
env_new(const struct config *conf, const struct executor *executor)
{
    struct spate_env *env = xcalloc(1, sizeof *env);
    int64_t v;

    env->conf = conf;
    env->parallelism = 1;
    env->max_parallelism = 128;
    env->buffer_timeout_ms = 5;
    env->checkpoint_mode = -1;
    if (conf != NULL) {
        config_get_duration_ms(conf, CFG(EXECUTION_BUFFER_TIMEOUT), &env->buffer_timeout_ms, NULL);
        if (config_get_int(conf, CFG(PARALLELISM_DEFAULT), &v, NULL) == 0)
            env->parallelism = (int)v;
        if (config_get_int(conf, CFG(PIPELINE_MAX_PARALLELISM), &v, NULL) == 0)
            env->max_parallelism = (int)v;
    }
    if (executor != NULL)
        env->executor = *executor;
    return env;
}

/* What a node owns. */
static void
stream_node_free_contents(struct spate_stream *n)
{
    for (int i = 0; i < n->nstates; i++)
        free(n->states[i].name);
    free(n->states);
    free(n->tag);
    if (n->kind == OP_WINDOW)
        free(n->opconf.window.late_tag);
    else if (n->kind == OP_SQL_CALC || n->kind == OP_SQL_AGG || n->kind == OP_SQL_JOIN ||
             n->kind == OP_SQL_RANK || n->kind == OP_SQL_OVER || n->kind == OP_SQL_LOOKUP_JOIN)
        free(n->opconf.sql.program);
    free(n->union_inputs);
    free(n->name);
    free(n->uid);
    free(n->slot_sharing_group);
    free(n->params);
    if (n->kind == OP_SOURCE_COLLECTION)
        free(n->conn.collection.records);
    else if (n->kind == OP_SOURCE_SOCKET)
        free(n->conn.socket.host);
    else if (n->kind == OP_SOURCE_FILE)
        free(n->conn.file_source.path);
    else if (n->kind == OP_SINK_FILE)
        file_sink_config_release(&n->conn.file_sink);
    else if (n->kind == OP_SOURCE_CONNECTOR || n->kind == OP_SINK_CONNECTOR)
        named_connector_release(&n->conn.named);
}

static void
node_free(struct spate_stream *n)
{
    stream_node_free_contents(n);
    free(n);
}

void
env_free(struct spate_env *env)
{
    if (env == NULL)
        return;
    for (size_t i = 0; i < env->nnodes; i++)
        node_free(env->nodes[i]);
    for (size_t i = 0; i < env->ntypes; i++)
        types_free(env->types[i]);
    for (size_t i = 0; i < env->ntags; i++)
        free(env->tags[i].name);
    free(env->nodes);
    free(env->types);
    free(env->tags);
    free(env);
}

int
env_fail(struct spate_env *env, const char *fmt, ...)
{
    va_list ap;

    if (env->error.code != 0)
        return SPATE_EINVAL;
    va_start(ap, fmt);
    spate_error_setv(&env->error, SPATE_EINVAL, fmt, ap);
    va_end(ap);
    return SPATE_EINVAL;
}

bool
env_failed(const struct spate_env *env)
{
    return env->error.code != 0;
}

const spate_error *
spate_env_error(const spate_env *env)
{
    return env->error.code != 0 ? &env->error : NULL;
}

void
spate_env_set_parallelism(spate_env *env, int parallelism)
{
    if (parallelism < 1 || parallelism > 32768)
        env_fail(env, "parallelism %d is not within 1 to 32768", parallelism);
    else
        env->parallelism = parallelism;
}

int
spate_env_parallelism(const spate_env *env)
{
    return env->parallelism;
}

void
spate_env_set_max_parallelism(spate_env *env, int max_parallelism)
{
    if (max_parallelism < 1 || max_parallelism > 32768)
        env_fail(env, "max parallelism %d is not within 1 to 32768", max_parallelism);
    else
        env->max_parallelism = max_parallelism;
}

void
spate_env_set_buffer_timeout(spate_env *env, int64_t ms)
{
    if (ms < 0)
        env_fail(env, "buffer timeout %lld ms is negative", (long long)ms);
    else
        env->buffer_timeout_ms = ms;
}

void
spate_env_enable_checkpointing(spate_env *env, int64_t interval_ms, bool exactly_once)
{
    if (interval_ms < 10)
        env_fail(env, "checkpoint interval %lld ms is below the minimum of 10 ms",
                 (long long)interval_ms);
    else {
        env->checkpoint_interval_ms = interval_ms;
        env->checkpoint_mode = exactly_once ? 1 : 0;
    }
}

void
spate_env_disable_chaining(spate_env *env)
{
    env->chaining_disabled = true;
}

const spate_type *
env_own_type(spate_env *env, struct spate_type *t)
{
    xgrow((void **)&env->types, &env->types_cap, env->ntypes + 1, sizeof *env->types);
    env->types[env->ntypes++] = t;
    return t;
}

const spate_type *
spate_type_tuple(spate_env *env, int n, const spate_type *const *fields)
{
    if (n < 1 || n > 64 || fields == NULL) {
        env_fail(env, "a tuple needs 1 to 64 fields, got %d", n);
        return spate_type_int64();
    }
    for (int i = 0; i < n; i++) {
        if (fields[i] == NULL) {
            env_fail(env, "tuple field %d has no type", i);
            return spate_type_int64();
        }
    }
    return env_own_type(env, types_new_tuple(n, fields));
}

const spate_type *
spate_type_custom(spate_env *env, const spate_type_def *def)
{
    if (def == NULL || def->name == NULL || def->size == 0) {
        env_fail(env, "a user type needs a name and a size");
        return spate_type_int64();
    }
    if ((def->serialize == NULL) != (def->deserialize == NULL)) {
        env_fail(env, "user type '%s' needs both serialize and deserialize, or neither", def->name);
        return spate_type_int64();
    }
    return env_own_type(env, types_new_custom(def));
}

/* A node's name as errors show it. */
static const char *
node_name(const struct spate_stream *n)
{
    return n->name ? n->name : operator_kind_name(n->kind);
}

/* Whether op sends records to the side output named tag: process
 * functions may send to any, a window to its late data tag and, with a
 * process window function, to any. */
static bool
sends_to(const struct spate_stream *op, const char *tag)
{
    switch (op->kind) {
    case OP_PROCESS:
    case OP_CO_PROCESS:
    case OP_BROADCAST_PROCESS:
        return true;
    case OP_WINDOW:
        return op->opconf.window.process != NULL ||
               (op->opconf.window.late_tag != NULL && strcmp(op->opconf.window.late_tag, tag) == 0);
    default:
        return false;
    }
}

/* Every side output comes out of an operator that sends records there:
 * else it would stay empty, with no word why. */
static int
check_side_outputs(spate_env *env)
{
    for (size_t i = 0; i < env->nnodes; i++) {
        const struct spate_stream *n = env->nodes[i], *op = n->input;

        if (n->kind != OP_SIDE_OUTPUT || sends_to(op, n->tag))
            continue;
        if (op->kind == OP_WINDOW)
            return env_fail(env,
                            "side output '%s' of window '%s': the window sends nothing there (its "
                            "late data goes to %s%s%s, and it has no process window function)",
                            n->tag, node_name(op), op->opconf.window.late_tag ? "'" : "",
                            op->opconf.window.late_tag ? op->opconf.window.late_tag
                                                       : "no side output",
                            op->opconf.window.late_tag ? "'" : "");
        return env_fail(env,
                        "side output '%s' of operator '%s': a %s sends no side outputs (process "
                        "functions and windows do)",
                        n->tag, node_name(op), operator_kind_name(op->kind));
    }
    return 0;
}

int
spate_execute(spate_env *env, const char *job_name)
{
    struct job_graph *jg = NULL;
    int rc;

    if (env_failed(env) || check_side_outputs(env) != 0)
        return env->error.code;
    if ((rc = job_graph_build(env, job_name, &jg, &env->error)) != 0)
        return rc;
    if (env->executor.execute == NULL)
        rc = spate_error_set(&env->error, SPATE_ESTATE,
                             "no executor to run the job: run it with 'spate run'");
    else {
        env->executions++;
        rc = env->executor.execute(env->executor.data, env, jg, &env->error);
    }
    job_graph_free(jg);
    return rc;
}

/* ---- nodes ---- */

static const char *const operator_names[] = {
    [OP_SOURCE_COLLECTION] = "Source: Collection",
    [OP_SOURCE_GENERATOR] = "Source: Generator",
    [OP_SOURCE_SOCKET] = "Source: Socket Stream",
    [OP_SOURCE_FILE] = "Source: File",
    [OP_SOURCE] = "Source: Custom Source",
    [OP_MAP] = "Map",
    [OP_FILTER] = "Filter",
    [OP_FLAT_MAP] = "Flat Map",
    [OP_PROCESS] = "Process",
    [OP_REDUCE] = "Keyed Reduce",
    [OP_SUM] = "Keyed Aggregation",
    [OP_SINK_PRINT] = "Sink: Print to Std. Out",
    [OP_SINK_FILE] = "Sink: Text File",
    [OP_SINK] = "Sink: Unnamed",
    [OP_SINK_API] = "Sink: Custom Sink",
    [OP_ASSIGN_TIMESTAMPS] = "Timestamps/Watermarks",
    [OP_WINDOW] = "Window",
    [OP_PARTITION] = "Partition",
    [OP_SIDE_OUTPUT] = "Side Output",
    [OP_UNION] = "Union",
    [OP_CONNECTED] = "Connected",
    [OP_SOURCE_CONNECTOR] = "Source: Connector",
    [OP_SINK_CONNECTOR] = "Sink: Connector",
    [OP_CO_MAP] = "Co-Map",
    [OP_CO_PROCESS] = "Co-Process",
    [OP_BROADCAST_PROCESS] = "Broadcast Process",
    [OP_SQL_CALC] = "Calc",
    [OP_SQL_AGG] = "GroupAggregate",
    [OP_SQL_JOIN] = "Join",
    [OP_SQL_RANK] = "Rank",
    [OP_SQL_OVER] = "OverAggregate",
    [OP_SQL_LOOKUP_JOIN] = "LookupJoin",
};

const char *
operator_kind_name(enum operator_kind kind)
{
    return operator_names[kind];
}

const char *
ship_strategy_name(enum ship_strategy kind)
{
    static const char *const names[] = {
        [SHIP_FORWARD] = "FORWARD", [SHIP_REBALANCE] = "REBALANCE", [SHIP_RESCALE] = "RESCALE",
        [SHIP_SHUFFLE] = "SHUFFLE", [SHIP_BROADCAST] = "BROADCAST", [SHIP_GLOBAL] = "GLOBAL",
        [SHIP_HASH] = "HASH",       [SHIP_DEFAULT] = "DEFAULT",
    };
    return names[kind];
}

struct spate_stream *
stream_node_new(spate_env *env, enum operator_kind kind, struct spate_stream *input,
                const spate_type *out_type)
{
    struct spate_stream *n = xcalloc(1, sizeof *n);

    n->env = env;
    n->id = (int)env->nnodes;
    n->kind = kind;
    n->input = input;
    n->in_type = input ? input->out_type : NULL;
    n->out_type = out_type ? out_type : (input ? input->out_type : spate_type_int64());
    n->partitioner = SHIP_DEFAULT;
    n->chaining = CHAINING_ALWAYS;
    xgrow((void **)&env->nodes, &env->cap, env->nnodes + 1, sizeof *env->nodes);
    env->nodes[env->nnodes++] = n;
    return n;
}

struct spate_stream *
stream_graph_resolve(struct spate_stream *s, enum ship_strategy *part, struct key_selector *key)
{
    *part = SHIP_DEFAULT;
    *key = (struct key_selector){ KEY_NONE, NULL, -1 };
    /* The nearest virtual node decides, as in Flink. Side output nodes pass
     * through (their tag is found by stream_graph_tag). */
    while (s->kind == OP_PARTITION || s->kind == OP_SIDE_OUTPUT) {
        if (s->kind == OP_PARTITION && *part == SHIP_DEFAULT) {
            *part = s->partitioner;
            *key = s->key;
        }
        s = s->input;
    }
    return s;
}

static void
links_expand(struct spate_stream *s, int index, enum ship_strategy part, struct key_selector key,
             const char *tag, struct stream_link **links, int *n)
{
    switch (s->kind) {
    case OP_PARTITION:
        if (part == SHIP_DEFAULT) {
            part = s->partitioner;
            key = s->key;
        }
        links_expand(s->input, index, part, key, tag, links, n);
        return;
    case OP_SIDE_OUTPUT:
        links_expand(s->input, index, part, key, tag ? tag : s->tag, links, n);
        return;
    case OP_UNION:
        for (int i = 0; i < s->nunion; i++)
            links_expand(s->union_inputs[i], index, part, key, tag, links, n);
        return;
    case OP_CONNECTED:
        return; /* only co-operators read connected streams, through their inputs */
    default:
        *links = xrealloc(*links, (size_t)(*n + 1) * sizeof **links);
        (*links)[*n] = (struct stream_link){ s, part, key, tag, index };
        (*n)++;
    }
}

struct stream_link *
stream_graph_links(const struct spate_stream *n, int *count)
{
    struct stream_link *links = NULL;
    struct key_selector none = { KEY_NONE, NULL, -1 };

    *count = 0;
    if (n->input != NULL)
        links_expand(n->input, 0, SHIP_DEFAULT, none, NULL, &links, count);
    if (n->input2 != NULL)
        links_expand(n->input2, 1, SHIP_DEFAULT, none, NULL, &links, count);
    return links;
}

const char *
stream_graph_tag(const struct spate_stream *s)
{
    for (; s->kind == OP_PARTITION || s->kind == OP_SIDE_OUTPUT; s = s->input)
        if (s->kind == OP_SIDE_OUTPUT)
            return s->tag;
    return NULL;
}

int
stream_node_parallelism(const struct spate_stream *n)
{
    return n->parallelism > 0 ? n->parallelism : n->env->parallelism;
}

int
stream_node_max_parallelism(const struct spate_stream *n)
{
    return n->max_parallelism > 0 ? n->max_parallelism : n->env->max_parallelism;
}

bool
stream_node_is_source(const struct spate_stream *n)
{
    return operator_kind_is_source(n->kind);
}

bool
operator_kind_is_source(enum operator_kind kind)
{
    return kind <= OP_SOURCE_FILE || kind == OP_SOURCE_CONNECTOR || kind == OP_SOURCE;
}

void
stream_node_settings(const struct spate_stream *n, struct operator_settings *out)
{
    *out = (struct operator_settings){
        .kind = n->kind,
        .name = n->name,
        .uid = n->uid,
        .parallelism = n->parallelism,
        .max_parallelism = n->max_parallelism,
        .chaining = n->chaining,
        .in_type = n->in_type,
        .in_type2 = n->in_type2,
        .out_type = n->out_type,
        .key = n->key,
        .key2 = n->key2,
        .states = n->states,
        .nstates = n->nstates,
        .params = n->params,
        .params_len = n->params_len,
        .open = n->open,
        .close = n->close,
        .wm = n->wm,
        .conf = stream_node_conf(n),
    };
}

bool
stream_node_is_keyed(const struct spate_stream *n)
{
    return n->key.kind != KEY_NONE;
}

const void *
operator_kind_conf(enum operator_kind kind, const union connector_config *conn,
                   const union operator_config *opconf)
{
    switch (kind) {
    case OP_SOURCE_COLLECTION:
        return &conn->collection;
    case OP_SOURCE_GENERATOR:
        return &conn->generator;
    case OP_SOURCE_SOCKET:
        return &conn->socket;
    case OP_SOURCE_FILE:
        return &conn->file_source;
    case OP_SOURCE:
        return &conn->api_source;
    case OP_SINK_FILE:
        return &conn->file_sink;
    case OP_SINK_API:
        return &conn->api_sink;
    case OP_SINK_PRINT:
        return &conn->print;
    case OP_SOURCE_CONNECTOR:
    case OP_SINK_CONNECTOR:
        return &conn->named;
    case OP_MAP:
    case OP_FILTER:
    case OP_FLAT_MAP:
    case OP_SINK:
        return &opconf->function;
    case OP_PROCESS:
        return &opconf->process;
    case OP_REDUCE:
    case OP_SUM:
        return &opconf->keyed_reduce;
    case OP_CO_MAP:
    case OP_CO_PROCESS:
    case OP_BROADCAST_PROCESS:
        return &opconf->two_input;
    case OP_WINDOW:
        return &opconf->window;
    case OP_SQL_CALC:
    case OP_SQL_AGG:
    case OP_SQL_JOIN:
    case OP_SQL_RANK:
    case OP_SQL_OVER:
    case OP_SQL_LOOKUP_JOIN:
        return &opconf->sql;
    default:
        return NULL;
    }
}

const void *
stream_node_conf(const struct spate_stream *n)
{
    return operator_kind_conf(n->kind, &n->conn, &n->opconf);
}

bool
operator_kind_is_connector(enum operator_kind kind)
{
    return kind == OP_SOURCE_COLLECTION || kind == OP_SOURCE_GENERATOR ||
           kind == OP_SOURCE_SOCKET || kind == OP_SOURCE_FILE || kind == OP_SINK_PRINT ||
           kind == OP_SINK_FILE || kind == OP_SOURCE_CONNECTOR || kind == OP_SINK_CONNECTOR ||
           kind == OP_SOURCE || kind == OP_SINK_API;
}

bool
operator_kind_runs(int kind)
{
    return kind >= 0 && kind < OP_KIND_COUNT && (kind < OP_PARTITION || kind > OP_CONNECTED);
}

bool
operator_kind_is_external(enum operator_kind kind)
{
    return operator_kind_is_connector(kind) || kind == OP_SQL_CALC || kind == OP_SQL_AGG ||
           kind == OP_SQL_JOIN || kind == OP_SQL_RANK || kind == OP_SQL_OVER ||
           kind == OP_SQL_LOOKUP_JOIN;
}

/* The key selector of a keyed input, or KEY_NONE. */
static struct key_selector
input_key(struct spate_stream *in)
{
    enum ship_strategy part;
    struct key_selector key;

    stream_graph_resolve(in, &part, &key);
    if (part != SHIP_HASH)
        key.kind = KEY_NONE;
    return key;
}

static bool check(spate_env *env, bool ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool
check(spate_env *env, bool ok, const char *fmt, ...)
{
    va_list ap;

    if (ok)
        return true;
    if (env->error.code == 0) {
        va_start(ap, fmt);
        spate_error_setv(&env->error, SPATE_EINVAL, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* ---- sources ---- */

spate_stream *
spate_source_collection(spate_env *env, const spate_type *type, const void *records, size_t n)
{
    struct spate_stream *s = stream_node_new(env, OP_SOURCE_COLLECTION, NULL, type);
    struct collection_source_config *c = &s->conn.collection;
    size_t cap = 0;

    c->type = s->out_type;
    if (!check(env, type != NULL && (records != NULL || n == 0),
               "spate_source_collection needs a type and records"))
        return s;
    c->nrecords = n;
    for (size_t i = 0; i < n; i++) {
        const void *rec = (const uint8_t *)records + i * type->size;
        size_t len = types_serialize(type, rec, NULL, 0);

        xgrow((void **)&c->records, &cap, c->records_len + 4 + len, 1);
        memcpy(c->records + c->records_len, &(uint32_t){ (uint32_t)len }, 4);
        types_serialize(type, rec, c->records + c->records_len + 4, len);
        c->records_len += 4 + len;
    }
    return s;
}

spate_stream *
spate_source_strings(spate_env *env, const char *const *strings, size_t n)
{
    spate_str *recs = xcalloc(n ? n : 1, sizeof *recs);
    spate_stream *s;

    for (size_t i = 0; i < n; i++) {
        recs[i].data = strings[i] ? strings[i] : "";
        recs[i].len = strlen(recs[i].data);
    }
    s = spate_source_collection(env, spate_type_string(), recs, n);
    free(recs);
    return s;
}

spate_stream *
spate_source_generator(spate_env *env, spate_generator_fn gen, const spate_type *type,
                       uint64_t count, double rate_per_second)
{
    struct spate_stream *s = stream_node_new(env, OP_SOURCE_GENERATOR, NULL, type);

    check(env, gen != NULL && type != NULL, "spate_source_generator needs a function and a type");
    check(env, rate_per_second >= 0, "generator rate %g is negative", rate_per_second);
    s->conn.generator =
        (struct generator_source_config){ s->out_type, gen, count, rate_per_second };
    return s;
}

spate_stream *
spate_source_socket(spate_env *env, const char *host, int port)
{
    struct spate_stream *s = stream_node_new(env, OP_SOURCE_SOCKET, NULL, spate_type_string());

    check(env, host != NULL && port > 0 && port < 65536, "socket source needs a host and a port");
    s->conn.socket.host = xstrdup(host ? host : "");
    s->conn.socket.port = port;
    /* A socket has one reader, as Flink's socketTextStream. */
    s->parallelism = 1;
    return s;
}

/* A path of the job's as every process must see it: absolute, resolved
 * here, where the job was built (its arguments were given relative to
 * this process's folder), not by the JobManager or TaskManager that reads
 * or writes it. A file: URI is its path. */
char *
stream_path_absolute(const char *path)
{
    char cwd[PATH_MAX];

    if (strncmp(path, "file://", 7) == 0)
        path += 7;
    else if (strncmp(path, "file:", 5) == 0)
        path += 5;
    while (path[0] == '.' && path[1] == '/')
        path += 2;
    if (path[0] == '/' || getcwd(cwd, sizeof cwd) == NULL)
        return xstrdup(path);
    return xasprintf("%s/%s", cwd, strcmp(path, ".") == 0 ? "" : path);
}

/* Whether path is a local path or a file: URI, the only ones the file
 * source and sink read and write. */
static bool
local_path(spate_env *env, const char *path, const char *what)
{
    const char *scheme_end = strstr(path, "://");

    return check(env, scheme_end == NULL || strncmp(path, "file:", 5) == 0,
                 "%s '%s': only local files are read and written here (a path or a file: URI, "
                 "not %.*s:)",
                 what, path, (int)(scheme_end ? scheme_end - path : 0), path);
}

spate_stream *
spate_source_text_file(spate_env *env, const char *path)
{
    struct spate_stream *s = stream_node_new(env, OP_SOURCE_FILE, NULL, spate_type_string());

    if (check(env, path != NULL && *path, "text file source needs a path"))
        local_path(env, path, "text file source");
    s->conn.file_source.path = stream_path_absolute(path ? path : "");
    return s;
}

spate_stream *
spate_source_from(spate_env *env, const spate_source *source, const spate_type *type)
{
    struct spate_stream *s = stream_node_new(env, OP_SOURCE, NULL, type);

    check(env,
          source != NULL && source->enumerator != NULL && source->reader != NULL &&
              source->enumerator->create && source->enumerator->handle_split_request &&
              source->enumerator->add_split_back && source->enumerator->snapshot_state &&
              source->enumerator->close && source->reader->create && source->reader->add_split &&
              source->reader->poll_next && source->reader->snapshot_state && source->reader->close,
          "a source needs an enumerator and a reader with every function but add_reader, "
          "no_more_splits and checkpoint_complete");
    s->conn.api_source.source = source;
    return s;
}

/* The options of a named connector (spate_from_source, spate_sink_to),
 * copied into c; false with the environment failed when they are not
 * key, value pairs. */
static bool
named_connector_init(spate_env *env, struct named_connector_config *c, const char *connector,
                     const spate_type *type, const char *const *options, const char *what)
{
    size_t n = 0;

    c->type = type;
    c->connector = xstrdup(connector ? connector : "");
    if (!check(env, connector != NULL && *connector, "%s needs a connector name", what))
        return false;
    while (options != NULL && options[2 * n] != NULL) {
        if (!check(env, *options[2 * n] != '\0' && options[2 * n + 1] != NULL,
                   "%s '%s': option %zu %s", what, connector, n + 1,
                   *options[2 * n] ? "has no value (options are key, value pairs ending in NULL)"
                                   : "has an empty key"))
            return false;
        n++;
    }
    c->options = xcalloc(2 * n + 1, sizeof *c->options);
    for (size_t i = 0; i < 2 * n; i++)
        c->options[i] = xstrdup(options[i]);
    c->noptions = n;
    return true;
}

spate_stream *
spate_from_source(spate_env *env, const char *connector, const spate_type *type,
                  const char *const *options)
{
    struct spate_stream *s = stream_node_new(env, OP_SOURCE_CONNECTOR, NULL, type);

    check(env, type != NULL, "spate_from_source needs the type of the records");
    if (named_connector_init(env, &s->conn.named, connector, s->out_type, options,
                             "spate_from_source"))
        s->name = xasprintf("Source: %s", connector);
    return s;
}

spate_stream *
spate_sink_to(spate_stream *in, const char *connector, const char *const *options)
{
    struct spate_stream *n = stream_node_new(in->env, OP_SINK_CONNECTOR, in, NULL);

    if (named_connector_init(in->env, &n->conn.named, connector, n->in_type, options,
                             "spate_sink_to"))
        n->name = xasprintf("Sink: %s", connector);
    return n;
}

/* ---- transformations ---- */

static struct spate_stream *
transform(spate_stream *in, enum operator_kind kind, void *fn, const spate_type *out_type,
          const char *what)
{
    struct spate_stream *n = stream_node_new(in->env, kind, in, out_type);

    check(in->env, fn != NULL, "%s needs a function", what);
    if (kind == OP_PROCESS)
        n->opconf.process.fn = (spate_flat_map_fn)fn;
    else
        n->opconf.function.fn.any = fn;
    return n;
}

spate_stream *
spate_map(spate_stream *in, spate_map_fn fn, const spate_type *out_type)
{
    return transform(in, OP_MAP, (void *)fn, out_type, "map");
}

spate_stream *
spate_filter(spate_stream *in, spate_filter_fn fn)
{
    return transform(in, OP_FILTER, (void *)fn, NULL, "filter");
}

spate_stream *
spate_flat_map(spate_stream *in, spate_flat_map_fn fn, const spate_type *out_type)
{
    return transform(in, OP_FLAT_MAP, (void *)fn, out_type, "flat_map");
}

spate_stream *
spate_process(spate_stream *in, spate_flat_map_fn fn, const spate_type *out_type)
{
    struct spate_stream *n = transform(in, OP_PROCESS, (void *)fn, out_type, "process");

    n->key = input_key(in);
    return n;
}

static spate_stream *
key_by(spate_stream *in, struct key_selector key)
{
    struct spate_stream *n = stream_node_new(in->env, OP_PARTITION, in, NULL);

    n->partitioner = SHIP_HASH;
    n->key = key;
    return n;
}

spate_stream *
spate_key_by(spate_stream *in, spate_key_fn fn)
{
    check(in->env, fn != NULL, "key_by needs a key selector");
    return key_by(in, (struct key_selector){ KEY_FN, fn, -1 });
}

spate_stream *
spate_key_by_value(spate_stream *in)
{
    check(in->env, types_keyable(in->out_type),
          "records of type '%s' cannot be keys: give the type serialize/deserialize",
          in->out_type->name);
    return key_by(in, (struct key_selector){ KEY_VALUE, NULL, -1 });
}

spate_stream *
spate_key_by_field(spate_stream *in, int field)
{
    const spate_type *t = in->out_type;

    check(in->env, t->kind == TYPE_TUPLE && field >= 0 && field < t->nfields,
          "key_by_field(%d) needs a tuple with that field", field);
    return key_by(in, (struct key_selector){ KEY_FIELD, NULL, field });
}

static struct spate_stream *
keyed_op(spate_stream *in, enum operator_kind kind, void *fn, const char *what)
{
    struct spate_stream *n = stream_node_new(in->env, kind, in, NULL);

    if (kind == OP_REDUCE || kind == OP_SUM)
        n->opconf.keyed_reduce = (struct keyed_reduce_config){ (spate_reduce_fn)fn, -1 };
    n->key = input_key(in);
    check(in->env, n->key.kind != KEY_NONE, "%s needs a keyed stream: call spate_key_by first",
          what);
    return n;
}

spate_stream *
spate_reduce(spate_stream *keyed, spate_reduce_fn fn)
{
    check(keyed->env, fn != NULL, "reduce needs a function");
    return keyed_op(keyed, OP_REDUCE, (void *)fn, "reduce");
}

spate_stream *
spate_sum(spate_stream *keyed, int field)
{
    struct spate_stream *n = keyed_op(keyed, OP_SUM, NULL, "sum");
    const spate_type *t = n->out_type;
    const spate_type *f = t;

    if (field >= 0) {
        if (!check(keyed->env, t->kind == TYPE_TUPLE && field < t->nfields,
                   "sum(%d) needs a tuple with that field", field))
            return n;
        f = t->fields[field];
    }
    check(keyed->env, f->kind == TYPE_INT64 || f->kind == TYPE_DOUBLE,
          "sum needs an int64 or double field, not '%s'", f->name);
    n->opconf.keyed_reduce.sum_field = field;
    return n;
}

/* ---- event time ---- */

/* The strategy into n's watermark settings; false (env's error set) when it
 * is not one. */
static bool
watermark_config_set(spate_stream *n, const spate_watermark_strategy *strategy)
{
    int64_t interval = 200;

    if (!check(n->env, strategy != NULL, "a watermark strategy is needed") ||
        !check(n->env, strategy->max_out_of_orderness_ms >= 0 && strategy->idleness_ms >= 0,
               "negative out-of-orderness or idleness"))
        return false;
    if (n->env->conf != NULL)
        config_get_duration_ms(n->env->conf, CFG(PIPELINE_AUTO_WATERMARK_INTERVAL), &interval,
                               NULL);
    n->wm.set = true;
    n->wm.timestamp = strategy->timestamp;
    n->wm.watermark = strategy->watermark;
    n->wm.bound_ms = strategy->max_out_of_orderness_ms;
    n->wm.idleness_ms = strategy->idleness_ms;
    n->wm.interval_ms = interval >= 0 ? interval : 200;
    return true;
}

spate_stream *
spate_assign_timestamps_and_watermarks(spate_stream *in, const spate_watermark_strategy *strategy)
{
    struct spate_stream *n = stream_node_new(in->env, OP_ASSIGN_TIMESTAMPS, in, NULL);

    watermark_config_set(n, strategy);
    return n;
}

spate_stream *
spate_source_with_watermarks(spate_stream *source, const spate_watermark_strategy *strategy)
{
    const char *name = source->name ? source->name : operator_kind_name(source->kind);

    if (check(source->env, stream_node_is_source(source),
              "with_watermarks on '%s', which is no source: use assign_timestamps_and_watermarks",
              name) &&
        check(source->env, !source->wm.set, "a second watermark strategy for source '%s'", name))
        watermark_config_set(source, strategy);
    return source;
}

static spate_stream *
partition(spate_stream *in, enum ship_strategy kind)
{
    struct spate_stream *n = stream_node_new(in->env, OP_PARTITION, in, NULL);

    n->partitioner = kind;
    return n;
}

spate_stream *
spate_forward(spate_stream *in)
{
    return partition(in, SHIP_FORWARD);
}

spate_stream *
spate_rebalance(spate_stream *in)
{
    return partition(in, SHIP_REBALANCE);
}

spate_stream *
spate_rescale(spate_stream *in)
{
    return partition(in, SHIP_RESCALE);
}

spate_stream *
spate_shuffle(spate_stream *in)
{
    return partition(in, SHIP_SHUFFLE);
}

spate_stream *
spate_broadcast(spate_stream *in)
{
    return partition(in, SHIP_BROADCAST);
}

spate_stream *
spate_global(spate_stream *in)
{
    return partition(in, SHIP_GLOBAL);
}

/* ---- keyed state, timers, side outputs ---- */

static bool settable(spate_stream *op, const char *what);
static struct key_selector input_key(struct spate_stream *in);

static spate_stream *
declare_state(spate_stream *op, struct state_decl d, const char *what)
{
    struct state_decl *slot;

    if (!settable(op, what) || !check(op->env, d.name && *d.name, "%s needs a name", what) ||
        !check(op->env, d.ttl_ms >= 0, "%s '%s': negative TTL", what, d.name))
        return op;
    for (int i = 0; i < op->nstates; i++)
        if (!check(op->env, strcmp(op->states[i].name, d.name) != 0,
                   "state '%s' is declared twice on one operator", d.name))
            return op;
    op->states = xrealloc(op->states, (size_t)(op->nstates + 1) * sizeof *op->states);
    slot = &op->states[op->nstates++];
    *slot = d;
    slot->name = xstrdup(d.name);
    return op;
}

spate_stream *
spate_value_state(spate_stream *op, const char *name, const spate_type *type, int64_t ttl_ms)
{
    check(op->env, type != NULL, "value state '%s' needs a type", name ? name : "");
    return declare_state(
        op,
        (struct state_decl){
            (char *)name, STATE_VALUE, type, NULL, NULL, { 0 }, ttl_ms, false, SCOPE_KEYED },
        "spate_value_state");
}

spate_stream *
spate_list_state(spate_stream *op, const char *name, const spate_type *type, int64_t ttl_ms)
{
    check(op->env, type != NULL, "list state '%s' needs a type", name ? name : "");
    return declare_state(
        op,
        (struct state_decl){
            (char *)name, STATE_LIST, type, NULL, NULL, { 0 }, ttl_ms, false, SCOPE_KEYED },
        "spate_list_state");
}

spate_stream *
spate_map_state(spate_stream *op, const char *name, const spate_type *key_type,
                const spate_type *value_type, int64_t ttl_ms)
{
    check(op->env, key_type != NULL && value_type != NULL && types_keyable(key_type),
          "map state '%s' needs a key type and a value type", name ? name : "");
    return declare_state(op,
                         (struct state_decl){ (char *)name,
                                              STATE_MAP,
                                              value_type,
                                              key_type,
                                              NULL,
                                              { 0 },
                                              ttl_ms,
                                              false,
                                              SCOPE_KEYED },
                         "spate_map_state");
}

spate_stream *
spate_reducing_state(spate_stream *op, const char *name, const spate_type *type, spate_reduce_fn fn,
                     int64_t ttl_ms)
{
    check(op->env, type != NULL && fn != NULL, "reducing state '%s' needs a type and a function",
          name ? name : "");
    return declare_state(
        op,
        (struct state_decl){
            (char *)name, STATE_REDUCING, type, NULL, fn, { 0 }, ttl_ms, false, SCOPE_KEYED },
        "spate_reducing_state");
}

spate_stream *
spate_aggregating_state(spate_stream *op, const char *name, const spate_aggregate *agg,
                        int64_t ttl_ms)
{
    if (!check(op->env,
               agg != NULL && agg->acc_type && agg->out_type && agg->create && agg->add &&
                   agg->result,
               "aggregating state '%s' needs types, create, add and result", name ? name : ""))
        return op;
    return declare_state(op,
                         (struct state_decl){ (char *)name, STATE_AGGREGATING, agg->acc_type, NULL,
                                              NULL, *agg, ttl_ms, false, SCOPE_KEYED },
                         "spate_aggregating_state");
}

spate_stream *
spate_on_timer(spate_stream *op, spate_on_timer_fn fn)
{
    if (!settable(op, "spate_on_timer") ||
        !check(op->env,
               (op->kind == OP_PROCESS || op->kind == OP_CO_PROCESS) && op->key.kind != KEY_NONE,
               "spate_on_timer needs a process function on a keyed stream"))
        return op;
    if (op->kind == OP_PROCESS)
        op->opconf.process.on_timer = fn;
    else
        op->opconf.two_input.on_timer = fn;
    return op;
}

static spate_stream *
declare_list(spate_stream *op, const char *name, const spate_type *type, enum state_scope scope,
             const char *what)
{
    check(op->env, type != NULL, "%s '%s' needs a type", what, name ? name : "");
    return declare_state(
        op,
        (struct state_decl){ (char *)name, STATE_LIST, type, NULL, NULL, { 0 }, 0, false, scope },
        what);
}

spate_stream *
spate_operator_list_state(spate_stream *op, const char *name, const spate_type *type)
{
    return declare_list(op, name, type, SCOPE_OPERATOR, "spate_operator_list_state");
}

spate_stream *
spate_union_list_state(spate_stream *op, const char *name, const spate_type *type)
{
    return declare_list(op, name, type, SCOPE_UNION, "spate_union_list_state");
}

/* ---- union and connect ---- */

spate_stream *
spate_union(spate_stream *a, spate_stream *b)
{
    struct spate_stream *n = stream_node_new(a->env, OP_UNION, NULL, a->out_type);

    check(a->env, b != NULL && a->env == b->env, "union needs two streams of one job");
    check(a->env, b == NULL || types_same(a->out_type, b->out_type),
          "union needs streams of one type");
    n->union_inputs = xcalloc(2, sizeof *n->union_inputs);
    n->union_inputs[0] = a;
    n->union_inputs[1] = b ? b : a;
    n->nunion = 2;
    return n;
}

spate_stream *
spate_connect(spate_stream *a, spate_stream *b)
{
    struct spate_stream *n = stream_node_new(a->env, OP_CONNECTED, a, NULL);

    check(a->env, b != NULL && a->env == b->env, "connect needs two streams of one job");
    n->input2 = b ? b : a;
    n->in_type2 = n->input2->out_type;
    return n;
}

/* The type of the keys k selects from records of type t; NULL for a
 * key_by function's (bytes of no declared type). */
static const spate_type *
key_type(const struct key_selector *k, const spate_type *t)
{
    switch (k->kind) {
    case KEY_VALUE:
        return t;
    case KEY_FIELD:
        return t->kind == TYPE_TUPLE && k->field < t->nfields ? t->fields[k->field] : NULL;
    default:
        return NULL;
    }
}

/* Keyed inputs of a two-input operator share one key type, as Flink's
 * ConnectedStreams require: the current key reads alike from either. */
static void
check_key_types(struct spate_stream *n, const char *what)
{
    const spate_type *k1 = key_type(&n->key, n->in_type), *k2 = key_type(&n->key2, n->in_type2);
    char a[256], b[256];

    if (k1 == NULL || k2 == NULL || types_same(k1, k2))
        return;
    types_describe(k1, a, sizeof a);
    types_describe(k2, b, sizeof b);
    env_fail(
        n->env,
        "%s: the keys of its two inputs are %s and %s: keyed streams connect by keys of one type",
        what, a, b);
}

/* A two-input operator over a connected stream. */
static struct spate_stream *
co_operator(spate_stream *connected, enum operator_kind kind, void *fn1, void *fn2,
            const spate_type *out_type, const char *what)
{
    struct spate_stream *n;

    if (!check(connected->env, connected->kind == OP_CONNECTED, "%s needs spate_connect", what))
        return connected;
    n = stream_node_new(connected->env, kind, connected->input, out_type);
    n->input2 = connected->input2;
    n->in_type2 = connected->in_type2;
    check(connected->env, fn1 != NULL && fn2 != NULL && out_type != NULL,
          "%s needs two functions and an output type", what);
    n->opconf.two_input.fn1 = fn1;
    n->opconf.two_input.fn2 = fn2;
    n->key = input_key(n->input);
    n->key2 = input_key(n->input2);
    if (n->key.kind == KEY_NONE || n->key2.kind == KEY_NONE)
        n->key.kind = n->key2.kind = KEY_NONE; /* keyed only when both are */
    else
        check_key_types(n, what);
    return n;
}

spate_stream *
spate_co_map(spate_stream *connected, spate_map_fn map1, spate_map_fn map2,
             const spate_type *out_type)
{
    return co_operator(connected, OP_CO_MAP, (void *)map1, (void *)map2, out_type, "co_map");
}

spate_stream *
spate_co_process(spate_stream *connected, spate_flat_map_fn fn1, spate_flat_map_fn fn2,
                 const spate_type *out_type)
{
    return co_operator(connected, OP_CO_PROCESS, (void *)fn1, (void *)fn2, out_type, "co_process");
}

spate_stream *
spate_broadcast_state(spate_stream *in, const char *name, const spate_type *key_type,
                      const spate_type *value_type)
{
    struct spate_stream *n = stream_node_new(in->env, OP_PARTITION, in, NULL);

    n->partitioner = SHIP_BROADCAST;
    check(in->env, key_type != NULL && value_type != NULL && types_keyable(key_type),
          "broadcast state '%s' needs a key type and a value type", name ? name : "");
    if (check(in->env, name != NULL && *name, "broadcast state needs a name")) {
        n->states = xcalloc(1, sizeof *n->states);
        n->states[0] =
            (struct state_decl){ xstrdup(name), STATE_MAP, value_type, key_type,       NULL,
                                 { 0 },         0,         false,      SCOPE_BROADCAST };
        n->nstates = 1;
    }
    return n;
}

spate_stream *
spate_broadcast_process(spate_stream *connected, spate_flat_map_fn process_element,
                        spate_flat_map_fn process_broadcast, const spate_type *out_type)
{
    struct spate_stream *n = co_operator(connected, OP_BROADCAST_PROCESS, (void *)process_element,
                                         (void *)process_broadcast, out_type, "broadcast_process");
    struct spate_stream *b;

    if (n->kind != OP_BROADCAST_PROCESS)
        return n;
    /* The broadcast side keeps its own key selector off: it reaches every instance. */
    n->key = input_key(n->input);
    n->key2.kind = KEY_NONE;
    for (b = n->input2; b != NULL && b->kind == OP_PARTITION; b = b->input)
        for (int i = 0; i < b->nstates; i++)
            declare_state(n, b->states[i], "spate_broadcast_state");
    check(connected->env, n->nstates > 0,
          "broadcast_process needs a stream made by spate_broadcast_state");
    return n;
}

/* ---- side outputs ---- */

static const struct output_tag *
tag_find(const spate_env *env, uint64_t id)
{
    for (size_t i = 0; i < env->ntags; i++)
        if (env->tags[i].id == id)
            return &env->tags[i];
    return NULL;
}

spate_tag
spate_output_tag(spate_env *env, const char *name, const spate_type *type)
{
    const struct output_tag *t;
    char had[256], got[256];
    uint64_t id;

    if (!check(env, name != NULL && *name && type != NULL, "an output tag needs a name and a type"))
        return (spate_tag){ 0 };
    id = output_tag_id(name);
    if ((t = tag_find(env, id)) != NULL) {
        if (strcmp(t->name, name) != 0) {
            env_fail(env, "output tags '%s' and '%s' have one id: rename one", t->name, name);
            return (spate_tag){ 0 };
        }
        if (!types_same(t->type, type)) {
            types_describe(t->type, had, sizeof had);
            types_describe(type, got, sizeof got);
            env_fail(env,
                     "output tag '%s' was made with type %s and again with type %s: a tag's "
                     "name names one type in a job",
                     name, had, got);
            return (spate_tag){ 0 };
        }
        return (spate_tag){ id };
    }
    xgrow((void **)&env->tags, &env->tags_cap, env->ntags + 1, sizeof *env->tags);
    env->tags[env->ntags++] = (struct output_tag){ xstrdup(name), type, id };
    return (spate_tag){ id };
}

/* The tag behind a spate_tag of env; NULL (env's error set) when it is none. */
static const struct output_tag *
tag_of(spate_env *env, spate_tag tag, const char *what)
{
    const struct output_tag *t = tag.id != 0 ? tag_find(env, tag.id) : NULL;

    check(env, t != NULL, "%s: not a tag made by spate_output_tag for this job", what);
    return t;
}

spate_stream *
spate_side_output(spate_stream *op, spate_tag tag)
{
    const struct output_tag *t = tag_of(op->env, tag, "spate_side_output");
    struct spate_stream *n =
        stream_node_new(op->env, OP_SIDE_OUTPUT, op, t ? t->type : spate_type_int64());

    check(op->env, !stream_node_is_virtual(op),
          "side output '%s' comes out of an operator, not out of a partitioning, union or "
          "side output",
          t ? t->name : "");
    n->tag = xstrdup(t ? t->name : "");
    return n;
}

/* ---- windows ---- */

spate_stream *
spate_window(spate_stream *keyed, spate_window_assigner assigner)
{
    struct spate_stream *n = keyed_op(keyed, OP_WINDOW, NULL, "a window");
    const spate_window_assigner *a = &assigner;

    n->opconf.window.assigner = assigner;
    switch (a->kind) {
    case SPATE_WINDOW_TUMBLING:
        check(keyed->env, a->size_ms > 0, "a tumbling window needs a positive size");
        break;
    case SPATE_WINDOW_SLIDING:
        check(keyed->env, a->size_ms > 0 && a->slide_ms > 0,
              "a sliding window needs a positive size and slide");
        break;
    case SPATE_WINDOW_SESSION:
        check(keyed->env, a->gap_ms > 0, "a session window needs a positive gap");
        break;
    case SPATE_WINDOW_GLOBAL:
        break;
    default:
        env_fail(keyed->env, "unknown window assigner %d", (int)a->kind);
    }
    check(keyed->env, a->offset_ms >= 0, "a window offset must not be negative");
    return n;
}

static bool
windowed(spate_stream *w, const char *what)
{
    return check(w->env, w->kind == OP_WINDOW, "%s applies to a windowed stream", what);
}

spate_stream *
spate_count_window(spate_stream *keyed, int64_t size)
{
    spate_stream *w = spate_window(keyed, spate_global_windows());

    check(keyed->env, size > 0, "a count window needs a positive size");
    w->opconf.window.trigger = TRIGGER_COUNT;
    w->opconf.window.trigger_count = size;
    w->opconf.window.purging = true;
    return w;
}

spate_stream *
spate_count_window_sliding(spate_stream *keyed, int64_t size, int64_t slide)
{
    spate_stream *w = spate_window(keyed, spate_global_windows());

    check(keyed->env, size > 0 && slide > 0, "a count window needs a positive size and slide");
    /* Flink: a count trigger every slide records over the last size. */
    w->opconf.window.trigger = TRIGGER_COUNT;
    w->opconf.window.trigger_count = slide;
    w->opconf.window.evictor = EVICTOR_COUNT;
    w->opconf.window.evictor_value = size;
    return w;
}

spate_stream *
spate_window_trigger_event_time(spate_stream *w)
{
    if (windowed(w, "spate_window_trigger_event_time"))
        w->opconf.window.trigger = TRIGGER_EVENT_TIME;
    return w;
}

spate_stream *
spate_window_trigger_processing_time(spate_stream *w)
{
    if (windowed(w, "spate_window_trigger_processing_time"))
        w->opconf.window.trigger = TRIGGER_PROCESSING_TIME;
    return w;
}

spate_stream *
spate_window_trigger_count(spate_stream *w, int64_t count)
{
    if (windowed(w, "spate_window_trigger_count") &&
        check(w->env, count > 0, "a count trigger needs a positive count")) {
        w->opconf.window.trigger = TRIGGER_COUNT;
        w->opconf.window.trigger_count = count;
        w->opconf.window.purging = false;
    }
    return w;
}

spate_stream *
spate_window_trigger(spate_stream *w, const spate_trigger *trigger)
{
    if (windowed(w, "spate_window_trigger") &&
        check(w->env, trigger != NULL && trigger->on_element != NULL,
              "a custom trigger needs at least on_element")) {
        w->opconf.window.trigger = TRIGGER_CUSTOM;
        w->opconf.window.custom = *trigger;
    }
    return w;
}

spate_stream *
spate_window_evictor_count(spate_stream *w, int64_t count)
{
    if (windowed(w, "spate_window_evictor_count") &&
        check(w->env, count > 0, "a count evictor needs a positive count")) {
        w->opconf.window.evictor = EVICTOR_COUNT;
        w->opconf.window.evictor_value = count;
    }
    return w;
}

spate_stream *
spate_window_evictor_time(spate_stream *w, int64_t keep_ms)
{
    if (windowed(w, "spate_window_evictor_time") &&
        check(w->env, keep_ms >= 0, "a time evictor needs a non-negative span")) {
        w->opconf.window.evictor = EVICTOR_TIME;
        w->opconf.window.evictor_value = keep_ms;
    }
    return w;
}

spate_stream *
spate_window_evictor(spate_stream *w, spate_evictor_fn fn)
{
    if (windowed(w, "spate_window_evictor") &&
        check(w->env, fn != NULL, "a custom evictor needs a function")) {
        w->opconf.window.evictor = EVICTOR_CUSTOM;
        w->opconf.window.evictor_fn = fn;
    }
    return w;
}

spate_stream *
spate_allowed_lateness(spate_stream *w, int64_t ms)
{
    if (windowed(w, "spate_allowed_lateness") &&
        check(w->env, ms >= 0, "allowed lateness must not be negative"))
        w->opconf.window.lateness_ms = ms;
    return w;
}

spate_stream *
spate_late_data_side_output(spate_stream *w, spate_tag tag)
{
    const struct output_tag *t = tag_of(w->env, tag, "spate_late_data_side_output");
    char want[256], got[256];

    if (t == NULL || !windowed(w, "spate_late_data_side_output"))
        return w;
    if (!types_same(t->type, w->in_type)) {
        types_describe(t->type, got, sizeof got);
        types_describe(w->in_type, want, sizeof want);
        env_fail(w->env,
                 "late data side output '%s' of window '%s' has type %s, but the window's "
                 "records are %s",
                 t->name, node_name(w), got, want);
        return w;
    }
    free(w->opconf.window.late_tag);
    w->opconf.window.late_tag = xstrdup(t->name);
    return w;
}

static spate_stream *
window_function(spate_stream *w, enum window_function_kind kind, const spate_type *out_type,
                const char *what)
{
    if (!windowed(w, what))
        return w;
    if (!check(w->env, w->opconf.window.function == WINDOW_FN_NONE,
               "a window gets one window function"))
        return w;
    w->opconf.window.function = kind;
    if (out_type != NULL)
        w->out_type = out_type;
    return w;
}

spate_stream *
spate_window_reduce(spate_stream *w, spate_reduce_fn reduce, spate_process_window_fn fn,
                    const spate_type *out_type)
{
    check(w->env, reduce != NULL, "window reduce needs a function");
    check(w->env, fn != NULL || out_type == NULL || out_type == w->in_type,
          "window reduce without a window function emits the input type");
    w = window_function(w, WINDOW_FN_REDUCE, fn ? out_type : NULL, "spate_window_reduce");
    if (w->kind != OP_WINDOW)
        return w;
    w->opconf.window.reduce = reduce;
    w->opconf.window.process = fn;
    check(w->env, fn == NULL || out_type != NULL, "a window function needs its output type");
    return w;
}

spate_stream *
spate_window_aggregate(spate_stream *w, const spate_aggregate *agg, spate_process_window_fn fn,
                       const spate_type *out_type)
{
    if (!check(w->env,
               agg != NULL && agg->acc_type && agg->out_type && agg->create && agg->add &&
                   agg->result,
               "window aggregate needs types, create, add and result"))
        return w;
    check(w->env,
          w->kind != OP_WINDOW || w->opconf.window.assigner.kind != SPATE_WINDOW_SESSION ||
              agg->merge != NULL,
          "session windows need the aggregate's merge");
    w = window_function(w, WINDOW_FN_AGGREGATE, fn ? out_type : agg->out_type,
                        "spate_window_aggregate");
    if (w->kind != OP_WINDOW)
        return w;
    w->opconf.window.agg = *agg;
    w->opconf.window.process = fn;
    check(w->env, fn == NULL || out_type != NULL, "a window function needs its output type");
    return w;
}

spate_stream *
spate_window_process(spate_stream *w, spate_process_window_fn fn, const spate_type *out_type)
{
    check(w->env, fn != NULL && out_type != NULL,
          "process window needs a function and its output type");
    w = window_function(w, WINDOW_FN_PROCESS, out_type, "spate_window_process");
    if (w->kind == OP_WINDOW)
        w->opconf.window.process = fn;
    return w;
}

/* ---- sinks ---- */

spate_stream *
spate_sink_print(spate_stream *in)
{
    struct spate_stream *n = stream_node_new(in->env, OP_SINK_PRINT, in, NULL);

    n->conn.print.type = n->in_type;
    return n;
}

spate_stream *
spate_sink_text_file(spate_stream *in, const char *path)
{
    return spate_sink_file(in, path, SPATE_FILE_TEXT, NULL);
}

spate_stream *
spate_sink_file(spate_stream *in, const char *path, spate_file_format format,
                const char *const *field_names)
{
    static const char *const what[] = { "text file sink", "csv file sink", "json file sink" };
    struct spate_stream *n = stream_node_new(in->env, OP_SINK_FILE, in, NULL);
    struct file_sink_config *c = &n->conn.file_sink;
    bool known = format == SPATE_FILE_TEXT || format == SPATE_FILE_CSV || format == SPATE_FILE_JSON;
    const char *name = known ? what[format] : "file sink";
    int nfields = n->in_type != NULL && n->in_type->kind == TYPE_TUPLE ? n->in_type->nfields : 0;

    *c = (struct file_sink_config){ n->in_type, stream_path_absolute(path ? path : ""),
                                    false,      known ? format : SPATE_FILE_TEXT,
                                    NULL,       0 };
    if (check(in->env, path != NULL && *path, "%s needs a path", name))
        local_path(in->env, path, name);
    check(in->env, known, "file sink: format %d is not SPATE_FILE_TEXT, _CSV or _JSON",
          (int)format);
    check(in->env, format == SPATE_FILE_TEXT || nfields > 0,
          "%s needs a tuple-typed stream, not '%s'", name,
          n->in_type != NULL ? n->in_type->name : "?");
    check(in->env, format == SPATE_FILE_JSON || field_names == NULL,
          "%s takes no field names (only json names its members)", name);
    if (format == SPATE_FILE_CSV || format == SPATE_FILE_JSON)
        n->name = xstrdup(format == SPATE_FILE_CSV ? "Sink: CSV File" : "Sink: JSON File");
    if (field_names == NULL || format != SPATE_FILE_JSON)
        return n;
    while (field_names[c->nfield_names] != NULL && c->nfield_names <= nfields)
        c->nfield_names++;
    if (!check(in->env, c->nfield_names == nfields,
               "json file sink: %s%d field names for a tuple of %d fields",
               c->nfield_names > nfields ? "more than " : "", MIN(c->nfield_names, nfields),
               nfields)) {
        c->nfield_names = 0;
        return n;
    }
    c->field_names = xcalloc((size_t)nfields, sizeof *c->field_names);
    for (int i = 0; i < nfields; i++)
        c->field_names[i] = xstrdup(field_names[i]);
    return n;
}

spate_stream *
spate_sink_committing(spate_stream *in, const spate_committing_sink *sink)
{
    struct spate_stream *n = stream_node_new(in->env, OP_SINK_API, in, NULL);

    check(in->env,
          sink != NULL && sink->writer != NULL && sink->committer != NULL && sink->writer->create &&
              sink->writer->write && sink->writer->prepare_commit && sink->writer->close &&
              sink->committer->commit,
          "a sink needs a writer with every function and a committer with commit");
    n->conn.api_sink.sink = sink;
    return n;
}

spate_stream *
spate_sink(spate_stream *in, spate_sink_fn fn)
{
    return transform(in, OP_SINK, (void *)fn, NULL, "sink");
}

/* ---- settings ---- */

static bool
settable(spate_stream *op, const char *what)
{
    return check(op->env, op->kind != OP_PARTITION && op->kind != OP_SIDE_OUTPUT,
                 "%s applies to an operator, not to a partitioning or side output", what);
}

spate_stream *
spate_params(spate_stream *op, const void *params, size_t len)
{
    if (settable(op, "spate_params") &&
        check(op->env, params != NULL || len == 0, "spate_params: NULL bytes")) {
        free(op->params);
        op->params = xmalloc(len);
        if (len)
            memcpy(op->params, params, len);
        op->params_len = len;
    }
    return op;
}

spate_stream *
spate_open_close(spate_stream *op, spate_open_fn open, spate_close_fn close)
{
    if (settable(op, "spate_open_close")) {
        op->open = open;
        op->close = close;
    }
    return op;
}

spate_stream *
spate_uid(spate_stream *op, const char *uid)
{
    if (!settable(op, "spate_uid") || !check(op->env, uid && *uid, "uid must not be empty"))
        return op;
    for (size_t i = 0; i < op->env->nnodes; i++) {
        struct spate_stream *o = op->env->nodes[i];

        if (o != op && o->uid && strcmp(o->uid, uid) == 0)
            env_fail(op->env, "uid '%s' is given to two operators", uid);
    }
    free(op->uid);
    op->uid = xstrdup(uid);
    return op;
}

spate_stream *
spate_name(spate_stream *op, const char *name)
{
    bool sink = op->kind == OP_SINK_PRINT || op->kind == OP_SINK_FILE || op->kind == OP_SINK ||
                op->kind == OP_SINK_CONNECTOR || op->kind == OP_SINK_API;

    if (settable(op, "spate_name") && check(op->env, name != NULL, "name must not be NULL")) {
        free(op->name);
        /* A sink is "Sink: NAME", as Flink names it. */
        op->name =
            sink && strncmp(name, "Sink: ", 6) != 0 ? xasprintf("Sink: %s", name) : xstrdup(name);
    }
    return op;
}

spate_stream *
spate_set_parallelism(spate_stream *op, int parallelism)
{
    if (settable(op, "spate_set_parallelism") &&
        check(op->env, parallelism >= 1 && parallelism <= 32768,
              "parallelism %d is not within 1 to 32768", parallelism)) {
        if (op->kind == OP_SOURCE_SOCKET && parallelism != 1)
            env_fail(op->env, "a socket source has parallelism 1");
        else
            op->parallelism = parallelism;
    }
    return op;
}

spate_stream *
spate_set_max_parallelism(spate_stream *op, int max_parallelism)
{
    if (settable(op, "spate_set_max_parallelism") &&
        check(op->env, max_parallelism >= 1 && max_parallelism <= 32768,
              "max parallelism %d is not within 1 to 32768", max_parallelism))
        op->max_parallelism = max_parallelism;
    return op;
}

spate_stream *
spate_start_new_chain(spate_stream *op)
{
    if (settable(op, "spate_start_new_chain"))
        op->chaining = CHAINING_HEAD;
    return op;
}

spate_stream *
spate_disable_chaining(spate_stream *op)
{
    if (settable(op, "spate_disable_chaining"))
        op->chaining = CHAINING_NEVER;
    return op;
}

spate_stream *
spate_slot_sharing_group(spate_stream *op, const char *group)
{
    if (settable(op, "spate_slot_sharing_group") &&
        check(op->env, group && *group, "slot sharing group must not be empty")) {
        free(op->slot_sharing_group);
        op->slot_sharing_group = xstrdup(group);
    }
    return op;
}
