/* Unit tests of src/streaming/job_graph_codec.c and user_code.c: a job
 * library's graph encoded, decoded in a private copy of the library, and run;
 * references outside the library; malformed bytes; bad libraries. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "streaming/job_graph_codec.h"
#include "streaming/types.h"
#include "sync_runner.h"

struct capture {
    uint8_t *bytes;
    size_t len;
    const struct job_library *lib;
};

static int
capture_execute(void *data, struct spate_env *env, struct job_graph *jg, spate_error *err)
{
    struct capture *c = data;

    (void)env;
    return job_graph_encode(jg, c->lib, &c->bytes, &c->len, err);
}

static char *
copy_dir(void)
{
    static char dir[] = "/tmp/spate-test-lib-XXXXXX";

    if (dir[strlen(dir) - 1] == 'X')
        cr_assert_not_null(mkdtemp(dir));
    return dir;
}

Test(codec, encoded_graph_runs_from_a_private_copy_of_the_library)
{
    struct job_library *lib, *copy;
    struct capture cap = { 0 };
    struct executor ex = { "capture", capture_execute, &cap };
    spate_error err = { 0 };
    spate_env *env = env_new(NULL, &ex);
    int64_t results[2] = { 0, 0 };
    char arg[32];
    char *argv[] = { "testjob", arg, NULL };
    struct job_graph *jg;
    struct accumulators acc;
    char *failure;
    int64_t (*calls)(void);

    cr_assert_eq(job_library_open(TESTJOB_SO, NULL, NULL, &lib, &err), 0, "%s", err.message);
    cr_assert_eq(job_library_require_main(lib, &err), 0);
    cap.lib = lib;
    env->library = lib;
    snprintf(arg, sizeof arg, "%p", (void *)results);
    cr_assert_eq(lib->main(env, 2, argv), 0, "%s", env->error.message);
    cr_assert_gt(cap.len, 0);

    cr_assert_eq(job_library_open(TESTJOB_SO, copy_dir(), lib->sha256, &copy, &err), 0, "%s",
                 err.message);
    cr_assert_neq(copy->base, lib->base);
    cr_assert_eq(job_graph_decode(cap.bytes, cap.len, copy, &jg, &err), 0, "%s", err.message);
    cr_assert_eq(jg->nvertices, 2);
    cr_assert_str_eq(jg->name, "testjob");
    /* The map's function lies in the copy, at the offset it had in the
     * first load. */
    cr_assert_null(jg->vertices[0].ops[1].node);
    cr_assert_eq(jg->vertices[0].ops[1].settings.kind, OP_MAP);
    cr_assert_eq(jg->vertices[0].ops[1].settings.params_len, sizeof(int64_t));
    cr_assert_eq((uintptr_t)jg->vertices[0].ops[1].opconf.function.fn.any - copy->base,
                 (uintptr_t)env->nodes[1]->opconf.function.fn.any - lib->base);
    /* The generator's configuration is its own struct, its function too. */
    cr_assert_eq(jg->vertices[0].ops[0].settings.kind, OP_SOURCE_GENERATOR);
    cr_assert_eq(jg->vertices[0].ops[0].settings.conf, &jg->vertices[0].ops[0].conn.generator);
    cr_assert_eq(jg->vertices[0].ops[0].conn.generator.count, 100);
    cr_assert_eq(jg->vertices[0].ops[0].conn.generator.type,
                 jg->vertices[0].ops[0].settings.out_type);
    cr_assert_eq((uintptr_t)jg->vertices[0].ops[0].conn.generator.fn - copy->base,
                 (uintptr_t)env->nodes[0]->conn.generator.fn - lib->base);
    accumulators_init(&acc);
    sync_run(jg, &acc, &failure);
    cr_assert_null(failure);
    /* 100 running sums of i*i+1 keyed by parity; the largest is the odd
     * i's total: 166650 + 50. */
    cr_assert_eq(results[0], 100);
    cr_assert_eq(results[1], 166700);
    *(void **)&calls = dlsym(copy->handle, "testjob_calls");
    cr_assert_not_null(calls);
    cr_assert_eq(calls(), 100, "the copy's own global counted the calls");
    *(void **)&calls = dlsym(lib->handle, "testjob_calls");
    cr_assert_eq(calls(), 0, "the first load's global is untouched");
    accumulators_release(&acc);
    job_graph_free(jg);
    job_library_close(copy);
    job_library_close(lib);
    free(cap.bytes);
    env_free(env);
}

