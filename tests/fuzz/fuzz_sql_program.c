/* libFuzzer target: a SQL operator's program as a TaskManager receives it
 * in the JobGraph (OperatorConfig.sql_program): decoded and checked
 * (sql_program_decode), then, when it passes, run over input registers
 * filled from the rest of the bytes. A program that passes the checks
 * must run without crashing, whatever its registers hold. The same bytes
 * as an aggregate's, a Top-N's and an OVER's spec (sql_agg_spec_decode,
 * sql_rank_spec_decode, sql_over_spec_decode): checked, their output
 * columns made. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sql/sql_aggregate.h"
#include "sql/sql_over.h"
#include "sql/sql_program.h"
#include "sql/sql_rank.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
columns_free(struct sql_column *cols, int n)
{
    for (int i = 0; i < n; i++)
        free(cols[i].name);
    free(cols);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sql_program *p = NULL;
    struct sql_agg_spec *agg = NULL;
    struct sql_rank_spec *rank = NULL;
    struct sql_over_spec *over = NULL;
    int ncols;
    struct sql_eval e;
    spate_error err;
    size_t cut, at;

    /* The first two bytes say where the program ends; the rest are the
     * input columns' values. */
    if (size < 2)
        return 0;
    cut = ((size_t)data[0] << 8 | data[1]) % (size - 1);
    if (sql_agg_spec_decode(data + 2, cut, &agg, &err) == 0) {
        columns_free(sql_agg_output(agg, &ncols), ncols);
        sql_agg_spec_free(agg);
    }
    if (sql_rank_spec_decode(data + 2, cut, &rank, &err) == 0) {
        columns_free(sql_rank_output(rank, NULL, &ncols), ncols);
        sql_rank_spec_free(rank);
    }
    if (sql_over_spec_decode(data + 2, cut, &over, &err) == 0) {
        columns_free(sql_over_output(over, &ncols), ncols);
        sql_over_spec_free(over);
    }
    if (sql_program_decode(data + 2, cut, &p, &err) != 0)
        return 0;
    sql_eval_init(&e, p);
    for (int round = 0; round < 2; round++) {
        at = 2 + cut;
        sql_eval_begin(&e);
        for (int i = 0; i < p->ninput; i++) {
            struct sql_value *v = &e.r[i];
            uint8_t k = at < size ? data[at++] : 0;

            v->null = k & 1;
            if (sql_type_phys(p->regs[i].id) == SQL_PHYS_STRING) {
                size_t n = at < size ? data[at++] % 32 : 0;

                if (n > size - at)
                    n = size - at;
                v->s.p = (const char *)data + at;
                v->s.len = n;
                at += n;
            } else if (size - at >= 8) {
                memcpy(&v->i, data + at, 8);
                at += 8;
            } else {
                v->i = k;
            }
        }
        sql_eval_run(&e);
    }
    sql_eval_release(&e);
    sql_program_free(p);
    return 0;
}
