// Replays fuzz inputs (the seed corpus and every crash the fuzzer found) through a fuzz
// target's entry point as an ordinary test, so `./dev test` keeps them fixed. The target is
// whatever LLVMFuzzerTestOneInput this test links; the directories come as arguments.
#include <dirent.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gtest/gtest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<std::string>* directories = new std::vector<std::string>;

// Files directly in `dir`; none when it does not exist (git keeps no empty crash directory).
std::vector<std::string> Files(const std::string& dir) {
  std::vector<std::string> files;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return files;
  while (dirent* entry = readdir(d)) {
    const std::string path = dir + "/" + entry->d_name;
    struct stat st;  // runfiles are symlinks: follow them
    if (stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) files.push_back(path);
  }
  closedir(d);
  return files;
}

TEST(CorpusReplayTest, EveryInputRunsCleanly) {
  int inputs = 0;
  for (const std::string& dir : *directories) {
    for (const std::string& path : Files(dir)) {
      SCOPED_TRACE(path);  // a crash here names the input in the test log below
      std::ifstream in(path, std::ios::binary);
      std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      fprintf(stderr, "replaying %s (%zu bytes)\n", path.c_str(), data.size());
      EXPECT_EQ(LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(data.data()), data.size()),
                0);
      ++inputs;
    }
  }
  EXPECT_GT(inputs, 0) << "no seed corpus found: the test would prove nothing";
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) directories->push_back(argv[i]);
  return RUN_ALL_TESTS();
}
