#pragma once
// The small scan the command-line tests reconstruct (cli_test.cpp, cli_gl_test.cpp).
#include <string>

namespace glrecon::test {

// A small scan every test can reconstruct in well under a second.
inline const std::string kSmallScan = "phantom -o scan --projections 60 --detector 64 --detector-spacing 8 -q";

}  // namespace glrecon::test
