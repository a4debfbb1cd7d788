// Overrides of planned launch choices, for A/B measurements only
// (scripts/nvidia_ab.py): with OPRT_TUNE_<NAME>=<integer> in the environment,
// tuned("<NAME>", planned) returns that integer instead of `planned`. Read
// when a descriptor is created; unset in normal use.
#ifndef OPRT_COMMON_TUNING_H_
#define OPRT_COMMON_TUNING_H_

#include <cstdint>
#include <cstdlib>
#include <string>

namespace oprt {

inline int64_t tuned(const char* name, int64_t planned) {
  const char* value = std::getenv(("OPRT_TUNE_" + std::string(name)).c_str());
  if (value == nullptr || *value == '\0') return planned;
  char* end = nullptr;
  const long long v = std::strtoll(value, &end, 10);
  return *end == '\0' ? static_cast<int64_t>(v) : planned;
}

}  // namespace oprt

#endif
