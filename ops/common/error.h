// Errors inside the C++ implementation travel as oprt::Error exceptions; every
// C entry point catches them (guard) and turns them into a status plus a
// per-thread last-error message.
#ifndef OPRT_COMMON_ERROR_H_
#define OPRT_COMMON_ERROR_H_

#include <cstdio>
#include <exception>
#include <new>
#include <string>

#include "operator_runtime/operator_runtime.h"

namespace oprt {

class Error : public std::exception {
 public:
  Error(oprt_status_t status, std::string message) : status_(status), message_(std::move(message)) {}
  oprt_status_t status() const { return status_; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  oprt_status_t status_;
  std::string message_;
};

void set_last_error(const std::string& message);

// printf-style formatting for error messages.
template <class... Args>
std::string format(const char* fmt, Args... args) {
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, fmt, args...);
  return buffer;
}
inline std::string format(const char* text) { return text; }

template <class... Args>
[[noreturn]] void fail(oprt_status_t status, const char* fmt, Args... args) {
  throw Error(status, format(fmt, args...));
}

// Runs body() and converts any exception into a status and last-error text.
template <class Body>
oprt_status_t guard(const char* function, Body&& body) noexcept {
  try {
    body();
    return OPRT_STATUS_SUCCESS;
  } catch (const Error& e) {
    set_last_error(std::string(function) + ": " + e.what());
    return e.status();
  } catch (const std::bad_alloc&) {
    set_last_error(std::string(function) + ": out of host memory");
    return OPRT_STATUS_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    set_last_error(std::string(function) + ": internal error: " + e.what());
    return OPRT_STATUS_INTERNAL_ERROR;
  } catch (...) {
    set_last_error(std::string(function) + ": unknown internal error");
    return OPRT_STATUS_INTERNAL_ERROR;
  }
}

}  // namespace oprt

#endif
