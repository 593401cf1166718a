/* Encoding and decoding JobGraphs (job_graph_codec.h) with protobuf-c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/util.h"
#include "proto/jobgraph.pb-c.h"
#include "streaming/job_graph_codec.h"
#include "streaming/types.h"

typedef Jobgraph__FnRef PbFnRef;
typedef Jobgraph__TypeDesc PbType;
typedef Jobgraph__KeySelector PbKey;
typedef Jobgraph__OperatorConfig PbOp;
typedef Jobgraph__StateDecl PbState;
typedef Jobgraph__WindowConfig PbWindow;
typedef Jobgraph__WatermarkStrategy PbWatermarks;
typedef Jobgraph__JobEdge PbEdge;
typedef Jobgraph__JobVertex PbVertex;
typedef Jobgraph__JobGraph PbGraph;

#define CODEC_MAX_TYPE_DEPTH   16
#define CODEC_MAX_TUPLE_FIELDS 64

/* ---- encoding ---------------------------------------------------------- */

/* Everything an encoded graph points to, freed in one go. */
struct enc {
    const struct job_library *lib;
    void **allocs;
    size_t nallocs, cap;
    const struct spate_type **types;
    size_t ntypes, types_cap;
    PbType **pbtypes;
    spate_error *err;
    int rc;
};

static void *
enc_alloc(struct enc *e, size_t size)
{
    void *p = xcalloc(1, size);

    xgrow((void **)&e->allocs, &e->cap, e->nallocs + 1, sizeof *e->allocs);
    e->allocs[e->nallocs++] = p;
    return p;
}

static PbFnRef *
enc_fn(struct enc *e, const void *fn, const char *what)
{
    PbFnRef *r = enc_alloc(e, sizeof *r);
    struct fn_ref ref;

    jobgraph__fn_ref__init(r);
    if (fn == NULL || e->rc != 0)
        return r;
    if (e->lib == NULL) {
        e->rc = spate_error_set(e->err, SPATE_EINVAL,
                                "%s is user code, but the job has no job library", what);
        return r;
    }
    if ((e->rc = user_code_ref(e->lib, fn, what, &ref, e->err)) != 0)
        return r;
    r->present = true;
    r->offset = ref.offset;
    r->symbol = enc_alloc(e, strlen(ref.symbol) + 1);
    strcpy(r->symbol, ref.symbol);
    return r;
}

static PbType *
enc_type_desc(struct enc *e, const struct spate_type *t)
{
    PbType *d = enc_alloc(e, sizeof *d);

    jobgraph__type_desc__init(d);
    d->kind = (int32_t)t->kind;
    d->name = (char *)t->name;
    d->version = t->version;
    d->size = t->size;
    if (t->kind == TYPE_TUPLE) {
        d->n_fields = (size_t)t->nfields;
        d->fields = enc_alloc(e, (size_t)t->nfields * sizeof *d->fields);
        for (int i = 0; i < t->nfields; i++)
            d->fields[i] = enc_type_desc(e, t->fields[i]);
        d->nullable = t->nullable;
    } else if (t->kind == TYPE_CUSTOM) {
        d->serialize = enc_fn(e, (const void *)t->serialize, "a type's serialize function");
        d->deserialize = enc_fn(e, (const void *)t->deserialize, "a type's deserialize function");
        d->format = enc_fn(e, (const void *)t->format, "a type's format function");
    }
    return d;
}

/* The index of t in the graph's type table (-1 for none). */
static int32_t
enc_type(struct enc *e, const struct spate_type *t)
{
    if (t == NULL)
        return -1;
    for (size_t i = 0; i < e->ntypes; i++)
        if (e->types[i] == t)
            return (int32_t)i;
    xgrow((void **)&e->types, &e->types_cap, e->ntypes + 1, sizeof *e->types);
    e->pbtypes = xrealloc(e->pbtypes, e->types_cap * sizeof *e->pbtypes);
    e->types[e->ntypes] = t;
    e->pbtypes[e->ntypes] = enc_type_desc(e, t);
    return (int32_t)e->ntypes++;
}

static PbKey *
enc_key(struct enc *e, const struct key_selector *k)
{
    PbKey *p = enc_alloc(e, sizeof *p);

    jobgraph__key_selector__init(p);
    p->kind = (int32_t)k->kind;
    p->field = k->field;
    p->fn = enc_fn(e, (const void *)k->fn, "a key selector");
    return p;
}

static ProtobufCBinaryData
bin(const void *data, size_t len)
{
    ProtobufCBinaryData b = { len, (uint8_t *)data };

    return b;
}

static int32_t *
enc_ints(struct enc *e, const int *v, int n)
{
    int32_t *out = enc_alloc(e, (size_t)(n ? n : 1) * sizeof *out);

    for (int i = 0; i < n; i++)
        out[i] = v[i];
    return out;
}

/* Each kind's own configuration (connector_config.h, operator_config.h),
 * one encoder per kind: each writes its struct's fields. */
typedef void kind_encoder(struct enc *e, const void *conf, const char *name, PbOp *p);

static void
enc_collection(struct enc *e, const void *conf, const char *name, PbOp *p)
{
    const struct collection_source_config *c = conf;

    UNUSED(e);
    UNUSED(name);
    p->records = bin(c->records, c->records_len);
    p->nrecords = c->nrecords;
}

static void
enc_generator(struct enc *e, const void *conf, const char *name, PbOp *p)
{
    const struct generator_source_config *c = conf;
    char what[160];

    snprintf(what, sizeof what, "the function of '%s'", name);
    p->fn = enc_fn(e, (const void *)c->fn, what);
    p->count = c->count;
    p->rate = c->rate;
}

static void
enc_socket(struct enc *e, const void *conf, const char *name, PbOp *p)
{
    const struct socket_source_config *c = conf;

    UNUSED(e);
    UNUSED(name);
    p->host = c->host ? c->host : "";
    p->port = c->port;
}

static void
enc_file_source(struct enc *e, const void *conf, const char *name, PbOp *p)
{
    const struct file_source_config *c = conf;

    UNUSED(e);
    UNUSED(name);
    p->path = c->path ? c->path : "";
}

static void
enc_file_sink(struct enc *e, const void *conf, const char *name, PbOp *p)
{
    const struct file_sink_config *c = conf;

    UNUSED(e);
    UNUSED(name);
    p->path = c->path ? c->path : "";
    p->bucketed = c->bucketed;
    p->file_format = (int32_t)c->format;
    p->n_field_names = (size_t)c->nfield_names;
    p->field_names = c->field_names;
}

static void
enc_named_connector(struct enc *e, const void *conf, const char *name, PbOp *p)
{
    const struct named_connector_config *c = conf;
    Jobgraph__ConnectorOption *opts = enc_alloc(e, (c->noptions + 1) * sizeof *opts);

    UNUSED(name);
    p->connector = c->connector ? c->connector : "";
    p->n_options = c->noptions;
    p->options = enc_alloc(e, (c->noptions + 1) * sizeof *p->options);
    for (size_t i = 0; i < c->noptions; i++) {
        jobgraph__connector_option__init(&opts[i]);
        opts[i].key = c->options[2 * i];
        opts[i].value = c->options[2 * i + 1];
        p->options[i] = &opts[i];
    }
}

