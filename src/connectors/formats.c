/* Key and value formats of named connectors (formats.h). */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connectors/formats.h"
#include "core/alloc.h"
#include "core/util.h"

static int
parse_kind(const char *s, enum format_kind *out)
{
    if (strcmp(s, "raw") == 0)
        *out = FORMAT_RAW;
    else if (strcmp(s, "string") == 0)
        *out = FORMAT_STRING;
    else if (strcmp(s, "json") == 0)
        *out = FORMAT_JSON;
    else
        return -1;
    return 0;
}

int
format_init_value(struct record_format *f, const struct named_connector_config *c,
                  const struct spate_type *type, spate_error *err)
{
    const char *kind = named_connector_option(c, "value.format");
    const char *fields = named_connector_option(c, "fields");
    const char *ignore = named_connector_option(c, "json.ignore-parse-errors");

    memset(f, 0, sizeof *f);
    f->type = type;
    f->kind = FORMAT_STRING;
    if (kind == NULL)
        kind = named_connector_option(c, "format");
    if (kind != NULL && parse_kind(kind, &f->kind) != 0)
        return spate_error_set(err, SPATE_EINVAL,
                               "connector '%s': format '%s' is not one of raw, string, json",
                               c->connector, kind);
    if (f->kind == FORMAT_RAW && type->kind != TYPE_STRING)
        return spate_error_set(err, SPATE_EINVAL,
                               "connector '%s': the raw format needs string records", c->connector);
    if (ignore != NULL) {
        if (strcmp(ignore, "true") != 0 && strcmp(ignore, "false") != 0)
            return spate_error_set(err, SPATE_EINVAL,
                                   "connector '%s': json.ignore-parse-errors is '%s', not true "
                                   "or false",
                                   c->connector, ignore);
        f->ignore_parse_errors = strcmp(ignore, "true") == 0;
    }
    if (fields != NULL) {
        char *copy = xstrdup(fields), *save = NULL;

        for (char *t = strtok_r(copy, ", ", &save); t != NULL; t = strtok_r(NULL, ", ", &save)) {
            f->names = xrealloc(f->names, (size_t)(f->nnames + 1) * sizeof *f->names);
            f->names[f->nnames++] = xstrdup(t);
        }
        free(copy);
        if (type->kind != TYPE_TUPLE || f->nnames != type->nfields) {
            int n = f->nnames;

            format_release(f);
            return spate_error_set(err, SPATE_EINVAL,
                                   "connector '%s': fields names %d fields, the records have %d",
                                   c->connector, n, type->kind == TYPE_TUPLE ? type->nfields : 1);
        }
    }
    return 0;
}

int
format_init_key(struct record_format *f, const struct named_connector_config *c,
                const struct spate_type *type, spate_error *err)
{
    const char *kind = named_connector_option(c, "key.format");

    memset(f, 0, sizeof *f);
    f->type = type;
    f->kind = FORMAT_STRING;
    if (kind != NULL && parse_kind(kind, &f->kind) != 0)
        return spate_error_set(err, SPATE_EINVAL,
                               "connector '%s': key.format '%s' is not one of raw, string, json",
                               c->connector, kind);
    if (f->kind == FORMAT_RAW && type->kind != TYPE_STRING)
        return spate_error_set(err, SPATE_EINVAL,
                               "connector '%s': key.format raw needs a string key field",
                               c->connector);
    return 0;
}

void
format_release(struct record_format *f)
{
    for (int i = 0; i < f->nnames; i++)
        free(f->names[i]);
    free(f->names);
    f->names = NULL;
    f->nnames = 0;
    if (f->doc != NULL)
        json_decref(f->doc);
    f->doc = NULL;
}

bool
format_owns_option(const char *key)
{
    static const char *const own[] = {
        "format",
        "value.format",
        "key.format",
        "fields",
        "key.fields",
        "json.ignore-parse-errors",
        "sink.changelog-mode",
        "value.fields-include",
    };

    for (size_t i = 0; i < ARRAY_SIZE(own); i++)
        if (strcmp(own[i], key) == 0)
            return true;
    return false;
}

int
format_field_index(const struct record_format *f, const char *name)
{
    char *end;
    long n;

    for (int i = 0; i < f->nnames; i++)
        if (strcmp(f->names[i], name) == 0)
            return i;
    errno = 0;
    n = strtol(name, &end, 10);
    if (*name && *end == '\0' && errno == 0 && n >= 0 && f->type->kind == TYPE_TUPLE &&
        n < f->type->nfields)
        return (int)n;
    return -1;
}

/* A leaf (int64, double, string) from text. */
static int
leaf_from_text(const struct spate_type *t, const char *s, size_t len, void *at, spate_error *err)
{
    char buf[64], *end;

    switch (t->kind) {
    case TYPE_STRING:
        *(spate_str *)at = (spate_str){ s, len };
        return 0;
    case TYPE_INT64:
    case TYPE_DOUBLE:
        if (len == 0 || len >= sizeof buf)
            break;
        memcpy(buf, s, len);
        buf[len] = '\0';
        errno = 0;
        if (t->kind == TYPE_INT64)
            *(int64_t *)at = strtoll(buf, &end, 10);
        else
            *(double *)at = strtod(buf, &end);
        if (*end == '\0' && errno == 0)
            return 0;
        break;
    default:
        return spate_error_set(err, SPATE_EPROTO, "type '%s' cannot be read from text", t->name);
    }
    return spate_error_set(err, SPATE_EPROTO, "'%.*s' is not a %s", (int)(len > 40 ? 40 : len), s,
                           t->name);
}

