// glrecon: cone-beam CT reconstruction (FDK). Exit codes: 0 success, 1 failure, 2 usage error.
#include "commands.h"

int main(int argc, char** argv) { return glrecon::app::run(argc, argv); }