/* The operator kinds' configuration (operator_config.h): their functions
 * go in fn, fn2, fn3 by their place, a window's settings in window. */
static void
enc_function(struct enc *e, const void *conf, const char *name, PbOp *p)
{
    const struct function_config *c = conf;
    char what[160];

    snprintf(what, sizeof what, "the function of '%s'", name);
    p->fn = enc_fn(e, c->fn.any, what);
}

static void
enc_process(struct enc *e, const void *conf, const char *name, PbOp *p)
{
    const struct process_config *c = conf;
    char what[160];

    snprintf(what, sizeof what, "the function of '%s'", name);
    p->fn = enc_fn(e, (const void *)c->fn, what);
    snprintf(what, sizeof what, "the second function of '%s'", name);
    p->fn2 = enc_fn(e, (const void *)c->on_timer, what);
}

static void
enc_keyed_reduce(struct enc *e, const void *conf, const char *name, PbOp *p)
{
    const struct keyed_reduce_config *c = conf;
    char what[160];

    snprintf(what, sizeof what, "the function of '%s'", name);
    p->fn = enc_fn(e, (const void *)c->reduce, what);
    p->sum_field = c->sum_field;
}

static void
enc_two_input(struct enc *e, const void *conf, const char *name, PbOp *p)
{
    const struct two_input_config *c = conf;
    char what[160];

    snprintf(what, sizeof what, "the function of '%s'", name);
    p->fn = enc_fn(e, c->fn1, what);
    snprintf(what, sizeof what, "the second function of '%s'", name);
    p->fn2 = enc_fn(e, c->fn2, what);
    snprintf(what, sizeof what, "the third function of '%s'", name);
    p->fn3 = enc_fn(e, (const void *)c->on_timer, what);
}

static void
enc_sql(struct enc *e, const void *conf, const char *name, PbOp *p)
{
    const struct sql_config *c = conf;

    UNUSED(e);
    UNUSED(name);
    p->sql_program = bin(c->program, c->program_len);
}

static void
enc_window(struct enc *e, const void *conf, const char *name, PbOp *p)
{
    const struct window_config *c = conf;
    PbWindow *w = enc_alloc(e, sizeof *w);

    UNUSED(name);
    jobgraph__window_config__init(w);
    w->assigner = (int32_t)c->assigner.kind;
    w->event_time = c->assigner.event_time;
    w->size_ms = c->assigner.size_ms;
    w->slide_ms = c->assigner.slide_ms;
    w->gap_ms = c->assigner.gap_ms;
    w->offset_ms = c->assigner.offset_ms;
    w->trigger = (int32_t)c->trigger;
    w->trigger_count = c->trigger_count;
    w->purging = c->purging;
    w->on_element = enc_fn(e, (const void *)c->custom.on_element, "a trigger's on_element");
    w->on_event_time =
        enc_fn(e, (const void *)c->custom.on_event_time, "a trigger's on_event_time");
    w->on_processing_time =
        enc_fn(e, (const void *)c->custom.on_processing_time, "a trigger's on_processing_time");
    w->evictor = (int32_t)c->evictor;
    w->evictor_value = c->evictor_value;
    w->evictor_fn = enc_fn(e, (const void *)c->evictor_fn, "an evictor");
    w->lateness_ms = c->lateness_ms;
    w->late_tag = c->late_tag ? c->late_tag : "";
    w->function = (int32_t)c->function;
    w->reduce = enc_fn(e, (const void *)c->reduce, "a window's reduce function");
    w->acc_type = enc_type(e, c->agg.acc_type);
    w->agg_out_type = enc_type(e, c->agg.out_type);
    w->create = enc_fn(e, (const void *)c->agg.create, "an aggregate's create");
    w->add = enc_fn(e, (const void *)c->agg.add, "an aggregate's add");
    w->result = enc_fn(e, (const void *)c->agg.result, "an aggregate's result");
    w->merge = enc_fn(e, (const void *)c->agg.merge, "an aggregate's merge");
    w->process = enc_fn(e, (const void *)c->process, "a process window function");
    p->window = w;
}

static void
enc_api_source(struct enc *e, const void *conf, const char *name, PbOp *p)
{
    const struct api_source_config *c = conf;
    char what[160];

    snprintf(what, sizeof what, "the source of '%s'", name);
    p->source = enc_fn(e, (const void *)c->source, what);
}

static void
enc_api_sink(struct enc *e, const void *conf, const char *name, PbOp *p)
{
    const struct api_sink_config *c = conf;
    char what[160];

    snprintf(what, sizeof what, "the sink of '%s'", name);
    p->sink = enc_fn(e, (const void *)c->sink, what);
}

/* Each kind's encoder of its configuration struct (operator_settings.conf). */
static kind_encoder *const kind_encoders[OP_KIND_COUNT] = {
    [OP_SOURCE_CONNECTOR] = enc_named_connector,
    [OP_SINK_CONNECTOR] = enc_named_connector,
    [OP_SOURCE_COLLECTION] = enc_collection,
    [OP_SOURCE_GENERATOR] = enc_generator,
    [OP_SOURCE_SOCKET] = enc_socket,
    [OP_SOURCE_FILE] = enc_file_source,
    [OP_SOURCE] = enc_api_source,
    [OP_SINK_API] = enc_api_sink,
    [OP_SINK_FILE] = enc_file_sink,
    [OP_MAP] = enc_function,
    [OP_FILTER] = enc_function,
    [OP_FLAT_MAP] = enc_function,
    [OP_SINK] = enc_function,
    [OP_PROCESS] = enc_process,
    [OP_REDUCE] = enc_keyed_reduce,
    [OP_SUM] = enc_keyed_reduce,
    [OP_CO_MAP] = enc_two_input,
    [OP_CO_PROCESS] = enc_two_input,
    [OP_BROADCAST_PROCESS] = enc_two_input,
    [OP_WINDOW] = enc_window,
    [OP_SQL_CALC] = enc_sql,
    [OP_SQL_AGG] = enc_sql,
    [OP_SQL_JOIN] = enc_sql,
    [OP_SQL_RANK] = enc_sql,
    [OP_SQL_OVER] = enc_sql,
    [OP_SQL_LOOKUP_JOIN] = enc_sql,
};

