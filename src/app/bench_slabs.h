#pragma once
// glrecon bench's slab measurement (--gpu-memory, or several --gpu): per backend the whole FDK in one block and in slabs,
// the slab result compared with the one-block result bit for bit.
#include <string>
#include <utility>
#include <vector>

#include "glrecon/fdk.h"
#include "scan_options.h"

namespace glrecon::app {

struct SlabBenchRequest {
  SampleScanOptions scan;
  std::vector<std::string> backends;
  std::pair<std::string, int> window;  ///< the first --window, as given and as the library takes it
  std::vector<int> gpus;
  std::string gpuList, gpuMemory;  ///< as given, for the header
  FilterPlace filterPlace = FilterPlace::Auto;
  int threads = 0, repeat = 1;
  bool quiet = false;
};
void runSlabBench(const SlabBenchRequest& request);

}  // namespace glrecon::app
