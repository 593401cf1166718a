/* Unit tests of src/streaming/stream_graph.c: typed side output tags and
 * the errors spate_execute gives for side outputs nothing sends to, sink
 * names, and file paths made absolute where the job is built. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "streaming/job_graph.h"
#include "streaming/stream_graph.h"
#include "streaming/types.h"

struct ev {
    int64_t key;
    int64_t ts;
};

static const spate_type *
ev_type(spate_env *env)
{
    const spate_type *f[] = { spate_type_int64(), spate_type_int64() };

    return spate_type_tuple(env, 2, f);
}

static void
gen(spate_ctx *ctx, uint64_t i, void *out)
{
    (void)ctx;
    *(struct ev *)out = (struct ev){ (int64_t)i % 3, (int64_t)i };
}

static void
same(spate_ctx *ctx, const void *in, void *out)
{
    (void)ctx;
    *(struct ev *)out = *(const struct ev *)in;
}

static void
route(spate_ctx *ctx, const void *in)
{
    spate_emit(ctx, in);
}

static void
add(spate_ctx *ctx, const void *a, const void *b, void *out)
{
    (void)ctx;
    *(struct ev *)out = *(const struct ev *)a;
    ((struct ev *)out)->ts += ((const struct ev *)b)->ts;
}

static void
sink(spate_ctx *ctx, const void *in)
{
    (void)ctx;
    (void)in;
}

static spate_stream *
events(spate_env *env)
{
    return spate_source_generator(env, gen, ev_type(env), 10, 0);
}

/* spate_execute's outcome: a build error (its message in *msg), or
 * SPATE_ESTATE for a graph that built (there is no executor to run it). */
static int
execute(spate_env *env, const char **msg)
{
    int rc = spate_execute(env, "test");

    *msg = spate_env_error(env) ? spate_env_error(env)->message : "";
    return rc;
}

Test(stream_graph, a_process_function_s_side_output_builds)
{
    spate_env *env = env_new(NULL, NULL);
    spate_tag errors = spate_output_tag(env, "errors", ev_type(env));
    spate_stream *p = spate_process(events(env), route, ev_type(env));
    const char *msg;

    cr_assert_neq(errors.id, 0);
    spate_sink(spate_side_output(p, errors), sink);
    spate_sink(p, sink);
    cr_assert_eq(execute(env, &msg), SPATE_ESTATE, "%s", msg);
    cr_assert(strstr(msg, "no executor") != NULL, "%s", msg);
    env_free(env);
}

Test(stream_graph, a_side_output_of_an_operator_that_sends_none_is_an_error)
{
    spate_env *env = env_new(NULL, NULL);
    spate_tag errors = spate_output_tag(env, "errors", ev_type(env));
    spate_stream *m = spate_name(spate_map(events(env), same, ev_type(env)), "Parse");
    const char *msg;

    spate_sink(spate_side_output(m, errors), sink);
    cr_assert_eq(execute(env, &msg), SPATE_EINVAL);
    cr_assert_str_eq(msg, "side output 'errors' of operator 'Parse': a Map sends no side outputs "
                          "(process functions and windows do)");
    env_free(env);
}

Test(stream_graph, a_window_s_side_output_must_be_its_late_data_tag)
{
    spate_env *env = env_new(NULL, NULL);
    spate_tag late = spate_output_tag(env, "late", ev_type(env));
    spate_tag other = spate_output_tag(env, "lates", ev_type(env));
    spate_stream *w =
        spate_window(spate_key_by_field(events(env), 0), spate_tumbling_event_time(5));
    const char *msg;

    spate_late_data_side_output(w, late);
    w = spate_name(spate_window_reduce(w, add, NULL, NULL), "Sum");
    spate_sink(spate_side_output(w, other), sink);
    cr_assert_eq(execute(env, &msg), SPATE_EINVAL);
    cr_assert_str_eq(msg,
                     "side output 'lates' of window 'Sum': the window sends nothing there (its "
                     "late data goes to 'late', and it has no process window function)");
    env_free(env);
}

