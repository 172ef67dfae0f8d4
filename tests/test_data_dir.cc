// brisk::testing::test_data_dir() (test_util.h), the one translation unit compiled with the checkout's absolute path
// (BRISK_TEST_DATA_DIR): a define on every test's command line made each clone's test objects miss the compiler
// cache, whose base_dir rewrites include paths but not defines.
#include <filesystem>

namespace brisk::testing {

std::filesystem::path test_data_dir() { return BRISK_TEST_DATA_DIR; }

}  // namespace brisk::testing
