/* The session's catalog (sql_catalog.h). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/alloc.h"
#include "sql/sql_catalog.h"
#include "sql/sql_expr.h"

void
sql_catalog_init(struct sql_catalog *c)
{
    memset(c, 0, sizeof *c);
}

void
sql_table_free(struct sql_table *t)
{
    if (t == NULL)
        return;
    for (int i = 0; i < t->ncols; i++)
        free(t->cols[i].name);
    for (int i = 0; i < t->noptions; i++) {
        free(t->options[i].key);
        free(t->options[i].value);
    }
    free(t->cols);
    free(t->pk);
    free(t->partition);
    free(t->options);
    json_decref(t->query);
    free(t->script);
    free(t->name);
    free(t);
}

void
sql_catalog_release(struct sql_catalog *c)
{
    for (int i = 0; i < c->n; i++)
        sql_table_free(c->tables[i]);
    free(c->tables);
    for (int i = 0; i < c->nfunctions; i++)
        sql_function_free(c->functions[i]);
    free(c->functions);
    memset(c, 0, sizeof *c);
}

struct sql_table *
sql_catalog_find(const struct sql_catalog *c, const char *name)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->tables[i]->name, name) == 0)
            return c->tables[i];
    return NULL;
}

int
sql_catalog_add(struct sql_catalog *c, struct sql_table *t, spate_error *err)
{
    if (sql_catalog_find(c, t->name) != NULL) {
        int rc = spate_error_set(err, SPATE_EEXIST, "%s '%s' exists already",
                                 sql_catalog_find(c, t->name)->view ? "view" : "table", t->name);

        sql_table_free(t);
        return rc;
    }
    xgrow((void **)&c->tables, &c->cap, (size_t)c->n + 1, sizeof *c->tables);
    c->tables[c->n++] = t;
    return 0;
}

const char *
sql_catalog_nearest(const struct sql_catalog *c, const char *name)
{
    const char **names = xcalloc((size_t)c->n + 1, sizeof *names);
    const char *near;

    for (int i = 0; i < c->n; i++)
        names[i] = c->tables[i]->name;
    near = sql_nearest(name, names, c->n);
    free(names);
    return near;
}

int
sql_catalog_drop(struct sql_catalog *c, const char *name)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->tables[i]->name, name) == 0) {
            sql_table_free(c->tables[i]);
            memmove(c->tables + i, c->tables + i + 1, (size_t)(c->n - i - 1) * sizeof *c->tables);
            c->n--;
            return 0;
        }
    return SPATE_ENOENT;
}

const char *
sql_table_option(const struct sql_table *t, const char *key)
{
    for (int i = 0; i < t->noptions; i++)
        if (strcmp(t->options[i].key, key) == 0)
            return t->options[i].value;
    return NULL;
}

/* ---- functions ---- */

void
sql_function_free(struct sql_function *f)
{
    if (f == NULL)
        return;
    free(f->name);
    free(f->library);
    free(f->symbol);
    free(f);
}

const struct sql_function *
sql_catalog_function(const struct sql_catalog *c, const char *name)
{
    for (int i = 0; i < c->nfunctions; i++)
        if (strcasecmp(c->functions[i]->name, name) == 0)
            return c->functions[i];
    return NULL;
}

int
sql_catalog_add_function(struct sql_catalog *c, struct sql_function *f, spate_error *err)
{
    if (sql_catalog_function(c, f->name) != NULL) {
        int rc = spate_error_set(err, SPATE_EEXIST, "function '%s' exists already", f->name);

        sql_function_free(f);
        return rc;
    }
    xgrow((void **)&c->functions, &c->functions_cap, (size_t)c->nfunctions + 1,
          sizeof *c->functions);
    c->functions[c->nfunctions++] = f;
    return 0;
}

int
sql_catalog_drop_function(struct sql_catalog *c, const char *name)
{
    for (int i = 0; i < c->nfunctions; i++)
        if (strcasecmp(c->functions[i]->name, name) == 0) {
            sql_function_free(c->functions[i]);
            memmove(&c->functions[i], &c->functions[i + 1],
                    (size_t)(c->nfunctions - i - 1) * sizeof *c->functions);
            c->nfunctions--;
            return 0;
        }
    return SPATE_ENOENT;
}
