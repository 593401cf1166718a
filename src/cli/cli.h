/* The spate command: parses the command line, loads the configuration, and
 * runs a subcommand. The `spate` executable is a main() that calls this, so
 * that all of the engine lives in libspate.so. */
#ifndef SPATE_CLI_CLI_H
#define SPATE_CLI_CLI_H

#include <spate/export.h>

/* Returns the process's exit status. */
SPATE_API int spate_cli_main(int argc, char **argv);

#endif