static void
local_map(spate_ctx *ctx, const void *in, void *out)
{
    (void)ctx;
    *(int64_t *)out = *(const int64_t *)in;
}

Test(codec, a_function_outside_the_job_library_is_a_clear_error)
{
    struct job_library *lib;
    spate_error err = { 0 };
    spate_env *env = env_new(NULL, NULL);
    struct job_graph *jg;
    uint8_t *bytes = NULL;
    size_t len;
    int64_t one = 1;

    cr_assert_eq(job_library_open(TESTJOB_SO, NULL, NULL, &lib, &err), 0, "%s", err.message);
    spate_sink_print(spate_map(spate_source_collection(env, spate_type_int64(), &one, 1), local_map,
                               spate_type_int64()));
    cr_assert_eq(job_graph_build(env, "x", &jg, &err), 0);
    cr_assert_eq(job_graph_encode(jg, lib, &bytes, &len, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "the function of 'Map'") != NULL, "%s", err.message);
    cr_assert(strstr(err.message, "is outside the job library") != NULL, "%s", err.message);
    job_graph_free(jg);
    job_library_close(lib);
    env_free(env);
}

/* Encodes env's graph and decodes it again (no library: no user code). */
static int
round_trip(spate_env *env, struct job_graph **back, spate_error *err)
{
    struct job_graph *jg;
    uint8_t *bytes = NULL;
    size_t len;
    int rc;

    cr_assert_eq(job_graph_build(env, "x", &jg, err), 0, "%s", err->message);
    cr_assert_eq(job_graph_encode(jg, NULL, &bytes, &len, err), 0, "%s", err->message);
    rc = job_graph_decode(bytes, len, NULL, back, err);
    free(bytes);
    job_graph_free(jg);
    return rc;
}

/* The operator of kind `kind` in a decoded graph: its settings and the
 * kind's configuration, which settings.conf points to, and no StreamGraph
 * node. */
static const struct jg_operator *
decoded(const struct job_graph *jg, enum operator_kind kind)
{
    for (int v = 0; v < jg->nvertices; v++)
        for (int o = 0; o < jg->vertices[v].nops; o++)
            if (jg->vertices[v].ops[o].settings.kind == kind) {
                const struct jg_operator *op = &jg->vertices[v].ops[o];

                cr_assert_null(op->node, "a decoded graph makes up no StreamGraph node");
                cr_assert_eq(op->settings.conf, operator_kind_conf(kind, &op->conn, &op->opconf));
                return op;
            }
    cr_assert_fail("no %s in the decoded graph", operator_kind_name(kind));
    return NULL;
}

