/* Unit tests of src/connectors/connectors.c and of how streaming finds a
 * connector: the built-in table covers every source and sink kind, and a
 * kind missing from a task's table is a clear error, not a crash. */
#include <criterion/criterion.h>
#include <string.h>

#include "connectors/connectors.h"
#include "streaming/operator.h"
#include "streaming/stream_graph.h"

static void
discard(struct output *self, const void *rec, const struct record_meta *meta)
{
    (void)self;
    (void)rec;
    (void)meta;
}

static void
discard_watermark(struct output *self, int64_t watermark)
{
    (void)self;
    (void)watermark;
}

Test(connectors, the_builtin_table_has_every_source_and_sink_kind_once)
{
    const struct connector_table *t = connectors_builtin();
    /* The kinds that carry a configuration of their own (connector_config.h). */
    static const enum operator_kind kinds[] = {
        OP_SOURCE_COLLECTION, OP_SOURCE_GENERATOR, OP_SOURCE_SOCKET,  OP_SOURCE_FILE, OP_SINK_PRINT,
        OP_SINK_FILE,         OP_SOURCE_CONNECTOR, OP_SINK_CONNECTOR, OP_SOURCE,      OP_SINK_API
    };

    cr_assert_eq(t->count, sizeof kinds / sizeof kinds[0]);
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        int found = 0;

        for (size_t i = 0; i < t->count; i++) {
            const struct operator_vtable *vt = t->entries[i].vt;

            if (t->entries[i].kind != kinds[k])
                continue;
            found++;
            cr_assert_neq(vt->state, 0, "%s declares no state", operator_kind_name(kinds[k]));
            cr_assert(vt->open != NULL && vt->close != NULL);
            if (operator_kind_is_source(kinds[k]))
                cr_assert(vt->poll != NULL, "%s cannot poll", operator_kind_name(kinds[k]));
            else
                cr_assert(vt->process != NULL, "%s cannot take records",
                          operator_kind_name(kinds[k]));
        }
        cr_assert_eq(found, 1, "%s is in the table %d times", operator_kind_name(kinds[k]), found);
    }
}

Test(connectors, a_kind_missing_from_the_task_table_is_a_clear_error)
{
    spate_env *env = env_new(NULL, NULL);
    spate_stream *src = spate_source_text_file(env, "/nonexistent/in.txt");
    struct operator_settings settings;
    struct output out = { .collect = discard, .emit_watermark = discard_watermark };
    static const struct connector_entry only_print[] = { { OP_SINK_PRINT, NULL } };
    const struct connector_table print_table = { only_print, 1, NULL };
    struct task_info task = { 0 };
    struct stream_operator *op = NULL;
    spate_error err = { 0 };

    task.parallelism = 1;
    task.max_parallelism = 128;
    task.task_name = "files";
    stream_node_settings(src, &settings);
    /* No table at all, as a runner that installed none. */
    cr_assert_eq(operator_new(&settings, 0, &task, &out, &op, &err), SPATE_EINVAL);
    cr_assert_null(op);
    cr_assert_str_eq(err.message, "no connector for kind 'Source: File': the task's connector "
                                  "table (task_info.connectors) does not have it");
    /* A table without the kind. */
    task.connectors = &print_table;
    memset(&err, 0, sizeof err);
    cr_assert_eq(operator_new(&settings, 0, &task, &out, &op, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "no connector for kind 'Source: File'") != NULL, "%s",
              err.message);
    /* The built-in table has it. */
    task.connectors = connectors_builtin();
    memset(&err, 0, sizeof err);
    cr_assert_eq(operator_new(&settings, 0, &task, &out, &op, &err), 0, "%s", err.message);
    cr_assert_eq(op->conf, &src->conn.file_source, "the source reads its own configuration");
    operator_free(op);
    env_free(env);
}

Test(connectors, an_unknown_named_connector_is_a_clear_error_naming_it)
{
    spate_env *env = env_new(NULL, NULL);
    const char *const opts[] = { "topic", "in", NULL };
    spate_stream *src = spate_from_source(env, "no-such-thing", spate_type_string(), opts);
    struct operator_settings settings;
    struct output out = { .collect = discard, .emit_watermark = discard_watermark };
    struct task_info task = { 0 };
    struct stream_operator *op = NULL;
    spate_error err = { 0 };

    task.parallelism = 1;
    task.max_parallelism = 128;
    task.task_name = "named";
    task.connectors = connectors_builtin();
    stream_node_settings(src, &settings);
    cr_assert_eq(operator_new(&settings, 0, &task, &out, &op, &err), SPATE_ENOENT, "%s",
                 err.message);
    cr_assert_null(op);
    cr_assert(strstr(err.message, "unknown connector 'no-such-thing'") != NULL, "%s", err.message);
    cr_assert(strstr(err.message, "libspate_no-such-thing.so") != NULL, "%s", err.message);
    env_free(env);
}
