/* Unit tests of src/connectors/changelog_line.c (an upsert sink's lines
 * into keys and values) and upsert_file_sink.c (the upsert-filesystem
 * connector through the plugin interface): what each row kind writes, the
 * key formats, malformed lines; the compacted file at commits, a restore
 * from an older checkpoint's committable. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "connectors/changelog_line.h"
#include "connectors/connector_factory.h"
#include "core/fs.h"

static struct named_connector_config
config(char **options, size_t n)
{
    return (struct named_connector_config){ NULL, "test", options, n };
}

static enum changelog_action
split(const struct changelog_format *f, const char *line, char *key, char *value)
{
    struct byte_buf k = { 0 }, v = { 0 };
    enum changelog_action a;
    spate_error err;

    cr_assert_eq(changelog_line_split(f, line, strlen(line), &a, &k, &v, &err), 0, "%s: %s", line,
                 err.message);
    snprintf(key, 128, "%.*s", (int)k.len, k.data ? (char *)k.data : "");
    snprintf(value, 128, "%.*s", (int)v.len, v.data ? (char *)v.data : "");
    free(k.data);
    free(v.data);
    return a;
}

Test(changelog_line, each_row_kind_and_the_key_formats)
{
    char *json[] = { "sink.changelog-mode", "upsert", "key.fields", "a;b" };
    char *raw[] = { "sink.changelog-mode",  "upsert",     "key.fields", "b",
                    "value.fields-include", "EXCEPT_KEY", "key.format", "raw" };
    struct named_connector_config c = config(json, 2);
    struct changelog_format f;
    spate_error err;
    char k[128], v[128];

    cr_assert_eq(changelog_format_init(&f, &c, &err), 1);
    cr_assert_eq(split(&f, "+I{\"a\":1,\"b\":\"x\",\"c\":2}", k, v), CHANGELOG_UPSERT);
    cr_assert_str_eq(k, "{\"a\":1,\"b\":\"x\"}");
    cr_assert_str_eq(v, "{\"a\":1,\"b\":\"x\",\"c\":2}");
    cr_assert_eq(split(&f, "+U{\"b\":\"x\",\"a\":1,\"c\":3}", k, v), CHANGELOG_UPSERT);
    cr_assert_str_eq(k, "{\"a\":1,\"b\":\"x\"}", "the key's order is key.fields'");
    cr_assert_eq(split(&f, "-U{\"a\":1,\"b\":\"x\",\"c\":2}", k, v), CHANGELOG_SKIP);
    cr_assert_eq(split(&f, "-D{\"a\":1,\"b\":\"x\",\"c\":3}", k, v), CHANGELOG_DELETE);
    cr_assert_str_eq(k, "{\"a\":1,\"b\":\"x\"}");
    cr_assert_str_eq(v, "", "a delete has no value");
    changelog_format_release(&f);

    c = config(raw, 4);
    cr_assert_eq(changelog_format_init(&f, &c, &err), 1);
    cr_assert_eq(split(&f, "+I{\"a\":1,\"b\":\"x y\",\"c\":null}", k, v), CHANGELOG_UPSERT);
    cr_assert_str_eq(k, "x y", "raw: the string's bytes");
    cr_assert_str_eq(v, "{\"a\":1,\"c\":null}");
    cr_assert_eq(split(&f, "+I{\"a\":1,\"b\":7}", k, v), CHANGELOG_UPSERT);
    cr_assert_str_eq(k, "7", "raw: a number's text");
    changelog_format_release(&f);
}

Test(changelog_line, options_and_lines_that_are_wrong)
{
    char *none[] = { "key.fields", "a" };
    char *bad_mode[] = { "sink.changelog-mode", "retract" };
    char *no_key[] = { "sink.changelog-mode", "upsert" };
    char *two_raw[] = { "sink.changelog-mode", "upsert", "key.fields", "a;b", "key.format", "raw" };
    char *ok[] = { "sink.changelog-mode", "upsert", "key.fields", "a" };
    struct named_connector_config c = config(none, 1);
    struct changelog_format f;
    struct byte_buf k = { 0 }, v = { 0 };
    enum changelog_action a;
    spate_error err;

    cr_assert_eq(changelog_format_init(&f, &c, &err), 0, "no changelog-mode: plain records");
    c = config(bad_mode, 1);
    cr_assert_eq(changelog_format_init(&f, &c, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "'insert-only' or 'upsert', not 'retract'"), "%s", err.message);
    c = config(no_key, 1);
    cr_assert_eq(changelog_format_init(&f, &c, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "needs 'key.fields'"), "%s", err.message);
    c = config(two_raw, 3);
    cr_assert_eq(changelog_format_init(&f, &c, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "'raw' writes one field, and 'key.fields' names 2"), "%s",
              err.message);
    c = config(ok, 2);
    cr_assert_eq(changelog_format_init(&f, &c, &err), 1);
    cr_assert_eq(changelog_line_split(&f, "{\"a\":1}", 7, &a, &k, &v, &err), SPATE_EPROTO);
    cr_assert(strstr(err.message, "does not start with a row kind"), "%s", err.message);
    cr_assert_eq(changelog_line_split(&f, "+I[1]", 5, &a, &k, &v, &err), SPATE_EPROTO);
    cr_assert(strstr(err.message, "no JSON object"), "%s", err.message);
    cr_assert_eq(changelog_line_split(&f, "+I{\"b\":1}", 9, &a, &k, &v, &err), SPATE_EPROTO);
    cr_assert(strstr(err.message, "has no member 'a'"), "%s", err.message);
    free(k.data);
    free(v.data);
    changelog_format_release(&f);
}

/* ---- upsert-filesystem ---- */

