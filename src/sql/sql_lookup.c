/* OP_SQL_LOOKUP_JOIN (sql_lookup.h): a lookup join against a table in a
 * file, as Flink's FileSystemLookupFunction does it: the file is read into
 * the subtask's memory when the operator opens — each line's columns, its
 * key's bytes (sql_key_encode, as the input's $key was made) in a hash
 * map — and each row of the input is probed there: a row of the table with
 * its key that meets the rest of ON joins it (+I); a LEFT join's row that
 * meets none is emitted padded with NULLs. Nothing is kept per input row,
 * so there is no state to checkpoint; the table is the file as it was
 * when the task started (a processing-time join). A row whose key has a
 * NULL matches nothing. A line that cannot be read fails the task with
 * its file, line and column, unless csv.ignore-parse-errors skips it.
 * Task thread only. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/alloc.h"
#include "core/hmap.h"
#include "core/log.h"
#include "core/util.h"
#include "proto/sql.pb-c.h"
#include "sql/sql_lookup.h"
#include "sql/sql_operators.h"
#include "sql/sql_row.h"
#include "streaming/operator.h"
#include "streaming/operator_config.h"
#include "streaming/types.h"

/* ---- the spec ---- */

void
sql_lookup_spec_free(struct sql_lookup_spec *s)
{
    if (s == NULL)
        return;
    sql_join_spec_free(s->join);
    free(s->path);
    free(s->key_cols);
    free(s);
}

void
sql_lookup_spec_encode(const struct sql_lookup_spec *s, uint8_t **out, size_t *len)
{
    Sqlplan__LookupJoin m = SQLPLAN__LOOKUP_JOIN__INIT;
    char delim[2] = { s->csv_delimiter, 0 };

    sql_join_spec_encode(s->join, &m.join.data, &m.join.len);
    m.path = s->path;
    m.csv_delimiter = delim;
    m.ignore_parse_errors = s->ignore_parse_errors;
    m.n_key_cols = (size_t)s->join->nkey;
    m.key_cols = s->key_cols;
    *len = sqlplan__lookup_join__get_packed_size(&m);
    *out = xmalloc(*len + 1);
    sqlplan__lookup_join__pack(&m, *out);
    free(m.join.data);
}

