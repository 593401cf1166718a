/* The formats of a named connector's keys and values (Flink's `format`,
 * `key.format`, `value.format`): raw (the bytes as they are), string (UTF-8
 * text; a record of another type in its readable form) and json (jansson: a
 * JSON object whose members are the tuple's fields by the names in
 * `fields`, or an array of them in order; a number or string for a record
 * that is not a tuple). Decoding fills a record of the connector's type
 * whose strings point into the bytes or into the format's last parsed
 * document, valid until the next decode. One format per operator: task
 * thread. */
#ifndef SPATE_CONNECTORS_FORMATS_H
#define SPATE_CONNECTORS_FORMATS_H

#include <stdbool.h>
#include <stddef.h>

#include <spate/error.h>

#include "state/keyed_state_backend.h"
#include "streaming/connector_config.h"
#include "streaming/types.h"

enum format_kind { FORMAT_RAW, FORMAT_STRING, FORMAT_JSON };

struct record_format {
    enum format_kind kind;
    const struct spate_type *type;
    char **names; /* the tuple fields' names (JSON members), or NULL */
    int nnames;
    bool ignore_parse_errors; /* json.ignore-parse-errors */
    void *doc;                /* the last parsed JSON document (json_t) */
};

/* The format of c's values (`value.format`, or `format`; default string)
 * for records of type. 0, or SPATE_EINVAL naming the option. */
int format_init_value(struct record_format *f, const struct named_connector_config *c,
                      const struct spate_type *type, spate_error *err);
/* The format of c's keys (`key.format`, default string) for a key field
 * of type. 0, or SPATE_EINVAL naming the option. */
int format_init_key(struct record_format *f, const struct named_connector_config *c,
                    const struct spate_type *type, spate_error *err);
void format_release(struct record_format *f);

/* Reads bytes into rec (type's storage, zeroed by the caller). 0, or
 * SPATE_EPROTO with err saying why. */
int format_decode(struct record_format *f, const void *bytes, size_t len, void *rec,
                  spate_error *err);
/* Appends rec's encoded form to out. */
void format_encode(struct record_format *f, const void *rec, struct byte_buf *out);

/* Whether key is an option of the formats (read here, never passed to a
 * connector's plugin): format, value.format, key.format, fields,
 * json.ignore-parse-errors, key.fields. */
bool format_owns_option(const char *key);

/* The index of the tuple field named name in `fields` (or a field number),
 * or -1. */
int format_field_index(const struct record_format *f, const char *name);

#endif
