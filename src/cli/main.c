/* The spate executable: everything happens in libspate.so. */
#include "cli/cli.h"

int
main(int argc, char **argv)
{
    return spate_cli_main(argc, argv);
}
