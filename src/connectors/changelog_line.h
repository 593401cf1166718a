/* Changelog lines, what an upsert sink reads (`sink.changelog-mode` =
 * 'upsert'): a JSON object line led by its row kind's string, as Flink's
 * RowKind prints it (`+I{"w":"a","n":1}`, `-U...`, `+U...`, `-D...`), which
 * SQL's Calc writes for such a sink. Each line becomes a key (the members
 * named by `key.fields`, in `key.format`) and a value (the object, or
 * without the key's members: `value.fields-include` = 'EXCEPT_KEY'): +I and
 * +U write the row, -D a tombstone (no value), -U is dropped (the +U after
 * it replaces the row). One per sink operator: task thread. */
#ifndef SPATE_CONNECTORS_CHANGELOG_LINE_H
#define SPATE_CONNECTORS_CHANGELOG_LINE_H

#include <stdbool.h>
#include <stddef.h>

#include <spate/error.h>

#include "state/keyed_state_backend.h"
#include "streaming/connector_config.h"

struct changelog_format {
    char **key_fields; /* the key's members, in the key's order */
    int nkey;
    bool key_raw;    /* key.format 'raw': the one member's value as text */
    bool except_key; /* value.fields-include 'EXCEPT_KEY' */
};

/* What a changelog line asks of the sink. */
enum changelog_action {
    CHANGELOG_UPSERT, /* +I, +U: the key's row is value */
    CHANGELOG_DELETE, /* -D: the key's row goes (a tombstone) */
    CHANGELOG_SKIP,   /* -U: nothing */
};

/* Whether c asks for changelog lines (`sink.changelog-mode` = 'upsert');
 * then f gets its key and value options. 1 when it does, 0 when not, or
 * SPATE_EINVAL naming the option. */
int changelog_format_init(struct changelog_format *f, const struct named_connector_config *c,
                          spate_error *err);
void changelog_format_release(struct changelog_format *f);

/* Splits one line: its action, and the key and (for an upsert) value
 * bytes appended to key and value. 0, or SPATE_EPROTO saying what is wrong
 * with the line (a row kind missing, no JSON object, a key member
 * missing). */
int changelog_line_split(const struct changelog_format *f, const char *line, size_t len,
                         enum changelog_action *action, struct byte_buf *key,
                         struct byte_buf *value, spate_error *err);

#endif