Test(stream_graph, the_late_data_tag_builds_in_either_order)
{
    spate_env *env = env_new(NULL, NULL);
    spate_tag late = spate_output_tag(env, "late", ev_type(env));
    spate_stream *w =
        spate_window(spate_key_by_field(events(env), 0), spate_tumbling_event_time(5));
    const char *msg;

    /* The side output asked for before the window function and the tag. */
    spate_sink(spate_side_output(w, late), sink);
    spate_late_data_side_output(w, late);
    spate_sink(spate_window_reduce(w, add, NULL, NULL), sink);
    cr_assert_eq(execute(env, &msg), SPATE_ESTATE, "%s", msg);
    env_free(env);
}

Test(stream_graph, a_late_data_tag_of_another_type_is_an_error)
{
    spate_env *env = env_new(NULL, NULL);
    spate_tag late = spate_output_tag(env, "late", spate_type_string());
    spate_stream *w =
        spate_window(spate_key_by_field(events(env), 0), spate_tumbling_event_time(5));
    const char *msg;

    spate_late_data_side_output(spate_name(w, "Counts"), late);
    spate_sink(spate_window_reduce(w, add, NULL, NULL), sink);
    cr_assert_eq(execute(env, &msg), SPATE_EINVAL);
    cr_assert_str_eq(msg, "late data side output 'late' of window 'Counts' has type string, but "
                          "the window's records are (int64,int64)");
    env_free(env);
}

Test(stream_graph, one_tag_name_names_one_type)
{
    spate_env *env = env_new(NULL, NULL);
    spate_tag a = spate_output_tag(env, "late", ev_type(env));
    spate_tag b = spate_output_tag(env, "late", ev_type(env));

    cr_assert_eq(a.id, b.id, "the same name and type is the same tag");
    cr_assert_null(spate_env_error(env));
    spate_output_tag(env, "late", spate_type_int64());
    cr_assert_not_null(spate_env_error(env));
    cr_assert_str_eq(spate_env_error(env)->message,
                     "output tag 'late' was made with type (int64,int64) and again with type "
                     "int64: a tag's name names one type in a job");
    env_free(env);
}

Test(stream_graph, a_tag_not_made_for_the_job_is_an_error)
{
    spate_env *env = env_new(NULL, NULL), *other = env_new(NULL, NULL);
    spate_tag foreign = spate_output_tag(other, "errors", spate_type_int64());
    spate_stream *p = spate_process(events(env), route, ev_type(env));
    const char *msg;

    spate_sink(spate_side_output(p, foreign), sink);
    cr_assert_eq(execute(env, &msg), SPATE_EINVAL);
    cr_assert_str_eq(msg, "spate_side_output: not a tag made by spate_output_tag for this job");
    env_free(env);
    env_free(other);

    env = env_new(NULL, NULL);
    spate_output_tag(env, "", spate_type_int64());
    cr_assert_eq(execute(env, &msg), SPATE_EINVAL);
    cr_assert_str_eq(msg, "an output tag needs a name and a type");
    env_free(env);
}

static struct job_graph *
build(spate_env *env)
{
    struct job_graph *jg = NULL;
    spate_error err = { 0 };

    cr_assert_null(spate_env_error(env), "%s", env->error.message);
    cr_assert_eq(job_graph_build(env, "test", &jg, &err), 0, "%s", err.message);
    return jg;
}

/* The name of the operator of the graph that runs node n. */
static const char *
op_name(const struct job_graph *jg, const spate_stream *n)
{
    for (int v = 0; v < jg->nvertices; v++)
        for (int o = 0; o < jg->vertices[v].nops; o++)
            if (jg->vertices[v].ops[o].node == n)
                return jg->vertices[v].ops[o].name;
    cr_assert_fail("no operator for node %d", n->id);
    return NULL;
}