static char dir[] = "/tmp/spate-test-upsert-XXXXXX";

struct added {
    uint8_t *bytes;
    size_t len;
};

static void
add(void *arg, const void *bytes, size_t len)
{
    struct added *a = arg;

    a->bytes = malloc(len);
    memcpy(a->bytes, bytes, len);
    a->len = len;
}

static void
log_nothing(void *arg, enum connector_log_level level, const char *msg)
{
    (void)arg;
    (void)level;
    (void)msg;
}

static void *
open_sink(const struct connector_sink_ops **ops)
{
    static const char *options[] = { "path", NULL };
    const struct connector_plugin *p;
    struct connector_context ctx = { options, 1, "o", 0, 1, 0, true, log_nothing, NULL };
    spate_error err;
    char msg[256];
    void *w;

    options[1] = dir;
    cr_assert_eq(connector_factory_find("upsert-filesystem", &p, &err), 0, "%s", err.message);
    *ops = p->sink;
    w = (*ops)->open(&ctx, msg, sizeof msg);
    cr_assert_not_null(w, "%s", msg);
    return w;
}

static void
put(const struct connector_sink_ops *ops, void *w, const char *key, const char *value)
{
    char msg[256];

    cr_assert_eq(
        ops->write(w, key, strlen(key), value, value ? strlen(value) : 0, 0, msg, sizeof msg), 0,
        "%s", msg);
}

static void
assert_file(const char *want)
{
    char path[300], got[256] = "";
    FILE *f;
    size_t n;

    snprintf(path, sizeof path, "%s/compacted-0", dir);
    f = fopen(path, "r");
    cr_assert_not_null(f, "no %s", path);
    n = fread(got, 1, sizeof got - 1, f);
    got[n] = '\0';
    fclose(f);
    cr_assert_str_eq(got, want);
}

Test(upsert_file_sink, the_file_is_each_completed_checkpoints_result)
{
    const struct connector_sink_ops *ops;
    struct added c1 = { 0 }, c2 = { 0 };
    char msg[256], path[300];
    spate_error err;
    void *w;

    cr_assert_not_null(mkdtemp(dir));
    w = open_sink(&ops);
    put(ops, w, "b", "B1");
    put(ops, w, "a", "A1");
    put(ops, w, "c", "C1");
    cr_assert_eq(ops->prepare_commit(w, 1, add, &c1, msg, sizeof msg), 0, "%s", msg);
    snprintf(path, sizeof path, "%s/compacted-0", dir);
    cr_assert_neq(access(path, F_OK), 0, "no file before the checkpoint completes");
    put(ops, w, "a", "A2");
    put(ops, w, "c", NULL); /* a delete */
    put(ops, w, "d", NULL); /* a delete of a key never written */
    cr_assert_eq(ops->prepare_commit(w, 2, add, &c2, msg, sizeof msg), 0, "%s", msg);
    cr_assert_eq(ops->commit(w, 1, msg, sizeof msg), 0, "%s", msg);
    assert_file("A1\nB1\nC1\n");
    cr_assert_eq(ops->commit(w, 2, msg, sizeof msg), 0, "%s", msg);
    assert_file("A2\nB1\n");
    put(ops, w, "e", "E1");
    ops->close(w);

    /* A restore from checkpoint 1 (a savepoint, say): the file and the
     * rows are checkpoint 1's again, whatever came after. */
    w = open_sink(&ops);
    cr_assert_eq(ops->recover(w, c1.bytes, c1.len, msg, sizeof msg), 0, "%s", msg);
    assert_file("A1\nB1\nC1\n");
    put(ops, w, "b", "B2");
    cr_assert_eq(ops->finish(w, msg, sizeof msg), 0, "%s", msg);
    assert_file("A1\nB2\nC1\n");
    cr_assert_eq(ops->recover(w, c1.bytes, 5, msg, sizeof msg), -1);
    cr_assert(strstr(msg, "malformed"), "%s", msg);
    ops->close(w);
    free(c1.bytes);
    free(c2.bytes);
    cr_assert_eq(fs_remove_tree(dir, &err), 0);
}
