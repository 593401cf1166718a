/* Changelog lines into an upsert sink's keys and values (changelog_line.h). */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "connectors/changelog_line.h"
#include "core/alloc.h"

int
changelog_format_init(struct changelog_format *f, const struct named_connector_config *c,
                      spate_error *err)
{
    const char *mode = named_connector_option(c, "sink.changelog-mode");
    const char *fields = named_connector_option(c, "key.fields");
    const char *kf = named_connector_option(c, "key.format");
    const char *inc = named_connector_option(c, "value.fields-include");
    const char *p;

    memset(f, 0, sizeof *f);
    if (mode == NULL || strcmp(mode, "insert-only") == 0)
        return 0;
    if (strcmp(mode, "upsert") != 0)
        return spate_error_set(err, SPATE_EINVAL,
                               "connector '%s': 'sink.changelog-mode' is 'insert-only' or "
                               "'upsert', not '%s'",
                               c->connector, mode);
    if (fields == NULL || *fields == '\0')
        return spate_error_set(err, SPATE_EINVAL,
                               "connector '%s': an upsert sink needs 'key.fields' (the primary "
                               "key's members, separated by ';')",
                               c->connector);
    if (kf != NULL && strcmp(kf, "json") != 0 && strcmp(kf, "raw") != 0)
        return spate_error_set(err, SPATE_EINVAL,
                               "connector '%s': an upsert sink's 'key.format' is 'json' or "
                               "'raw', not '%s'",
                               c->connector, kf);
    if (inc != NULL && strcmp(inc, "ALL") != 0 && strcmp(inc, "EXCEPT_KEY") != 0)
        return spate_error_set(err, SPATE_EINVAL,
                               "connector '%s': 'value.fields-include' is 'ALL' or "
                               "'EXCEPT_KEY', not '%s'",
                               c->connector, inc);
    for (p = fields;; p++) {
        const char *end = strchr(p, ';');
        size_t n = end ? (size_t)(end - p) : strlen(p);

        f->key_fields = xrealloc(f->key_fields, ((size_t)f->nkey + 1) * sizeof *f->key_fields);
        f->key_fields[f->nkey++] = xstrndup(p, n);
        if (n == 0) {
            changelog_format_release(f);
            return spate_error_set(err, SPATE_EINVAL,
                                   "connector '%s': 'key.fields' = '%s' has an empty name",
                                   c->connector, fields);
        }
        if (end == NULL)
            break;
        p = end;
    }
    f->key_raw = kf != NULL && strcmp(kf, "raw") == 0;
    if (f->key_raw && f->nkey != 1) {
        int n = f->nkey;

        changelog_format_release(f);
        return spate_error_set(err, SPATE_EINVAL,
                               "connector '%s': key.format 'raw' writes one field, and "
                               "'key.fields' names %d",
                               c->connector, n);
    }
    f->except_key = inc != NULL && strcmp(inc, "EXCEPT_KEY") == 0;
    return 1;
}

void
changelog_format_release(struct changelog_format *f)
{
    for (int i = 0; i < f->nkey; i++)
        free(f->key_fields[i]);
    free(f->key_fields);
    memset(f, 0, sizeof *f);
}

static void
put_json(struct byte_buf *b, const json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);

    byte_buf_put(b, s, strlen(s));
    free(s);
}

int
changelog_line_split(const struct changelog_format *f, const char *line, size_t len,
                     enum changelog_action *action, struct byte_buf *key, struct byte_buf *value,
                     spate_error *err)
{
    json_t *doc, *k = NULL;
    json_error_t jerr;
    int rc = 0;

    if (len < 2 || (memcmp(line, "+I", 2) != 0 && memcmp(line, "-U", 2) != 0 &&
                    memcmp(line, "+U", 2) != 0 && memcmp(line, "-D", 2) != 0))
        return spate_error_set(err, SPATE_EPROTO,
                               "a changelog line '%.*s' does not start with a row kind (+I, -U, "
                               "+U, -D)",
                               (int)(len < 40 ? len : 40), line);
    if (memcmp(line, "-U", 2) == 0) {
        *action = CHANGELOG_SKIP;
        return 0;
    }
    *action = line[1] == 'D' ? CHANGELOG_DELETE : CHANGELOG_UPSERT;
    doc = json_loadb(line + 2, len - 2, 0, &jerr);
    if (!json_is_object(doc)) {
        json_decref(doc);
        return spate_error_set(
            err, SPATE_EPROTO, "a changelog line's row is no JSON object (%s): '%.*s'",
            doc ? "another JSON value" : jerr.text, (int)(len - 2 < 80 ? len - 2 : 80), line + 2);
    }
    if (!f->key_raw)
        k = json_object();
    for (int i = 0; i < f->nkey && rc == 0; i++) {
        json_t *m = json_object_get(doc, f->key_fields[i]);

        if (m == NULL) {
            rc = spate_error_set(err, SPATE_EPROTO,
                                 "a changelog line's row has no member '%s' (key.fields): "
                                 "'%.*s'",
                                 f->key_fields[i], (int)(len - 2 < 80 ? len - 2 : 80), line + 2);
        } else if (k != NULL) {
            json_object_set(k, f->key_fields[i], m);
        } else if (json_is_string(m)) {
            byte_buf_put(key, json_string_value(m), json_string_length(m));
        } else {
            put_json(key, m);
        }
    }
    if (rc == 0 && k != NULL)
        put_json(key, k);
    if (rc == 0 && *action == CHANGELOG_UPSERT) {
        if (f->except_key) {
            for (int i = 0; i < f->nkey; i++)
                json_object_del(doc, f->key_fields[i]);
            put_json(value, doc);
        } else {
            byte_buf_put(value, line + 2, len - 2);
        }
    }
    json_decref(k);
    json_decref(doc);
    return rc;
}