static PbOp *
enc_operator(struct enc *e, const struct jg_operator *op)
{
    const struct operator_settings *n = &op->settings;
    PbOp *p = enc_alloc(e, sizeof *p);
    char what[160];

    jobgraph__operator_config__init(p);
    p->operator_id = bin(op->operator_id.bytes, ID_BYTES);
    p->uid_given = op->uid_given;
    p->uid = (char *)(n->uid ? n->uid : "");
    p->name = op->name;
    p->kind = (int32_t)n->kind;
    p->in_type = enc_type(e, n->in_type);
    p->out_type = enc_type(e, n->out_type);
    p->in_type2 = enc_type(e, n->in_type2);
    p->key2 = enc_key(e, &n->key2);
    if (n->wm.set) {
        PbWatermarks *w = enc_alloc(e, sizeof *w);

        jobgraph__watermark_strategy__init(w);
        snprintf(what, sizeof what, "the timestamp assigner of '%s'", op->name);
        w->timestamp = enc_fn(e, (const void *)n->wm.timestamp, what);
        snprintf(what, sizeof what, "the watermark function of '%s'", op->name);
        w->watermark = enc_fn(e, (const void *)n->wm.watermark, what);
        w->bound_ms = n->wm.bound_ms;
        w->idleness_ms = n->wm.idleness_ms;
        w->interval_ms = n->wm.interval_ms;
        p->watermarks = w;
    }
    snprintf(what, sizeof what, "the open function of '%s'", op->name);
    p->open = enc_fn(e, (const void *)n->open, what);
    snprintf(what, sizeof what, "the close function of '%s'", op->name);
    p->close = enc_fn(e, (const void *)n->close, what);
    p->params = bin(n->params, n->params_len);
    p->key = enc_key(e, &n->key);
    p->sum_field = -1;
    p->host = "";
    p->path = "";
    if (operator_kind_runs(n->kind) && kind_encoders[n->kind] != NULL)
        kind_encoders[n->kind](e, n->conf, op->name, p);
    p->n_chained = (size_t)op->nchained;
    p->chained = enc_ints(e, op->chained, op->nchained);
    p->n_chained_tags = (size_t)op->nchained;
    p->chained_tags = enc_alloc(e, (size_t)(op->nchained + 1) * sizeof *p->chained_tags);
    for (int i = 0; i < op->nchained; i++)
        p->chained_tags[i] = op->chained_tags && op->chained_tags[i] ? op->chained_tags[i] : "";
    p->n_states = (size_t)n->nstates;
    p->states = enc_alloc(e, (size_t)(n->nstates + 1) * sizeof *p->states);
    for (int i = 0; i < n->nstates; i++) {
        const struct state_decl *sd = &n->states[i];
        PbState *ps = enc_alloc(e, sizeof *ps);

        jobgraph__state_decl__init(ps);
        ps->name = sd->name;
        ps->kind = (int32_t)sd->kind;
        ps->type = enc_type(e, sd->type);
        ps->key_type = enc_type(e, sd->key_type);
        ps->reduce = enc_fn(e, (const void *)sd->reduce, "a reducing state's function");
        ps->acc_type = enc_type(e, sd->agg.acc_type);
        ps->agg_out_type = enc_type(e, sd->agg.out_type);
        ps->create = enc_fn(e, (const void *)sd->agg.create, "an aggregate's create");
        ps->add = enc_fn(e, (const void *)sd->agg.add, "an aggregate's add");
        ps->result = enc_fn(e, (const void *)sd->agg.result, "an aggregate's result");
        ps->merge = enc_fn(e, (const void *)sd->agg.merge, "an aggregate's merge");
        ps->ttl_ms = sd->ttl_ms;
        ps->timestamped = sd->timestamped;
        ps->scope = (int32_t)sd->scope;
        p->states[i] = ps;
    }
    p->n_outputs = (size_t)op->noutputs;
    p->outputs = enc_ints(e, op->outputs, op->noutputs);
    p->parallelism = n->parallelism;
    p->max_parallelism = n->max_parallelism;
    return p;
}

int
job_graph_encode(const struct job_graph *jg, const struct job_library *lib, uint8_t **out,
                 size_t *len, spate_error *err)
{
    struct enc e = { .lib = lib, .err = err };
    PbGraph g;
    Jobgraph__CheckpointSettings pcp;
    Jobgraph__RestartSettings prs;

    jobgraph__job_graph__init(&g);
    g.job_id = bin(jg->job_id.bytes, ID_BYTES);
    g.name = jg->name;
    g.n_vertices = (size_t)jg->nvertices;
    g.vertices = enc_alloc(&e, (size_t)(jg->nvertices + 1) * sizeof *g.vertices);
    for (int i = 0; i < jg->nvertices; i++) {
        const struct jg_vertex *v = &jg->vertices[i];
        PbVertex *pv = enc_alloc(&e, sizeof *pv);

        jobgraph__job_vertex__init(pv);
        pv->id = bin(v->id.bytes, ID_BYTES);
        pv->name = v->name;
        pv->parallelism = v->parallelism;
        pv->max_parallelism = v->max_parallelism;
        pv->slot_sharing_group = v->slot_sharing_group;
        pv->n_operators = (size_t)v->nops;
        pv->operators = enc_alloc(&e, (size_t)v->nops * sizeof *pv->operators);
        for (int j = 0; j < v->nops; j++)
            pv->operators[j] = enc_operator(&e, &v->ops[j]);
        pv->n_inputs = (size_t)v->ninputs;
        pv->inputs = enc_ints(&e, v->inputs, v->ninputs);
        pv->n_outputs = (size_t)v->noutputs;
        pv->outputs = enc_ints(&e, v->outputs, v->noutputs);
        g.vertices[i] = pv;
    }
    g.n_edges = (size_t)jg->nedges;
    g.edges = enc_alloc(&e, (size_t)(jg->nedges + 1) * sizeof *g.edges);
    for (int i = 0; i < jg->nedges; i++) {
        const struct jg_edge *je = &jg->edges[i];
        PbEdge *pe = enc_alloc(&e, sizeof *pe);

        jobgraph__job_edge__init(pe);
        pe->source = je->source;
        pe->source_operator = je->source_operator;
        pe->target = je->target;
        pe->partitioner = (int32_t)je->partitioner;
        pe->key = enc_key(&e, &je->key);
        pe->dataset_id = bin(je->dataset_id.bytes, ID_BYTES);
        pe->tag = je->tag ? je->tag : "";
        pe->input_index = je->input_index;
        g.edges[i] = pe;
    }
    g.n_types = e.ntypes;
    g.types = e.pbtypes;
    if (lib != NULL) {
        const char *slash = strrchr(lib->path, '/');

        g.library_sha256 = bin(lib->sha256, SHA256_BYTES);
        g.library_name = (char *)(slash ? slash + 1 : lib->path);
    } else {
        g.library_sha256 = bin(jg->library_sha256, SHA256_BYTES);
        g.library_name = jg->library_name ? jg->library_name : "";
    }
    g.derived_uids = jg->derived_uids;
    g.buffer_timeout_ms = jg->buffer_timeout_ms;
    g.savepoint_path = jg->savepoint_path ? jg->savepoint_path : "";
    g.allow_non_restored_state = jg->allow_non_restored_state;
    job_settings_encode(&jg->checkpointing, &jg->restart, &pcp, &prs);
    g.checkpointing = &pcp;
    g.restart = &prs;
    if (e.rc == 0) {
        *len = jobgraph__job_graph__get_packed_size(&g);
        *out = xmalloc(*len);
        jobgraph__job_graph__pack(&g, *out);
    }
    for (size_t i = 0; i < e.nallocs; i++)
        free(e.allocs[i]);
    free(e.allocs);
    free(e.types);
    free(e.pbtypes);
    return e.rc;
}

