// Precompiled header of the Catch2 test executables (tests/meson.build,
// `cpp_pch`): the system headers nearly every test unit parses, directly or
// through the project's headers. Parsing them was half of each unit's compile
// time, and the test units are most of a build (three builds per CI run).
// System headers only: a project header here would rebuild every test when it
// changes. Each test still includes what it uses (a build with -Db_pch=false
// must compile).

#include <catch2/catch.hpp>
#include <infiniband/verbs.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <variant>
#include <vector>
