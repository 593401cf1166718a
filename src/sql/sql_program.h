/* A SQL operator's compiled program and its evaluator: registers of fixed
 * SQL types (the input columns first, then constants, then temporaries),
 * instructions run in order over them with jumps for CASE, COALESCE and
 * the short cuts of AND and OR, NULL carried in each register. The planner
 * compiles it once on the client (sql_expr.h); the operator decodes and
 * checks it once (sql_program_decode: every register, type and jump) and
 * runs it per record with no allocation beyond its string arena. A
 * program belongs to its operator's task thread. */
#ifndef SPATE_SQL_SQL_PROGRAM_H
#define SPATE_SQL_SQL_PROGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <spate/spate.h>

#include "sql/sql_nexmark.h"
#include "sql/sql_types.h"

/* Operand types of each op: i int64 (BOOLEAN, INT, BIGINT, DECIMAL, DATE,
 * TIMESTAMP, INTERVAL), f double, s string. */
enum sql_op {
    SQLOP_CONST, /* dst = imm | fimm | sval (run once, at open); a = 1: NULL */
    SQLOP_COPY,  /* dst = a (same physical type) */
    /* int64 arithmetic (wrapping, as Java's); division and modulo by zero
     * are NULL */
    SQLOP_ADD_I,
    SQLOP_SUB_I,
    SQLOP_MUL_I,
    SQLOP_DIV_I,
    SQLOP_MOD_I,
    SQLOP_NEG_I,
    SQLOP_ABS_I,
    /* double arithmetic */
    SQLOP_ADD_F,
    SQLOP_SUB_F,
    SQLOP_MUL_F,
    SQLOP_DIV_F,
    SQLOP_MOD_F,
    SQLOP_NEG_F,
    SQLOP_ABS_F,
    SQLOP_POW_F,
    SQLOP_SQRT_F,
    SQLOP_FLOOR_F,
    SQLOP_CEIL_F,
    SQLOP_ROUND_F, /* b: digits (int) */
    SQLOP_ROUND_I, /* DECIMAL a of scale imm rounded to b digits, kept at scale imm */
    /* conversions */
    SQLOP_I2F,     /* imm: the scale of a */
    SQLOP_F2I,     /* imm: the scale of dst; truncates toward zero */
    SQLOP_RESCALE, /* int a of scale imm to scale c (rounding half away from zero; fimm != 0:
                    truncating) */
    SQLOP_TO_S,    /* a (of type imm: sql_type_id | scale << 8) to text */
    SQLOP_FROM_S,  /* text a to dst's type; NULL when it does not read as one */
    SQLOP_INT32,   /* dst = a wrapped to 32 bits (INT results) */
    /* comparisons: dst BOOLEAN; imm the enum sql_cmp */
    SQLOP_CMP_I,
    SQLOP_CMP_F,
    SQLOP_CMP_S,
    /* three-valued logic over BOOLEAN */
    SQLOP_AND,
    SQLOP_OR,
    SQLOP_NOT,
    SQLOP_IS_NULL,     /* dst = a IS NULL (never NULL) */
    SQLOP_IS_NOT_NULL, /* dst = a IS NOT NULL */
    /* control: imm the target instruction, later than this one */
    SQLOP_JMP,
    SQLOP_JMP_UNLESS_TRUE, /* when a is FALSE or NULL */
    SQLOP_JMP_IF_NOT_NULL, /* when a is not NULL */
    SQLOP_JMP_IF_FALSE,    /* when a is FALSE (not NULL) */
    SQLOP_JMP_IF_TRUE,     /* when a is TRUE */
    /* strings */
    SQLOP_LIKE, /* a LIKE sval (the pattern; imm: escape char or 0) */
    SQLOP_CONCAT,
    SQLOP_UPPER,
    SQLOP_LOWER,
    SQLOP_LENGTH,   /* characters (UTF-8) */
    SQLOP_SUBSTR,   /* a, from b (1-based), c characters (imm 1: to the end) */
    SQLOP_TRIM,     /* imm: 1 leading, 2 trailing, 3 both */
    SQLOP_REPLACE,  /* a with every b replaced by c */
    SQLOP_POSITION, /* b in a, 1-based, 0 when absent */
    /* date and time: imm the field (enum sql_time_field) */
    SQLOP_EXTRACT,   /* a TIMESTAMP (milliseconds) */
    SQLOP_EXTRACT_D, /* a DATE (days) */
    /* Flink's string functions */
    SQLOP_SPLIT_INDEX,    /* piece c (0-based) of a cut at each b; NULL past the last */
    SQLOP_REGEXP_EXTRACT, /* group b of sval's first match in a (POSIX ERE); NULL: none */
    SQLOP_DATE_FORMAT,    /* TIMESTAMP a as text by the pattern sval (sql_date_format) */
    SQLOP_PROCTIME,       /* dst = the wall clock, ms since the epoch (PROCTIME()) */
    /* a scalar function in C (sql_udf.h): sval its "symbol@library", its
     * imm arguments the registers a, a + 1, ... */
    SQLOP_UDF,
    SQLOP_COUNT,
};