/* ---- decoding ---------------------------------------------------------- */

struct dec {
    struct job_graph *jg;
    const struct job_library *lib;
    spate_error *err;
    const struct spate_type **types; /* the graph's type table */
    size_t ntypes;
};

static int
bad(struct dec *d, const char *what)
{
    return spate_error_set(d->err, SPATE_EINVAL, "malformed job graph: %s", what);
}

static int
dec_fn(struct dec *d, const PbFnRef *r, void **fn)
{
    struct fn_ref ref;

    *fn = NULL;
    if (r == NULL || !r->present)
        return 0;
    d->jg->has_user_code = true;
    if (d->lib == NULL)
        return 0; /* the JobManager keeps references, not functions */
    memset(&ref, 0, sizeof ref);
    ref.offset = r->offset;
    snprintf(ref.symbol, sizeof ref.symbol, "%s", r->symbol ? r->symbol : "");
    return user_code_resolve(d->lib, &ref, fn, d->err);
}

/* A timestamps/watermarks operator's strategy (it must have one), or a
 * source's (it may). */
static int
dec_watermarks(struct dec *d, const PbWatermarks *w, struct operator_settings *n)
{
    int rc;

    if (w == NULL) {
        if (n->kind == OP_ASSIGN_TIMESTAMPS)
            return bad(d, "a timestamps/watermarks operator without its strategy");
        return 0;
    }
    if (n->kind != OP_ASSIGN_TIMESTAMPS && !operator_kind_is_source(n->kind))
        return bad(d, "a watermark strategy on an operator that is no source");
    if (w->bound_ms < 0 || w->idleness_ms < 0 || w->interval_ms < 0)
        return bad(d, "negative event-time settings");
    if ((rc = dec_fn(d, w->timestamp, (void **)&n->wm.timestamp)) != 0 ||
        (rc = dec_fn(d, w->watermark, (void **)&n->wm.watermark)) != 0)
        return rc;
    n->wm.set = true;
    n->wm.bound_ms = w->bound_ms;
    n->wm.idleness_ms = w->idleness_ms;
    n->wm.interval_ms = w->interval_ms;
    return 0;
}

static struct spate_type *
dec_own_type(struct dec *d, struct spate_type *t)
{
    d->jg->owned_types =
        xrealloc(d->jg->owned_types, (size_t)(d->jg->nowned_types + 1) * sizeof(t));
    d->jg->owned_types[d->jg->nowned_types++] = t;
    return t;
}

static int
dec_type(struct dec *d, const PbType *p, int depth, const struct spate_type **out)
{
    int rc;

    if (p == NULL || depth > CODEC_MAX_TYPE_DEPTH)
        return bad(d, "type nested too deep or missing");
    switch (p->kind) {
    case TYPE_INT64:
        *out = spate_type_int64();
        return 0;
    case TYPE_DOUBLE:
        *out = spate_type_double();
        return 0;
    case TYPE_STRING:
        *out = spate_type_string();
        return 0;
    case TYPE_TUPLE: {
        const struct spate_type *fields[CODEC_MAX_TUPLE_FIELDS];

        if (p->n_fields < 1 || p->n_fields > CODEC_MAX_TUPLE_FIELDS)
            return bad(d, "tuple with a bad number of fields");
        for (size_t i = 0; i < p->n_fields; i++)
            if ((rc = dec_type(d, p->fields[i], depth + 1, &fields[i])) != 0)
                return rc;
        if (p->nullable) {
            if (p->n_fields < 2 || fields[0] != spate_type_int64())
                return bad(d, "row type without its NULL bitmap");
            *out = dec_own_type(d, types_new_row((int)p->n_fields - 1, fields + 1));
        } else {
            *out = dec_own_type(d, types_new_tuple((int)p->n_fields, fields));
        }
        return 0;
    }
    case TYPE_CUSTOM: {
        spate_type_def def = { 0 };
        void *ser, *de, *fmt;

        if (p->size == 0 || p->size > (1 << 20) || p->name == NULL)
            return bad(d, "user type with a bad size or no name");
        if ((rc = dec_fn(d, p->serialize, &ser)) != 0 || (rc = dec_fn(d, p->deserialize, &de)) ||
            (rc = dec_fn(d, p->format, &fmt)) != 0)
            return rc;
        if (d->lib != NULL && (ser == NULL) != (de == NULL))
            return bad(d, "user type with only one of serialize and deserialize");
        def.name = p->name;
        def.version = p->version;
        def.size = p->size;
        *(void **)&def.serialize = ser;
        *(void **)&def.deserialize = de;
        *(void **)&def.format = fmt;
        *out = dec_own_type(d, types_new_custom(&def));
        return 0;
    }
    default:
        return bad(d, "unknown type kind");
    }
}

static const struct spate_type *
dec_type_index(struct dec *d, int32_t i, int *rc)
{
    if (i == -1)
        return NULL;
    if (i < 0 || (size_t)i >= d->ntypes) {
        *rc = bad(d, "type index out of range");
        return NULL;
    }
    return d->types[i];
}

static int
dec_key(struct dec *d, const PbKey *p, const struct spate_type *type, struct key_selector *k)
{
    void *fn;
    int rc;

    k->kind = KEY_NONE;
    k->fn = NULL;
    k->field = -1;
    if (p == NULL)
        return 0;
    if (p->kind < KEY_NONE || p->kind > KEY_FIELD)
        return bad(d, "unknown key selector kind");
    k->kind = (enum key_kind)p->kind;
    k->field = p->field;
    if (k->kind == KEY_FIELD &&
        (type == NULL || type->kind != TYPE_TUPLE || p->field < 0 || p->field >= type->nfields))
        return bad(d, "key field out of range");
    if ((rc = dec_fn(d, p->fn, &fn)) != 0)
        return rc;
    if (k->kind == KEY_FN && d->lib != NULL && fn == NULL)
        return bad(d, "key selector without its function");
    *(void **)&k->fn = fn;
    return 0;
}

static char *
dup_or_null(const char *s)
{
    return s && *s ? xstrdup(s) : NULL;
}

static int
dec_id(struct dec *d, ProtobufCBinaryData b, spate_id *id, const char *what)
{
    if (b.len != ID_BYTES)
        return bad(d, what);
    memcpy(id->bytes, b.data, ID_BYTES);
    return 0;
}

static int
dec_ints(struct dec *d, const int32_t *in, size_t n, int limit, int **out, int *nout,
         const char *what)
{
    *out = xcalloc(n ? n : 1, sizeof **out);
    *nout = (int)n;
    for (size_t i = 0; i < n; i++) {
        if (in[i] < 0 || in[i] >= limit)
            return bad(d, what);
        (*out)[i] = in[i];
    }
    return 0;
}