Test(codec, each_source_and_sink_decodes_into_its_own_configuration)
{
    spate_env *env = env_new(NULL, NULL);
    struct job_graph *back;
    spate_error err = { 0 };
    int64_t v[3] = { 5, 6, 7 };
    const struct collection_source_config *c;

    spate_sink_text_file(spate_source_socket(env, "localhost", 9999), "/tmp/out-a");
    spate_sink_print(spate_source_collection(env, spate_type_int64(), v, 3));
    /* a partitioned SQL table's: each record its bucket and its line */
    spate_sink_text_file(spate_source_text_file(env, "/tmp/in-b"), "/tmp/out-b")
        ->conn.file_sink.bucketed = true;
    cr_assert_eq(round_trip(env, &back, &err), 0, "%s", err.message);
    cr_assert_str_eq(decoded(back, OP_SOURCE_SOCKET)->conn.socket.host, "localhost");
    cr_assert_eq(decoded(back, OP_SOURCE_SOCKET)->conn.socket.port, 9999);
    cr_assert_str_eq(decoded(back, OP_SOURCE_FILE)->conn.file_source.path, "/tmp/in-b");
    c = &decoded(back, OP_SOURCE_COLLECTION)->conn.collection;
    cr_assert_eq(c->nrecords, 3);
    cr_assert_eq(c->records_len, env->nodes[2]->conn.collection.records_len);
    cr_assert_eq(memcmp(c->records, env->nodes[2]->conn.collection.records, c->records_len), 0);
    cr_assert_eq(c->type->kind, TYPE_INT64);
    cr_assert_eq(decoded(back, OP_SINK_PRINT)->conn.print.type->kind, TYPE_INT64);
    cr_assert_eq(decoded(back, OP_SINK_FILE)->conn.file_sink.type->kind, TYPE_STRING);
    for (int i = 0; i < back->nvertices; i++) {
        const struct jg_operator *last = &back->vertices[i].ops[back->vertices[i].nops - 1];

        if (last->settings.kind != OP_SINK_FILE)
            continue;
        cr_assert(strncmp(last->conn.file_sink.path, "/tmp/out-", 9) == 0);
        cr_assert_eq(last->conn.file_sink.bucketed,
                     strcmp(last->conn.file_sink.path, "/tmp/out-b") == 0, "%s",
                     last->conn.file_sink.path);
    }
    job_graph_free(back);
    env_free(env);
}

Test(codec, a_file_sink_keeps_its_format_and_json_field_names)
{
    static const char *const names[] = { "word", "count", NULL };
    spate_env *env = env_new(NULL, NULL);
    const spate_type *fields[] = { spate_type_string(), spate_type_int64() };
    const spate_type *pair = spate_type_tuple(env, 2, fields);
    struct job_graph *back;
    spate_error err = { 0 };
    int seen = 0;

    spate_sink_file(spate_source_collection(env, pair, NULL, 0), "/tmp/out-json", SPATE_FILE_JSON,
                    names);
    spate_sink_file(spate_source_collection(env, pair, NULL, 0), "/tmp/out-csv", SPATE_FILE_CSV,
                    NULL);
    cr_assert_null(spate_env_error(env));
    cr_assert_eq(round_trip(env, &back, &err), 0, "%s", err.message);
    for (int i = 0; i < back->nvertices; i++) {
        const struct jg_operator *last = &back->vertices[i].ops[back->vertices[i].nops - 1];
        const struct file_sink_config *c = &last->conn.file_sink;

        if (last->settings.kind != OP_SINK_FILE)
            continue;
        seen++;
        if (strcmp(c->path, "/tmp/out-json") == 0) {
            cr_assert_eq(c->format, SPATE_FILE_JSON);
            cr_assert_eq(c->nfield_names, 2);
            cr_assert_str_eq(c->field_names[0], "word");
            cr_assert_str_eq(c->field_names[1], "count");
        } else {
            cr_assert_str_eq(c->path, "/tmp/out-csv");
            cr_assert_eq(c->format, SPATE_FILE_CSV);
            cr_assert_eq(c->nfield_names, 0);
        }
    }
    cr_assert_eq(seen, 2);
    job_graph_free(back);
    env_free(env);
}

Test(codec, a_named_connector_keeps_its_name_and_options_in_order)
{
    spate_env *env = env_new(NULL, NULL);
    const char *const src_opts[] = { "topic", "in", "scan.startup.mode", "earliest-offset", NULL };
    const char *const sink_opts[] = { "topic", "out", NULL };
    const struct named_connector_config *c;
    struct job_graph *back;
    spate_error err = { 0 };

    spate_sink_to(spate_from_source(env, "kafka", spate_type_string(), src_opts), "kafka",
                  sink_opts);
    cr_assert_eq(round_trip(env, &back, &err), 0, "%s", err.message);
    c = &decoded(back, OP_SOURCE_CONNECTOR)->conn.named;
    cr_assert_str_eq(c->connector, "kafka");
    cr_assert_eq(c->noptions, 2);
    cr_assert_str_eq(c->options[0], "topic");
    cr_assert_str_eq(c->options[1], "in");
    cr_assert_str_eq(named_connector_option(c, "scan.startup.mode"), "earliest-offset");
    cr_assert_eq(c->type->kind, TYPE_STRING);
    c = &decoded(back, OP_SINK_CONNECTOR)->conn.named;
    cr_assert_str_eq(named_connector_option(c, "topic"), "out");
    cr_assert_null(named_connector_option(c, "scan.startup.mode"));
    cr_assert_str_eq(decoded(back, OP_SINK_CONNECTOR)->settings.name, "Sink: kafka");
    job_graph_free(back);
    env_free(env);
}