enum sql_cmp { SQL_EQ, SQL_NE, SQL_LT, SQL_LE, SQL_GT, SQL_GE };

enum sql_time_field {
    SQL_F_YEAR,
    SQL_F_MONTH,
    SQL_F_DAY,
    SQL_F_HOUR,
    SQL_F_MINUTE,
    SQL_F_SECOND,
    SQL_F_MILLISECOND,
    SQL_F_DOW,
    SQL_F_DOY,
    SQL_F_EPOCH,
    SQL_F_EPOCH_DAY, /* days since 1970-01-01, rounded down (TIMESTAMP to DATE) */
};

struct sql_insn {
    uint16_t op;
    uint16_t dst, a, b, c;
    int64_t imm;
    double fimm;
    char *sval;
    size_t slen;
};

/* How records become the input columns, and what the output is. */
enum sql_format {
    SQL_FORMAT_ROW,     /* a row (streaming/types.h types_new_row) */
    SQL_FORMAT_CSV,     /* a string line of CSV (RFC 4180 quotes) */
    SQL_FORMAT_JSON,    /* a string line of one JSON object */
    SQL_FORMAT_DATAGEN, /* input only: an int64 index, the columns made from it */
    SQL_FORMAT_PRINT,   /* output only: Flink's print form, +I[a, b] */
    SQL_FORMAT_NONE,    /* output only: nothing (blackhole) */
    SQL_FORMAT_NEXMARK, /* input only: an int64 event number, the columns of its event */
};

struct sql_column {
    char *name;
    struct sql_type type;
};

struct sql_datagen_field {
    bool sequence;
    int64_t min, max, length, start, end;
    double null_rate;
};

/* The nexmark connector's table: its kind of event (the other kinds'
 * records are skipped), the event field of each input column. */
struct sql_nexmark_source {
    struct sql_nexmark_config config;
    enum sql_nexmark_kind kind;
    int *fields; /* enum sql_nexmark_field, one per input column */
};

void sql_nexmark_source_free(struct sql_nexmark_source *s);