/* A window's settings; every reference checked against its kind. */
static int
dec_window(struct dec *d, const PbOp *p, struct jg_operator *o)
{
    const PbWindow *w = p->window;
    struct window_config *c = &o->opconf.window;
    void *fn;
    int rc = 0;

    if (w == NULL)
        return bad(d, "window operator without its settings");
    if (w->assigner < SPATE_WINDOW_TUMBLING || w->assigner > SPATE_WINDOW_GLOBAL ||
        w->trigger < TRIGGER_DEFAULT || w->trigger > TRIGGER_CUSTOM || w->evictor < EVICTOR_NONE ||
        w->evictor > EVICTOR_CUSTOM || w->function < WINDOW_FN_REDUCE ||
        w->function > WINDOW_FN_PROCESS)
        return bad(d, "window with an unknown assigner, trigger, evictor or function");
    if (w->size_ms < 0 || w->slide_ms < 0 || w->gap_ms < 0 || w->offset_ms < 0 ||
        w->lateness_ms < 0 || w->trigger_count < 0 || w->evictor_value < 0 ||
        (w->assigner == SPATE_WINDOW_TUMBLING && w->size_ms == 0) ||
        (w->assigner == SPATE_WINDOW_SLIDING && (w->size_ms == 0 || w->slide_ms == 0)) ||
        (w->assigner == SPATE_WINDOW_SESSION && w->gap_ms == 0) ||
        (w->trigger == TRIGGER_COUNT && w->trigger_count == 0))
        return bad(d, "window with a bad size, slide, gap, lateness or count");
    c->assigner = (spate_window_assigner){ (enum spate_window_kind)w->assigner,
                                           w->event_time,
                                           w->size_ms,
                                           w->slide_ms,
                                           w->gap_ms,
                                           w->offset_ms };
    c->trigger = (enum trigger_kind)w->trigger;
    c->trigger_count = w->trigger_count;
    c->purging = w->purging;
    c->evictor = (enum evictor_kind)w->evictor;
    c->evictor_value = w->evictor_value;
    c->lateness_ms = w->lateness_ms;
    c->late_tag = dup_or_null(w->late_tag);
    c->function = (enum window_function_kind)w->function;
    c->agg.acc_type = dec_type_index(d, w->acc_type, &rc);
    c->agg.out_type = dec_type_index(d, w->agg_out_type, &rc);
    if (rc != 0)
        return rc;
#define DEC_FN(ref, target)                    \
    do {                                       \
        if ((rc = dec_fn(d, (ref), &fn)) != 0) \
            return rc;                         \
        *(void **)&(target) = fn;              \
    } while (0)
    DEC_FN(w->on_element, c->custom.on_element);
    DEC_FN(w->on_event_time, c->custom.on_event_time);
    DEC_FN(w->on_processing_time, c->custom.on_processing_time);
    DEC_FN(w->evictor_fn, c->evictor_fn);
    DEC_FN(w->reduce, c->reduce);
    DEC_FN(w->create, c->agg.create);
    DEC_FN(w->add, c->agg.add);
    DEC_FN(w->result, c->agg.result);
    DEC_FN(w->merge, c->agg.merge);
    DEC_FN(w->process, c->process);
#undef DEC_FN
    if (d->lib == NULL)
        return 0;
    if ((c->trigger == TRIGGER_CUSTOM && c->custom.on_element == NULL) ||
        (c->evictor == EVICTOR_CUSTOM && c->evictor_fn == NULL) ||
        (c->function == WINDOW_FN_REDUCE && c->reduce == NULL) ||
        (c->function == WINDOW_FN_PROCESS && c->process == NULL) ||
        (c->function == WINDOW_FN_AGGREGATE && (!c->agg.create || !c->agg.add || !c->agg.result ||
                                                !c->agg.acc_type || !c->agg.out_type)) ||
        (c->function == WINDOW_FN_AGGREGATE && c->assigner.kind == SPATE_WINDOW_SESSION &&
         c->agg.merge == NULL))
        return bad(d, "window without the functions its settings need");
    return 0;
}

/* Each kind's own configuration, one decoder per kind: each fills its
 * struct (connector_config.h in n->conn, operator_config.h in n->opconf)
 * from p, and checks it. The record types and key selectors are decoded
 * already. */
typedef int kind_decoder(struct dec *d, const PbOp *p, struct jg_operator *o);

/* A function the kind cannot run without (checked when functions are
 * resolved: the JobManager keeps references only). */
static int
dec_needed_fn(struct dec *d, const PbFnRef *r, void **fn, const char *missing)
{
    int rc = dec_fn(d, r, fn);

    if (rc == 0 && d->lib != NULL && *fn == NULL)
        rc = bad(d, missing);
    return rc;
}

static int
dec_function(struct dec *d, const PbOp *p, struct jg_operator *o)
{
    return dec_needed_fn(d, p->fn, &o->opconf.function.fn.any, "operator without its function");
}

static int
dec_process(struct dec *d, const PbOp *p, struct jg_operator *o)
{
    struct process_config *c = &o->opconf.process;
    int rc;

    if ((rc = dec_needed_fn(d, p->fn, (void **)&c->fn, "operator without its function")) != 0)
        return rc;
    return dec_fn(d, p->fn2, (void **)&c->on_timer);
}

static int
dec_keyed_reduce(struct dec *d, const PbOp *p, struct jg_operator *o)
{
    struct keyed_reduce_config *c = &o->opconf.keyed_reduce;
    const struct spate_type *f = o->settings.out_type;

    if (o->settings.key.kind == KEY_NONE)
        return bad(d, "keyed operator without a key selector");
    c->sum_field = -1;
    if (o->settings.kind == OP_REDUCE)
        return dec_needed_fn(d, p->fn, (void **)&c->reduce, "operator without its function");
    if (p->sum_field >= 0) {
        if (f->kind != TYPE_TUPLE || p->sum_field >= f->nfields)
            return bad(d, "sum field out of range");
        f = f->fields[p->sum_field];
    }
    if (f->kind != TYPE_INT64 && f->kind != TYPE_DOUBLE)
        return bad(d, "sum of a field that is no number");
    c->sum_field = p->sum_field < 0 ? -1 : p->sum_field;
    return 0;
}

static int
dec_two_input(struct dec *d, const PbOp *p, struct jg_operator *o)
{
    struct two_input_config *c = &o->opconf.two_input;
    int rc;

    if ((rc = dec_fn(d, p->fn, &c->fn1)) != 0 || (rc = dec_fn(d, p->fn2, &c->fn2)) != 0 ||
        (rc = dec_fn(d, p->fn3, (void **)&c->on_timer)) != 0)
        return rc;
    if (d->lib != NULL && (c->fn1 == NULL || c->fn2 == NULL))
        return bad(d, "two-input operator without its functions");
    return 0;
}

static int
dec_collection(struct dec *d, const PbOp *p, struct jg_operator *o)
{
    struct collection_source_config *c = &o->conn.collection;

    UNUSED(d);
    c->type = o->settings.out_type;
    if (p->records.len) {
        c->records = xmalloc(p->records.len);
        memcpy(c->records, p->records.data, p->records.len);
        c->records_len = p->records.len;
    }
    c->nrecords = p->nrecords;
    return 0;
}