static int
leaf_from_json(const struct spate_type *t, json_t *v, void *at, const char *what, spate_error *err)
{
    switch (t->kind) {
    case TYPE_STRING:
        if (json_is_string(v)) {
            *(spate_str *)at = (spate_str){ json_string_value(v), json_string_length(v) };
            return 0;
        }
        break;
    case TYPE_INT64:
        if (json_is_integer(v)) {
            *(int64_t *)at = (int64_t)json_integer_value(v);
            return 0;
        }
        break;
    case TYPE_DOUBLE:
        if (json_is_number(v)) {
            *(double *)at = json_number_value(v);
            return 0;
        }
        break;
    default:
        return spate_error_set(err, SPATE_EPROTO, "%s: type '%s' cannot be read from JSON", what,
                               t->name);
    }
    return spate_error_set(err, SPATE_EPROTO, "%s is not a %s", what, t->name);
}

static int
decode_json(struct record_format *f, const void *bytes, size_t len, void *rec, spate_error *err)
{
    const struct spate_type *t = f->type;
    json_error_t jerr;
    json_t *doc;
    char what[96];
    int rc;

    if (f->doc != NULL)
        json_decref(f->doc);
    f->doc = doc = json_loadb(bytes, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    if (doc == NULL)
        return spate_error_set(err, SPATE_EPROTO, "malformed JSON at column %d: %s", jerr.column,
                               jerr.text);
    if (t->kind != TYPE_TUPLE)
        return leaf_from_json(t, doc, rec, "the JSON value", err);
    if (!json_is_object(doc) && !json_is_array(doc))
        return spate_error_set(err, SPATE_EPROTO, "the JSON value is not an object or an array");
    if (json_is_object(doc) && f->names == NULL)
        return spate_error_set(err, SPATE_EPROTO,
                               "a JSON object needs the option fields (the tuple fields' names)");
    for (int i = 0; i < t->nfields; i++) {
        json_t *v = json_is_object(doc) ? json_object_get(doc, f->names[i])
                                        : json_array_get(doc, (size_t)i);

        if (json_is_object(doc))
            snprintf(what, sizeof what, "member '%s'", f->names[i]);
        else
            snprintf(what, sizeof what, "element %d", i);
        if (v == NULL)
            return spate_error_set(err, SPATE_EPROTO, "%s is missing", what);
        if ((rc = leaf_from_json(t->fields[i], v, (char *)rec + t->offsets[i], what, err)) != 0)
            return rc;
    }
    return 0;
}

int
format_decode(struct record_format *f, const void *bytes, size_t len, void *rec, spate_error *err)
{
    if (bytes == NULL) {
        bytes = "";
        len = 0;
    }
    if (f->kind == FORMAT_JSON)
        return decode_json(f, bytes, len, rec, err);
    if (f->type->kind == TYPE_TUPLE)
        return spate_error_set(err, SPATE_EPROTO,
                               "tuple records need value.format json, not raw or string");
    return leaf_from_text(f->type, bytes, len, rec, err);
}

static json_t *
leaf_to_json(const struct spate_type *t, const void *at)
{
    switch (t->kind) {
    case TYPE_STRING:
        return json_stringn(((const spate_str *)at)->data, ((const spate_str *)at)->len);
    case TYPE_INT64:
        return json_integer(*(const int64_t *)at);
    case TYPE_DOUBLE:
        return json_real(*(const double *)at);
    default: {
        char buf[512];

        types_format(t, at, buf, sizeof buf);
        return json_string(buf);
    }
    }
}

void
format_encode(struct record_format *f, const void *rec, struct byte_buf *out)
{
    const struct spate_type *t = f->type;

    if (f->kind != FORMAT_JSON && t->kind == TYPE_STRING) {
        byte_buf_put(out, ((const spate_str *)rec)->data, ((const spate_str *)rec)->len);
    } else if (f->kind != FORMAT_JSON) {
        char buf[1024];
        int n = types_format(t, rec, buf, sizeof buf);

        if (n >= (int)sizeof buf) {
            char *big = xmalloc((size_t)n + 1);

            types_format(t, rec, big, (size_t)n + 1);
            byte_buf_put(out, big, (size_t)n);
            free(big);
        } else if (n > 0) {
            byte_buf_put(out, buf, (size_t)n);
        }
    } else {
        json_t *doc;
        char *s;

        if (t->kind != TYPE_TUPLE) {
            doc = leaf_to_json(t, rec);
        } else {
            doc = f->names ? json_object() : json_array();
            for (int i = 0; i < t->nfields; i++) {
                json_t *v = leaf_to_json(t->fields[i], (const char *)rec + t->offsets[i]);

                if (f->names)
                    json_object_set_new(doc, f->names[i], v);
                else
                    json_array_append_new(doc, v);
            }
        }
        s = json_dumps(doc, JSON_COMPACT | JSON_ENCODE_ANY);
        if (s != NULL)
            byte_buf_put(out, s, strlen(s));
        free(s);
        json_decref(doc);
    }
}