Test(stream_graph, each_sink_shows_its_own_name)
{
    spate_env *env = env_new(NULL, NULL);
    spate_stream *s = events(env);
    spate_stream *file = spate_sink_text_file(s, "/tmp/out");
    spate_stream *counts = spate_name(spate_sink_text_file(s, "/tmp/counts"), "Counts");
    spate_stream *late = spate_name(spate_sink_text_file(s, "/tmp/late"), "Sink: Late");
    spate_stream *print = spate_sink_print(s);
    spate_stream *user = spate_sink(s, sink);
    spate_stream *audit = spate_name(spate_sink(s, sink), "Audit");
    spate_stream *csv = spate_sink_file(s, "/tmp/csv", SPATE_FILE_CSV, NULL);
    spate_stream *json = spate_sink_file(s, "/tmp/json", SPATE_FILE_JSON, NULL);
    spate_stream *named_csv =
        spate_name(spate_sink_file(s, "/tmp/c2", SPATE_FILE_CSV, NULL), "Rows");
    struct job_graph *jg = build(env);

    cr_assert_str_eq(op_name(jg, file), "Sink: Text File");
    cr_assert_str_eq(op_name(jg, counts), "Sink: Counts");
    cr_assert_str_eq(op_name(jg, late), "Sink: Late");
    cr_assert_str_eq(op_name(jg, print), "Sink: Print to Std. Out");
    cr_assert_str_eq(op_name(jg, user), "Sink: Unnamed");
    cr_assert_str_eq(op_name(jg, audit), "Sink: Audit");
    cr_assert_str_eq(op_name(jg, csv), "Sink: CSV File");
    cr_assert_str_eq(op_name(jg, json), "Sink: JSON File");
    cr_assert_str_eq(op_name(jg, named_csv), "Sink: Rows");
    job_graph_free(jg);
    env_free(env);
}

Test(stream_graph, file_paths_are_absolute_where_the_job_is_built)
{
    spate_env *env = env_new(NULL, NULL);
    char cwd[PATH_MAX], want[PATH_MAX + 32];
    spate_stream *in, *out, *uri, *abs;

    cr_assert_not_null(getcwd(cwd, sizeof cwd));
    in = spate_source_text_file(env, "clicks.csv");
    out = spate_sink_text_file(in, "./out/counts");
    uri = spate_source_text_file(env, "file:///data/clicks");
    abs = spate_sink_text_file(uri, "/data/out");
    snprintf(want, sizeof want, "%s/clicks.csv", cwd);
    cr_assert_str_eq(in->conn.file_source.path, want);
    snprintf(want, sizeof want, "%s/out/counts", cwd);
    cr_assert_str_eq(out->conn.file_sink.path, want);
    cr_assert_str_eq(uri->conn.file_source.path, "/data/clicks");
    cr_assert_str_eq(abs->conn.file_sink.path, "/data/out");
    cr_assert_null(spate_env_error(env));
    spate_sink_text_file(in, "s3://bucket/out");
    cr_assert_not_null(spate_env_error(env));
    cr_assert_str_eq(spate_env_error(env)->message,
                     "text file sink 's3://bucket/out': only local files are read and written "
                     "here (a path or a file: URI, not s3:)");
    env_free(env);
}

static void
on_words(spate_ctx *ctx, const void *in)
{
    (void)ctx;
    (void)in;
}

static void
words(spate_ctx *ctx, uint64_t i, void *out)
{
    (void)ctx;
    *(spate_str *)out = (spate_str){ i % 2 ? "odd" : "even", i % 2 ? 3 : 4 };
}

Test(stream_graph, connected_keyed_streams_share_one_key_type)
{
    spate_env *env = env_new(NULL, NULL);
    spate_stream *w = spate_source_generator(env, words, spate_type_string(), 10, 0);
    spate_stream *c = spate_connect(spate_key_by_field(events(env), 0), spate_key_by_value(w));
    const char *msg;

    spate_sink(spate_co_process(c, route, on_words, ev_type(env)), sink);
    cr_assert_eq(execute(env, &msg), SPATE_EINVAL);
    cr_assert_str_eq(msg, "co_process: the keys of its two inputs are int64 and string: keyed "
                          "streams connect by keys of one type");
    env_free(env);

    env = env_new(NULL, NULL);
    c = spate_connect(spate_key_by_field(events(env), 0), spate_key_by_field(events(env), 1));
    spate_sink(spate_co_process(c, route, route, ev_type(env)), sink);
    cr_assert_eq(execute(env, &msg), SPATE_ESTATE, "%s", msg);
    env_free(env);
}