static int
dec_generator(struct dec *d, const PbOp *p, struct jg_operator *o)
{
    struct generator_source_config *c = &o->conn.generator;
    int rc;

    c->type = o->settings.out_type;
    if ((rc = dec_fn(d, p->fn, (void **)&c->fn)) != 0)
        return rc;
    /* Without a function the records are the indexes (int64). */
    if (p->fn == NULL || !p->fn->present ? c->type != spate_type_int64()
                                         : d->lib != NULL && c->fn == NULL)
        return bad(d, "operator without its function");
    if (!(p->rate >= 0))
        return bad(d, "a generator of a negative rate");
    c->count = p->count;
    c->rate = p->rate;
    return 0;
}

static int
dec_socket(struct dec *d, const PbOp *p, struct jg_operator *o)
{
    struct socket_source_config *c = &o->conn.socket;

    if ((c->host = dup_or_null(p->host)) == NULL)
        return bad(d, "source or sink without its address");
    if (p->port <= 0 || p->port > 65535)
        return bad(d, "a socket source's port is not within 1 to 65535");
    c->port = p->port;
    return 0;
}

static int
dec_file_source(struct dec *d, const PbOp *p, struct jg_operator *o)
{
    if ((o->conn.file_source.path = dup_or_null(p->path)) == NULL)
        return bad(d, "source or sink without its address");
    return 0;
}

/* In the JobManager without the job's library, the reference stays. */
static int
dec_api_source(struct dec *d, const PbOp *p, struct jg_operator *o)
{
    void *source = NULL;
    int rc;

    if (p->source == NULL || !p->source->present)
        return bad(d, "a custom source without its spate_source");
    rc = dec_fn(d, p->source, &source);
    o->conn.api_source.source = source;
    return rc;
}

static int
dec_api_sink(struct dec *d, const PbOp *p, struct jg_operator *o)
{
    void *sink = NULL;
    int rc;

    if (p->sink == NULL || !p->sink->present)
        return bad(d, "a custom sink without its spate_committing_sink");
    rc = dec_fn(d, p->sink, &sink);
    o->conn.api_sink.sink = sink;
    return rc;
}

static int
dec_file_sink(struct dec *d, const PbOp *p, struct jg_operator *o)
{
    o->conn.file_sink.type = o->settings.in_type;
    if ((o->conn.file_sink.path = dup_or_null(p->path)) == NULL)
        return bad(d, "source or sink without its address");
    o->conn.file_sink.bucketed = p->bucketed;
    if (p->file_format < SPATE_FILE_TEXT || p->file_format > SPATE_FILE_JSON)
        return bad(d, "a file sink of an unknown format");
    o->conn.file_sink.format = (spate_file_format)p->file_format;
    if (p->n_field_names > 0 && (p->file_format != SPATE_FILE_JSON || o->settings.in_type == NULL ||
                                 o->settings.in_type->kind != TYPE_TUPLE ||
                                 p->n_field_names != (size_t)o->settings.in_type->nfields))
        return bad(d, "a file sink's field names do not fit its records");
    o->conn.file_sink.field_names = xcalloc(p->n_field_names + 1, sizeof(char *));
    for (size_t i = 0; i < p->n_field_names; i++)
        o->conn.file_sink.field_names[i] = xstrdup(p->field_names[i]);
    o->conn.file_sink.nfield_names = (int)p->n_field_names;
    return 0;
}

static int
dec_print(struct dec *d, const PbOp *p, struct jg_operator *o)
{
    UNUSED(d);
    UNUSED(p);
    o->conn.print.type = o->settings.in_type;
    return 0;
}

static int
dec_named_connector(struct dec *d, const PbOp *p, struct jg_operator *o)
{
    struct named_connector_config *c = &o->conn.named;

    c->type = o->settings.kind == OP_SINK_CONNECTOR ? o->settings.in_type : o->settings.out_type;
    if ((c->connector = dup_or_null(p->connector)) == NULL)
        return bad(d, "connector without its name");
    c->options = xcalloc(2 * p->n_options + 1, sizeof *c->options);
    for (size_t i = 0; i < p->n_options; i++) {
        const Jobgraph__ConnectorOption *opt = p->options[i];

        if (opt == NULL || opt->key == NULL || !*opt->key || opt->value == NULL)
            return bad(d, "connector option without its key or value");
        c->options[2 * i] = xstrdup(opt->key);
        c->options[2 * i + 1] = xstrdup(opt->value);
        c->noptions = i + 1;
    }
    return 0;
}

static int
dec_sql(struct dec *d, const PbOp *p, struct jg_operator *o)
{
    struct sql_config *c = &o->opconf.sql;

    if (p->sql_program.len == 0)
        return bad(d, "SQL operator without its program");
    /* src/sql checks the program itself when the operator opens. */
    c->program = xmalloc(p->sql_program.len);
    memcpy(c->program, p->sql_program.data, p->sql_program.len);
    c->program_len = p->sql_program.len;
    return 0;
}

static kind_decoder *const kind_decoders[OP_KIND_COUNT] = {
    [OP_SOURCE_CONNECTOR] = dec_named_connector,
    [OP_SINK_CONNECTOR] = dec_named_connector,
    [OP_SOURCE_COLLECTION] = dec_collection,
    [OP_SOURCE_GENERATOR] = dec_generator,
    [OP_SOURCE_SOCKET] = dec_socket,
    [OP_SOURCE_FILE] = dec_file_source,
    [OP_SOURCE] = dec_api_source,
    [OP_SINK_API] = dec_api_sink,
    [OP_SINK_FILE] = dec_file_sink,
    [OP_SINK_PRINT] = dec_print,
    [OP_MAP] = dec_function,
    [OP_FILTER] = dec_function,
    [OP_FLAT_MAP] = dec_function,
    [OP_SINK] = dec_function,
    [OP_PROCESS] = dec_process,
    [OP_REDUCE] = dec_keyed_reduce,
    [OP_SUM] = dec_keyed_reduce,
    [OP_CO_MAP] = dec_two_input,
    [OP_CO_PROCESS] = dec_two_input,
    [OP_BROADCAST_PROCESS] = dec_two_input,
    [OP_WINDOW] = dec_window,
    [OP_SQL_CALC] = dec_sql,
    [OP_SQL_AGG] = dec_sql,
    [OP_SQL_JOIN] = dec_sql,
    [OP_SQL_RANK] = dec_sql,
    [OP_SQL_OVER] = dec_sql,
    [OP_SQL_LOOKUP_JOIN] = dec_sql,
};