int
sql_lookup_spec_decode(const uint8_t *bytes, size_t len, struct sql_lookup_spec **out,
                       spate_error *err)
{
    Sqlplan__LookupJoin *m = sqlplan__lookup_join__unpack(NULL, len, bytes);
    struct sql_lookup_spec *s;
    const struct sql_join_spec *j;
    int rc;

    *out = NULL;
    if (m == NULL)
        return spate_error_set(err, SPATE_EINVAL, "malformed SQL lookup join: no LookupJoin");
    s = xcalloc(1, sizeof *s);
    s->path = xstrdup(m->path ? m->path : "");
    s->csv_delimiter = m->csv_delimiter && m->csv_delimiter[0] ? m->csv_delimiter[0] : ',';
    s->ignore_parse_errors = m->ignore_parse_errors;
    rc = sql_join_spec_decode(m->join.data, m->join.len, &s->join, err);
    if (rc == 0) {
        j = s->join;
        s->key_cols = xcalloc((size_t)j->nkey + 1, sizeof *s->key_cols);
        if ((j->type != SQL_JOIN_INNER && j->type != SQL_JOIN_LEFT) ||
            j->time != SQL_JOIN_REGULAR || m->n_key_cols != (size_t)j->nkey || s->path[0] == 0)
            rc = spate_error_set(err, SPATE_EINVAL, "malformed SQL lookup join: its type or keys");
        for (int i = 0; rc == 0 && i < j->nkey; i++) {
            int c = m->key_cols[i], ntable = j->nright - 1 - j->nkey;

            s->key_cols[i] = c;
            if (c < 0 || c >= ntable ||
                sql_type_phys(j->right[1 + j->nkey + c].type.id) !=
                    sql_type_phys(j->right[1 + i].type.id) ||
                j->right[1 + j->nkey + c].type.scale != j->right[1 + i].type.scale)
                rc = spate_error_set(err, SPATE_EINVAL, "malformed SQL lookup join: key %d", i);
        }
    }
    sqlplan__lookup_join__free_unpacked(m, NULL);
    if (rc != 0) {
        sql_lookup_spec_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

/* ---- the operator ---- */

/* A row of the table: its key's bytes and the right side's values
 * ($key, keys, the table's columns), strings in text. */
struct lookup_row {
    struct hmap_node node;
    char *key;
    size_t key_len;
    char *text; /* the line, and room for its unquoted fields */
    struct sql_value v[];
};

struct lookup_impl {
    struct sql_lookup_spec *s;
    struct hmap table;
    uint64_t rows, skipped;
    struct sql_type *left_types;
    struct sql_value *left;
    struct sql_type *out_types;
    struct sql_value *res;
    int nout;
    struct sql_program *residual;
    struct sql_eval eval;
    bool has_eval;
    const struct spate_type *in_type, *out_type;
    void *out_rec;
};

static void
table_free(struct hmap *t)
{
    struct hmap_node *n;

    while ((n = hmap_first(t)) != NULL) {
        struct lookup_row *r = container_of(n, struct lookup_row, node);

        hmap_remove(t, n);
        free(r->key);
        free(r->text);
        free(r);
    }
    hmap_release(t);
}

static void
impl_free(struct lookup_impl *l)
{
    table_free(&l->table);
    if (l->has_eval)
        sql_eval_release(&l->eval);
    sql_program_free(l->residual);
    sql_lookup_spec_free(l->s);
    free(l->left_types);
    free(l->left);
    free(l->out_types);
    free(l->res);
    free(l->out_rec);
    free(l);
}

/* Line lineno of file (len bytes at s) into the table. */
static int
table_add(struct lookup_impl *l, const char *file, uint64_t lineno, const char *s, size_t len,
          spate_error *err)
{
    const struct sql_join_spec *j = l->s->join;
    int ntable = j->nright - 1 - j->nkey;
    struct sql_type types[TYPES_ROW_MAX_FIELDS];
    struct lookup_row *r = xcalloc(1, sizeof *r + (size_t)j->nright * sizeof r->v[0]);
    struct sql_value *cols = &r->v[1 + j->nkey];
    bool null_key = false;

    r->text = xmalloc(2 * len + 2);
    memcpy(r->text, s, len);
    if (sql_csv_read(&j->right[1 + j->nkey], ntable, l->s->csv_delimiter, r->text, len, cols,
                     r->text + len + 1, err) != 0) {
        free(r->text);
        free(r);
        if (l->s->ignore_parse_errors) {
            spate_error_clear(err);
            l->skipped++;
            return 0;
        }
        return spate_error_wrap(err, "lookup table '%s', line %" PRIu64, file, lineno);
    }
    for (int c = 0; c < ntable; c++)
        types[c] = j->right[1 + j->nkey + c].type;
    for (int i = 0; i < j->nkey; i++) {
        r->v[1 + i] = cols[l->s->key_cols[i]];
        null_key |= r->v[1 + i].null;
    }
    if (null_key) { /* NULL = x is never true */
        free(r->text);
        free(r);
        return 0;
    }
    r->key_len = sql_key_size(types, cols, l->s->key_cols, j->nkey);
    r->key = xmalloc(r->key_len + 1);
    sql_key_encode(types, cols, l->s->key_cols, j->nkey, r->key);
    r->v[0] = (struct sql_value){ .s = { r->key, r->key_len }, .null = false };
    hmap_insert(&l->table, &r->node, hmap_hash_bytes(r->key, r->key_len));
    l->rows++;
    return 0;
}

static int
table_read_file(struct lookup_impl *l, const char *file, spate_error *err)
{
    FILE *f = fopen(file, "r");
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    uint64_t lineno = 0;
    int rc = 0;

    if (f == NULL)
        return spate_error_set(err, SPATE_EIO, "lookup table '%s': cannot open it: %s", file,
                               strerror(errno));
    while (rc == 0 && (n = getline(&line, &cap, f)) >= 0) {
        lineno++;
        if (n > 0 && line[n - 1] == '\n')
            n--;
        if (n == 0)
            continue;
        rc = table_add(l, file, lineno, line, (size_t)n, err);
    }
    if (rc == 0 && ferror(f))
        rc = spate_error_set(err, SPATE_EIO, "lookup table '%s': cannot read it: %s", file,
                             strerror(errno));
    free(line);
    fclose(f);
    return rc;
}

static int
name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The table's file, or the files of its directory in the order of their
 * names (those starting with '.' or '_' are not data, as in Flink). */
static int
table_read(struct lookup_impl *l, spate_error *err)
{
    const char *path = l->s->path;
    struct stat st;
    DIR *d;
    struct dirent *e;
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;

    if (strncmp(path, "file://", 7) == 0)
        path += 7;
    if (stat(path, &st) != 0)
        return spate_error_set(err, SPATE_EIO, "lookup table '%s': %s", path, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return table_read_file(l, path, err);
    if ((d = opendir(path)) == NULL)
        return spate_error_set(err, SPATE_EIO, "lookup table '%s': %s", path, strerror(errno));
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || e->d_name[0] == '_')
            continue;
        xgrow((void **)&names, &cap, n + 1, sizeof *names);
        names[n++] = xasprintf("%s/%s", path, e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, name_cmp);
    for (size_t i = 0; i < n; i++) {
        if (rc == 0 && stat(names[i], &st) == 0 && S_ISREG(st.st_mode))
            rc = table_read_file(l, names[i], err);
        free(names[i]);
    }
    free(names);
    return rc;
}

static int
lookup_open(struct stream_operator *op, spate_error *err)
{
    const struct sql_config *c = op->conf;
    const struct operator_settings *set = op->config;
    const char *name = set->name ? set->name : "LookupJoin";
    struct lookup_impl *l = xcalloc(1, sizeof *l);
    const struct sql_join_spec *j;
    struct sql_column *out;
    bool ok;
    int rc;

    op->impl = l;
    hmap_init(&l->table);
    if ((rc = sql_lookup_spec_decode(c->program, c->program_len, &l->s, err)) != 0)
        return spate_error_wrap(err, "operator '%s'", name);
    j = l->s->join;
    ok = set->in_type != NULL && set->in_type->nullable && set->in_type->nfields == j->nleft + 1;
    l->left_types = xcalloc((size_t)j->nleft, sizeof *l->left_types);
    l->left = xcalloc((size_t)j->nleft, sizeof *l->left);
    for (int i = 0; ok && i < j->nleft; i++) {
        l->left_types[i] = j->left[i].type;
        ok = set->in_type->fields[i + 1] == sql_type_spate(j->left[i].type.id);
    }
    out = sql_join_output(j, &l->nout);
    ok = ok && set->out_type->nullable && set->out_type->nfields == l->nout + 1;
    l->out_types = xcalloc((size_t)l->nout, sizeof *l->out_types);
    for (int i = 0; i < l->nout; i++) {
        l->out_types[i] = out[i].type;
        ok = ok && set->out_type->fields[i + 1] == sql_type_spate(out[i].type.id);
        free(out[i].name);
    }
    free(out);
    if (!ok)
        return spate_error_set(err, SPATE_EINVAL,
                               "operator '%s': its record types do not match its join", name);
    if (j->residual != NULL) {
        if ((rc = sql_join_residual_open(j, l->out_types, l->nout, &l->residual, &l->eval, name,
                                         err)) != 0)
            return rc;
        l->has_eval = true;
    }
    l->in_type = set->in_type;
    l->out_type = set->out_type;
    l->out_rec = operator_out_storage(set->out_type);
    l->res = xcalloc((size_t)l->nout, sizeof *l->res);
    if ((rc = table_read(l, err)) != 0)
        return spate_error_wrap(err, "operator '%s'", name);
    SPATE_LOG_INFO(
        "sql", "task=%s lookup table %s: %" PRIu64 " rows in memory, %" PRIu64 " bad lines skipped",
        op->ctx.task_name, l->s->path, l->rows, l->skipped);
    return 0;
}

static void
lookup_close(struct stream_operator *op)
{
    if (op->impl != NULL)
        impl_free(op->impl);
    op->impl = NULL;
}

/* The output row of left row x and table row r (NULL: padded) into l->res. */
static void
result_row(struct lookup_impl *l, const struct sql_value *x, const struct sql_value *r)
{
    const struct sql_join_spec *j = l->s->join;
    int k = 0;

    l->res[k++] = (struct sql_value){ .i = SQL_INSERT, .null = false };
    for (int i = 1 + j->nkey; i < j->nleft; i++)
        l->res[k++] = x[i];
    for (int i = 1 + j->nkey; i < j->nright; i++)
        l->res[k++] = r ? r[i] : (struct sql_value){ .i = 0, .null = true };
}

static void
lookup_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    struct lookup_impl *l = op->impl;
    const struct sql_join_spec *j = l->s->join;
    struct sql_value *x = l->left;
    bool matched = false, null_key = false;
    struct hmap_node *n;

    sql_row_read(l->in_type, rec, l->left_types, j->nleft, x);
    for (int i = 1; i <= j->nkey; i++)
        null_key |= x[i].null;
    HMAP_FOR_EACH_WITH_HASH(n, hmap_hash_bytes(x[0].s.p, x[0].s.len), &l->table)
    {
        struct lookup_row *r = container_of(n, struct lookup_row, node);

        if (null_key || r->key_len != x[0].s.len || memcmp(r->key, x[0].s.p, r->key_len) != 0)
            continue;
        result_row(l, x, r->v);
        if (l->residual != NULL) {
            const struct sql_value *f;

            sql_eval_begin(&l->eval);
            memcpy(l->eval.r, l->res + 1, (size_t)(l->nout - 1) * sizeof *l->res);
            sql_eval_run(&l->eval);
            f = &l->eval.r[l->residual->filter];
            if (f->null || f->i == 0)
                continue;
        }
        matched = true;
        sql_row_write(l->out_type, l->out_rec, l->out_types, l->nout, l->res);
        operator_emit(op, l->out_rec, meta);
    }
    if (!matched && j->type == SQL_JOIN_LEFT) {
        result_row(l, x, NULL);
        sql_row_write(l->out_type, l->out_rec, l->out_types, l->nout, l->res);
        operator_emit(op, l->out_rec, meta);
    }
}

const struct operator_vtable sql_lookup_join_vtable = {
    .open = lookup_open,
    .process = lookup_process,
    .close = lookup_close,
};