Test(codec, named_connector_options_that_are_not_pairs_are_refused)
{
    spate_env *env = env_new(NULL, NULL);
    const char *const odd[] = { "topic", NULL };

    spate_from_source(env, "kafka", spate_type_string(), odd);
    cr_assert_not_null(spate_env_error(env));
    cr_assert(strstr(spate_env_error(env)->message, "option 1 has no value") != NULL, "%s",
              spate_env_error(env)->message);
    env_free(env);
}

/* The operator kinds' settings decode into their own structs
 * (operator_config.h); without a library no function is resolved, so the
 * window's function is set as a client would have it without user code. */
Test(codec, each_operator_kind_decodes_into_its_own_configuration)
{
    spate_env *env = env_new(NULL, NULL);
    const spate_type *fields[2] = { spate_type_int64(), spate_type_double() };
    const spate_type *pair = spate_type_tuple(env, 2, fields);
    struct {
        int64_t k;
        double v;
    } recs[2] = { { 1, 0.5 }, { 2, 1.5 } };
    spate_tag late = spate_output_tag(env, "late", pair);
    struct job_graph *back;
    spate_error err = { 0 };
    const struct window_config *w;
    spate_stream *src = spate_source_collection(env, pair, recs, 2), *win;

    spate_sink_print(
        spate_uid(spate_name(spate_sum(spate_key_by_field(src, 0), 1), "Sums"), "sums"));
    win = spate_window(spate_key_by_field(src, 0), spate_tumbling_event_time(1000));
    spate_window_trigger_count(win, 7);
    spate_allowed_lateness(win, 250);
    spate_late_data_side_output(win, late);
    win->opconf.window.function = WINDOW_FN_REDUCE;
    spate_sink_print(win);
    cr_assert_eq(round_trip(env, &back, &err), 0, "%s", err.message);
    cr_assert_eq(decoded(back, OP_SUM)->opconf.keyed_reduce.sum_field, 1);
    cr_assert_eq(decoded(back, OP_SUM)->settings.key.kind, KEY_FIELD);
    cr_assert_eq(decoded(back, OP_SUM)->settings.key.field, 0);
    cr_assert_str_eq(decoded(back, OP_SUM)->settings.uid, "sums");
    cr_assert_str_eq(decoded(back, OP_SUM)->settings.name, "Sums");
    cr_assert_eq(decoded(back, OP_SUM)->settings.in_type->kind, TYPE_TUPLE);
    w = &decoded(back, OP_WINDOW)->opconf.window;
    cr_assert_eq(w->assigner.kind, SPATE_WINDOW_TUMBLING);
    cr_assert(w->assigner.event_time);
    cr_assert_eq(w->assigner.size_ms, 1000);
    cr_assert_eq(w->trigger, TRIGGER_COUNT);
    cr_assert_eq(w->trigger_count, 7);
    cr_assert_eq(w->lateness_ms, 250);
    cr_assert_str_eq(w->late_tag, "late");
    cr_assert_eq(w->function, WINDOW_FN_REDUCE);
    job_graph_free(back);
    env_free(env);
}