static int
dec_operator(struct dec *d, const PbOp *p, struct jg_operator *op, int index, int nops, int nedges)
{
    struct operator_settings *n = &op->settings;
    struct state_decl *states;
    int rc = 0;

    /* job_graph_free frees what is set of it, even half decoded. */
    op->owns_settings = true;
    if ((rc = dec_id(d, p->operator_id, &op->operator_id, "operator id is not 16 bytes")) != 0)
        return rc;
    n->operator_id = op->operator_id;
    op->uid_given = p->uid_given;
    op->name = xstrdup(p->name ? p->name : "");
    if (!operator_kind_runs(p->kind))
        return bad(d, "unknown operator kind");
    n->kind = (enum operator_kind)p->kind;
    n->name = xstrdup(op->name);
    n->uid = dup_or_null(p->uid);
    n->in_type = dec_type_index(d, p->in_type, &rc);
    n->out_type = dec_type_index(d, p->out_type, &rc);
    if (rc != 0)
        return rc;
    if (n->out_type == NULL || (!operator_kind_is_source(n->kind) && n->in_type == NULL))
        return bad(d, "operator without its record types");
    n->in_type2 = dec_type_index(d, p->in_type2, &rc);
    if (rc != 0)
        return rc;
    if ((n->kind == OP_CO_MAP || n->kind == OP_CO_PROCESS || n->kind == OP_BROADCAST_PROCESS ||
         n->kind == OP_SQL_JOIN) != (n->in_type2 != NULL))
        return bad(d, "a two-input operator without its second input type, or the reverse");
    if ((rc = dec_key(d, p->key2, n->in_type2, &n->key2)) != 0 ||
        (rc = dec_fn(d, p->open, (void **)&n->open)) != 0 ||
        (rc = dec_fn(d, p->close, (void **)&n->close)) != 0)
        return rc;
    if (p->params.len) {
        uint8_t *params = xmalloc(p->params.len);

        memcpy(params, p->params.data, p->params.len);
        n->params = params;
        n->params_len = p->params.len;
    }
    if ((rc = dec_key(d, p->key, n->in_type, &n->key)) != 0)
        return rc;
    if (kind_decoders[n->kind] != NULL && (rc = kind_decoders[n->kind](d, p, op)) != 0)
        return rc;
    n->conf = operator_kind_conf(n->kind, &op->conn, &op->opconf);
    if (n->kind == OP_WINDOW && n->key.kind == KEY_NONE)
        return bad(d, "window operator without a key selector");
    if ((rc = dec_watermarks(d, p->watermarks, n)) != 0)
        return rc;
    n->parallelism = p->parallelism;
    n->max_parallelism = p->max_parallelism;
    if ((rc = dec_ints(d, p->chained, p->n_chained, nops, &op->chained, &op->nchained,
                       "chained operator out of range")) != 0)
        return rc;
    if (p->n_chained_tags != 0 && p->n_chained_tags != p->n_chained)
        return bad(d, "chained tags do not match the chained operators");
    op->chained_tags = xcalloc(p->n_chained + 1, sizeof *op->chained_tags);
    for (size_t i = 0; i < p->n_chained_tags; i++)
        op->chained_tags[i] = dup_or_null(p->chained_tags[i]);
    if (p->n_states > 64)
        return bad(d, "too many states on one operator");
    states = xcalloc(p->n_states + 1, sizeof *states);
    n->states = states;
    for (size_t i = 0; i < p->n_states; i++) {
        const PbState *ps = p->states[i];
        struct state_decl *sd = &states[n->nstates];
        void *fn;

        if (ps->name == NULL || !*ps->name || ps->kind < STATE_VALUE ||
            ps->kind > STATE_AGGREGATING || ps->ttl_ms < 0)
            return bad(d, "state declaration without a name, of an unknown kind or TTL");
        sd->name = xstrdup(ps->name);
        n->nstates++;
        sd->kind = (enum state_kind)ps->kind;
        sd->ttl_ms = ps->ttl_ms;
        sd->timestamped = ps->timestamped;
        if (ps->scope < SCOPE_KEYED || ps->scope > SCOPE_BROADCAST)
            return bad(d, "state of an unknown scope");
        sd->scope = (enum state_scope)ps->scope;
        sd->type = dec_type_index(d, ps->type, &rc);
        sd->key_type = dec_type_index(d, ps->key_type, &rc);
        sd->agg.acc_type = dec_type_index(d, ps->acc_type, &rc);
        sd->agg.out_type = dec_type_index(d, ps->agg_out_type, &rc);
        if (rc != 0)
            return rc;
        if (sd->type == NULL || (sd->kind == STATE_MAP && sd->key_type == NULL) ||
            (sd->kind == STATE_AGGREGATING && (sd->agg.acc_type == NULL || !sd->agg.out_type)))
            return bad(d, "state declaration without its types");
        if ((rc = dec_fn(d, ps->reduce, &fn)) != 0)
            return rc;
        *(void **)&sd->reduce = fn;
        if ((rc = dec_fn(d, ps->create, &fn)) != 0)
            return rc;
        *(void **)&sd->agg.create = fn;
        if ((rc = dec_fn(d, ps->add, &fn)) != 0)
            return rc;
        *(void **)&sd->agg.add = fn;
        if ((rc = dec_fn(d, ps->result, &fn)) != 0)
            return rc;
        *(void **)&sd->agg.result = fn;
        if ((rc = dec_fn(d, ps->merge, &fn)) != 0)
            return rc;
        *(void **)&sd->agg.merge = fn;
        if (d->lib != NULL && ((sd->kind == STATE_REDUCING && sd->reduce == NULL) ||
                               (sd->kind == STATE_AGGREGATING &&
                                (!sd->agg.create || !sd->agg.add || !sd->agg.result))))
            return bad(d, "state declaration without its functions");
    }
    for (int i = 0; i < op->nchained; i++)
        if (op->chained[i] <= index)
            return bad(d, "chain that loops back");
    return dec_ints(d, p->outputs, p->n_outputs, nedges, &op->outputs, &op->noutputs,
                    "operator output out of range");
}

int
job_graph_peek_id(const uint8_t *bytes, size_t len, spate_id *job_id, spate_error *err)
{
    Jobgraph__JobGraph *g = jobgraph__job_graph__unpack(NULL, len, bytes);
    int rc = 0;

    if (g == NULL)
        return spate_error_set(err, SPATE_EINVAL, "malformed job graph: cannot decode %zu bytes",
                               len);
    if (g->job_id.len != sizeof job_id->bytes)
        rc = spate_error_set(err, SPATE_EINVAL, "malformed job graph: job id is not 16 bytes");
    else
        memcpy(job_id->bytes, g->job_id.data, sizeof job_id->bytes);
    jobgraph__job_graph__free_unpacked(g, NULL);
    return rc;
}

int
job_graph_decode(const uint8_t *bytes, size_t len, const struct job_library *lib,
                 struct job_graph **out, spate_error *err)
{
    PbGraph *g = jobgraph__job_graph__unpack(NULL, len, bytes);
    struct job_graph *jg;
    struct dec d = { 0 };
    int rc = 0;

