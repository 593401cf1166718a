/* `spate sql [--local | -m HOST:PORT] [-p N] [-f FILE] [-e STATEMENTS]`:
 * Flink's SQL client. Statements from -f's file, then -e's text, else
 * standard input: read whole when it is no terminal, else at a prompt
 * (statements end at ';' and may span lines; an error is printed and the
 * prompt goes on). INSERT INTO and SELECT run as jobs on a mini cluster of
 * their own (--local, waited for) or a cluster over REST (submitted and left
 * running unless 'table.dml-sync' is true); a SELECT's rows print as they
 * arrive. Exit status 0 when every statement succeeded. */
#ifndef SPATE_CLI_CLI_SQL_H
#define SPATE_CLI_CLI_SQL_H

#include "core/config.h"

int cli_sql(const struct config *conf, int argc, char **argv);

#endif