/* A program as the planner builds it and the operator runs it. */
struct sql_program {
    enum sql_format input_format, output_format;
    struct sql_column *input;
    int ninput;
    struct sql_datagen_field *datagen; /* ninput of them */
    uint64_t datagen_seed;
    struct sql_nexmark_source *nexmark; /* SQL_FORMAT_NEXMARK */
    char csv_delimiter;                 /* the input's */
    char csv_out_delimiter;             /* the output's */
    bool ignore_parse_errors;
    struct sql_type *regs; /* the input columns' first */
    int nregs;
    struct sql_insn *code;
    int ncode;
    int filter;  /* -1: none */
    int rowtime; /* the input column records are stamped with (event time), -1: none */
    /* GROUP BY's key: after the program ran, key_reg (VARCHAR, -1: none)
     * gets the bytes of key_regs (sql_key_encode), what the exchange keys
     * by. */
    int *key_regs;
    int nkey;
    int key_reg;
    /* A changelog's row kind (enum sql_row_kind), the INT input register
     * that holds it, -1: none (every row an insertion). */
    int kind_reg;
    /* A CSV or JSON output line led by its row kind's string (+I, -U, +U,
     * -D): a changelog line, what an upsert sink reads
     * (connectors/changelog_line.h). */
    bool changelog;
    /* A partitioned filesystem sink's: the output columns (indexes) that
     * name the row's bucket, Flink's partition path "dt=.../hm=..." (each
     * name and value escaped as PartitionPathUtils.escapePathName, a NULL
     * or empty value __DEFAULT_PARTITION__). The CSV or JSON line is led by
     * the bucket and a newline (which an escaped bucket never holds), and
     * leaves those columns out, as Flink's files do. */
    int *partition;
    int npartition;
    int *outputs;
    struct sql_column *output;
    int noutput;
};

/* Flink's RowKind, its numbers and its short strings (+I, -U, +U, -D). */
enum sql_row_kind { SQL_INSERT, SQL_UPDATE_BEFORE, SQL_UPDATE_AFTER, SQL_DELETE };
const char *sql_row_kind_string(int64_t kind);

void sql_program_free(struct sql_program *p);
/* A column as sql.proto's Column (its name borrowed; free the struct), and
 * back (the name copied). */
struct Sqlplan__Column *sql_column_encode(const struct sql_column *c);
void sql_column_decode(const struct Sqlplan__Column *pc, struct sql_column *c);
/* The program as bytes (sql.proto's Calc), malloc'd. */
int sql_program_encode(const struct sql_program *p, uint8_t **out, size_t *len, spate_error *err);
/* Decodes and checks a program: every register index in range, each
 * instruction's operands of the physical types it reads, jumps forward and
 * inside, the outputs' and filter's types. */
int sql_program_decode(const uint8_t *bytes, size_t len, struct sql_program **out,
                       spate_error *err);
/* One line per instruction, for EXPLAIN. */
char *sql_program_describe(const struct sql_program *p);

/* Whether the program reads input column i (an instruction's operand, an
 * output, the filter or the rowtime): read[ninput], filled in. */
void sql_program_inputs_read(const struct sql_program *p, bool *read);

/* A running program: its registers and its string arena. */
struct sql_eval {
    const struct sql_program *p;
    struct sql_value *r;
    int start;   /* the first instruction after the constants */
    char *arena; /* strings made while a record is evaluated */
    size_t used, cap;
    char **old; /* chunks outgrown during this record, freed at the next */
    size_t nold, old_cap;
    void *regex;                 /* regex_t of each REGEXP_EXTRACT instruction, by its index */
    struct sql_udf_binding *udf; /* each UDF instruction's function (sql_udf_bind), by its
                                    index; NULL: not bound, its calls give NULL */
};

int sql_eval_init(struct sql_eval *e, const struct sql_program *p);
void sql_eval_release(struct sql_eval *e);
/* Before a record's input registers are set: the strings made for the
 * previous record go. */
void sql_eval_begin(struct sql_eval *e);
/* Runs the program over the input registers (set by the caller). */
void sql_eval_run(struct sql_eval *e);
/* Room for n bytes of a string made during this record. */
char *sql_eval_alloc(struct sql_eval *e, size_t n);

/* The bytes of a group key, the values v[regs[i]] of types[regs[i]], into
 * out (sql_key_size of room): a NULL flag each, then the value (8 bytes, or
 * a string's length and bytes). */
size_t sql_key_size(const struct sql_type *types, const struct sql_value *v, const int *regs,
                    int n);
size_t sql_key_encode(const struct sql_type *types, const struct sql_value *v, const int *regs,
                      int n, char *out);

/* SQL LIKE with % and _ (and an escape character, or 0). */
bool sql_like(const char *s, size_t slen, const char *pat, size_t plen, char escape);

#endif