    if (g == NULL)
        return spate_error_set(err, SPATE_EINVAL, "malformed job graph: cannot decode %zu bytes",
                               len);
    jg = xcalloc(1, sizeof *jg);
    d.jg = jg;
    d.lib = lib;
    d.err = err;
    jg->name = xstrdup(g->name ? g->name : "");
    jg->library_name = dup_or_null(g->library_name);
    jg->derived_uids = g->derived_uids;
    jg->buffer_timeout_ms = g->buffer_timeout_ms;
    jg->savepoint_path =
        g->savepoint_path && *g->savepoint_path ? xstrdup(g->savepoint_path) : NULL;
    jg->allow_non_restored_state = g->allow_non_restored_state;
    if (g->buffer_timeout_ms < 0) {
        rc = bad(&d, "negative buffer timeout");
        goto out;
    }
    if ((rc = job_settings_decode(g->checkpointing, g->restart, &jg->checkpointing, &jg->restart,
                                  err)) != 0)
        goto out;
    if ((rc = dec_id(&d, g->job_id, &jg->job_id, "job id is not 16 bytes")) != 0)
        goto out;
    if (g->library_sha256.len == SHA256_BYTES)
        memcpy(jg->library_sha256, g->library_sha256.data, SHA256_BYTES);
    if (g->n_vertices == 0 || g->n_vertices > 100000 || g->n_edges > 1000000) {
        rc = bad(&d, "no vertices, or too many");
        goto out;
    }
    d.types = xcalloc(g->n_types ? g->n_types : 1, sizeof *d.types);
    d.ntypes = g->n_types;
    for (size_t i = 0; i < g->n_types; i++)
        if ((rc = dec_type(&d, g->types[i], 0, &d.types[i])) != 0)
            goto out;

    jg->edges = xcalloc(g->n_edges ? g->n_edges : 1, sizeof *jg->edges);
    jg->nedges = (int)g->n_edges;
    for (size_t i = 0; i < g->n_edges; i++) {
        const PbEdge *pe = g->edges[i];
        struct jg_edge *e = &jg->edges[i];

        if (pe->source < 0 || (size_t)pe->source >= g->n_vertices || pe->target < 0 ||
            (size_t)pe->target >= g->n_vertices || pe->target <= pe->source ||
            pe->partitioner < SHIP_FORWARD || pe->partitioner > SHIP_HASH) {
            rc = bad(&d, "edge between unknown vertices, backwards, or of an unknown kind");
            goto out;
        }
        e->source = pe->source;
        e->source_operator = pe->source_operator;
        e->target = pe->target;
        e->partitioner = (enum ship_strategy)pe->partitioner;
        if ((rc = dec_id(&d, pe->dataset_id, &e->dataset_id, "data set id is not 16 bytes")) != 0)
            goto out;
        e->tag = dup_or_null(pe->tag);
        if (pe->input_index < 0 || pe->input_index > 1) {
            rc = bad(&d, "edge into an input other than 0 or 1");
            goto out;
        }
        e->input_index = pe->input_index;
    }

    jg->vertices = xcalloc(g->n_vertices, sizeof *jg->vertices);
    jg->nvertices = (int)g->n_vertices;
    for (size_t i = 0; i < g->n_vertices; i++) {
        const PbVertex *pv = g->vertices[i];
        struct jg_vertex *v = &jg->vertices[i];

        v->name = xstrdup(pv->name ? pv->name : "");
        v->slot_sharing_group = xstrdup(
            pv->slot_sharing_group && *pv->slot_sharing_group ? pv->slot_sharing_group : "default");
        v->parallelism = pv->parallelism;
        v->max_parallelism = pv->max_parallelism;
        if ((rc = dec_id(&d, pv->id, &v->id, "vertex id is not 16 bytes")) != 0)
            goto out;
        if (pv->parallelism < 1 || pv->parallelism > 32768 || pv->max_parallelism < 1 ||
            pv->max_parallelism > 32768 || pv->n_operators < 1 || pv->n_operators > 1000) {
            rc = bad(&d, "vertex with a bad parallelism or operator count");
            goto out;
        }
        v->ops = xcalloc(pv->n_operators, sizeof *v->ops);
        v->nops = (int)pv->n_operators;
        for (size_t j = 0; j < pv->n_operators; j++) {
            if ((rc = dec_operator(&d, pv->operators[j], &v->ops[j], (int)j, v->nops,
                                   jg->nedges)) != 0)
                goto out;
            if (j > 0 && operator_kind_is_source(v->ops[j].settings.kind)) {
                rc = bad(&d, "a source inside a chain");
                goto out;
            }
        }
        if ((rc = dec_ints(&d, pv->inputs, pv->n_inputs, jg->nedges, &v->inputs, &v->ninputs,
                           "vertex input out of range")) != 0 ||
            (rc = dec_ints(&d, pv->outputs, pv->n_outputs, jg->nedges, &v->outputs, &v->noutputs,
                           "vertex output out of range")) != 0)
            goto out;
        if ((v->ninputs == 0) != operator_kind_is_source(v->ops[0].settings.kind)) {
            rc = bad(&d, "a vertex whose head is a source has inputs, or the reverse");
            goto out;
        }
    }
    /* Vertices' and operators' edge lists agree with the edges. */
    for (int i = 0; i < jg->nvertices; i++) {
        struct jg_vertex *v = &jg->vertices[i];

        for (int k = 0; k < v->ninputs; k++) {
            if (jg->edges[v->inputs[k]].target != i)
                rc = bad(&d, "vertex input that is not an edge into it");
            else if (jg->edges[v->inputs[k]].input_index == 1 &&
                     v->ops[0].settings.in_type2 == NULL)
                rc = bad(&d, "a second input into a one-input operator");
        }
        for (int k = 0; k < v->noutputs; k++)
            if (jg->edges[v->outputs[k]].source != i)
                rc = bad(&d, "vertex output that is not an edge out of it");
        for (int j = 0; j < v->nops; j++)
            for (int k = 0; k < v->ops[j].noutputs; k++)
                if (jg->edges[v->ops[j].outputs[k]].source != i ||
                    jg->edges[v->ops[j].outputs[k]].source_operator != j)
                    rc = bad(&d, "operator output that is not its edge");
        if (rc != 0)
            goto out;
    }
    for (int i = 0; i < jg->nedges; i++) {
        struct jg_edge *e = &jg->edges[i];
        struct jg_vertex *src = &jg->vertices[e->source];
        const struct spate_type *t;

        if (e->source_operator < 0 || e->source_operator >= src->nops) {
            rc = bad(&d, "edge from an unknown operator");
            goto out;
        }
        t = src->ops[e->source_operator].settings.out_type;
        if ((rc = dec_key(&d, g->edges[i]->key, t, &e->key)) != 0)
            goto out;
        if (e->partitioner == SHIP_HASH && e->key.kind == KEY_NONE) {
            rc = bad(&d, "hash edge without a key selector");
            goto out;
        }
        if (jg_edge_pointwise(e) && e->partitioner == SHIP_FORWARD &&
            src->parallelism != jg->vertices[e->target].parallelism) {
            rc = bad(&d, "forward edge between different parallelism");
            goto out;
        }
    }
out:
    free(d.types);
    jobgraph__job_graph__free_unpacked(g, NULL);
    if (rc != 0) {
        job_graph_free(jg);
        return rc;
    }
    *out = jg;
    return 0;
}