Test(codec, a_sum_of_a_field_out_of_range_is_refused_by_name)
{
    spate_env *env = env_new(NULL, NULL);
    const spate_type *fields[2] = { spate_type_int64(), spate_type_double() };
    const spate_type *pair = spate_type_tuple(env, 2, fields);
    struct {
        int64_t k;
        double v;
    } rec = { 1, 0.5 };
    struct job_graph *back = NULL;
    spate_error err = { 0 };
    spate_stream *sum =
        spate_sum(spate_key_by_field(spate_source_collection(env, pair, &rec, 1), 0), 1);

    spate_sink_print(sum);
    sum->opconf.keyed_reduce.sum_field = 5; /* as a client that skipped the API's check */
    cr_assert_eq(round_trip(env, &back, &err), SPATE_EINVAL);
    cr_assert_null(back);
    cr_assert(strstr(err.message, "sum field out of range") != NULL, "%s", err.message);
    env_free(env);
}

Test(codec, a_socket_source_of_a_port_out_of_range_is_refused_by_name)
{
    spate_env *env = env_new(NULL, NULL);
    struct job_graph *back = NULL;
    spate_error err = { 0 };
    spate_stream *src = spate_source_socket(env, "localhost", 9999);

    spate_sink_print(src);
    src->conn.socket.port = 70000; /* as a client that skipped the API's check */
    cr_assert_eq(round_trip(env, &back, &err), SPATE_EINVAL);
    cr_assert_str_eq(err.message,
                     "malformed job graph: a socket source's port is not within 1 to 65535");
    env_free(env);
}

Test(codec, malformed_bytes_are_errors_not_crashes)
{
    struct job_graph *jg;
    spate_error err = { 0 };
    uint8_t junk[64];

    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (uint8_t)(i * 37 + 11);
    cr_assert_eq(job_graph_decode(junk, sizeof junk, NULL, &jg, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "malformed job graph") != NULL, "%s", err.message);
    cr_assert_eq(job_graph_decode(junk, 0, NULL, &jg, &err), SPATE_EINVAL);
}

Test(codec, truncations_of_a_real_graph_never_crash)
{
    spate_env *env = env_new(NULL, NULL);
    struct job_graph *jg, *back;
    spate_error err = { 0 };
    uint8_t *bytes = NULL;
    size_t len;
    int64_t v[3] = { 1, 2, 3 };

    spate_sink_print(
        spate_sum(spate_key_by_value(spate_source_collection(env, spate_type_int64(), v, 3)), -1));
    cr_assert_eq(job_graph_build(env, "x", &jg, &err), 0);
    cr_assert_eq(job_graph_encode(jg, NULL, &bytes, &len, &err), 0, "%s", err.message);
    cr_assert_eq(job_graph_decode(bytes, len, NULL, &back, &err), 0, "%s", err.message);
    cr_assert_eq(back->nvertices, 2);
    cr_assert_eq(back->edges[0].partitioner, SHIP_HASH);
    job_graph_free(back);
    for (size_t cut = 0; cut < len; cut++) {
        if (job_graph_decode(bytes, cut, NULL, &back, &err) == 0)
            job_graph_free(back);
    }
    for (size_t i = 0; i < len; i++) {
        uint8_t saved = bytes[i];

        bytes[i] ^= 0x5a;
        if (job_graph_decode(bytes, len, NULL, &back, &err) == 0)
            job_graph_free(back);
        bytes[i] = saved;
    }
    free(bytes);
    job_graph_free(jg);
    env_free(env);
}

Test(codec, bad_job_libraries)
{
    struct job_library *lib;
    spate_error err = { 0 };
    char path[] = "/tmp/spate-test-notelf-XXXXXX";
    int fd = mkstemp(path);

    cr_assert_eq(write(fd, "#!/bin/sh\necho hi\n", 18), 18);
    close(fd);
    cr_assert_eq(job_library_open(path, NULL, NULL, &lib, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "not an ELF shared object") != NULL, "%s", err.message);
    unlink(path);
    cr_assert_eq(job_library_open("/nonexistent/job.so", NULL, NULL, &lib, &err), SPATE_ENOENT);
    cr_assert(strstr(err.message, "cannot open job library") != NULL);
    /* A shared object without spate_job_main. */
    cr_assert_eq(job_library_open(NOMAIN_SO, NULL, NULL, &lib, &err), 0, "%s", err.message);
    cr_assert_eq(job_library_require_main(lib, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "has no spate_job_main") != NULL);
    job_library_close(lib);
}
