// Diagnostics for bad input: every problem names file:line:col, the field path and what was expected.
//
// Loaders collect every problem of a file into a Diagnostics list before failing, so a user fixes
// all typos in one go. A failed load throws InputError carrying the list; the CLI prints it to stderr
// and exits with code 2 (kExitBadInput). Warnings (e.g. "trace re-binned from 16 to 32 sources") go
// in the same list with severity kWarning and never fail a load.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace hs {

inline constexpr int kExitBadInput = 2;

struct SourceLocation {
  std::string file;
  int line = 0;    // 1-based; 0 = unknown
  int column = 0;  // 1-based; 0 = unknown
};

enum class Severity { kError, kWarning };

struct Diagnostic {
  Severity severity = Severity::kError;
  SourceLocation where;
  std::string field;    // dotted path, e.g. "nic.bandwidth" or "records[3].counts[1][0]"
  std::string message;  // what is wrong and what was expected
};

std::string to_string(const Diagnostic& d);

// The 1-based line:column of `p` inside text[0, size) (parsers that keep a pointer into their buffer,
// e.g. simdjson's current_location, call this only on errors); {file, 0, 0} when p is not inside.
SourceLocation locate_in_text(const char* text, size_t size, const char* p, const std::string& file);

// The offset of the first byte of `text` that does not continue valid UTF-8 (overlong forms,
// surrogates and code points above U+10FFFF included), or npos. Loaders use it to name the line of
// non-UTF-8 bytes (YAML before parsing; JSON when simdjson reports a UTF-8 error).
size_t invalid_utf8(std::string_view text);
// The first byte of text[0, size) that is not UTF-8 (text itself when every byte is).
inline const char* first_non_utf8(const char* text, size_t size) {
  const size_t bad = invalid_utf8(std::string_view(text, size));
  return text + (bad == std::string_view::npos ? 0 : bad);
}

class Diagnostics {
 public:
  void error(SourceLocation where, std::string field, std::string message);
  void warning(SourceLocation where, std::string field, std::string message);
  bool has_errors() const { return errors_ > 0; }
  const std::vector<Diagnostic>& all() const { return items_; }
  std::vector<Diagnostic> warnings() const;
  // Throws InputError with every collected diagnostic if any is an error.
  void throw_if_errors() const;
  void append(const Diagnostics& other);

 private:
  std::vector<Diagnostic> items_;
  int errors_ = 0;
};

class InputError : public std::runtime_error {
 public:
  explicit InputError(std::vector<Diagnostic> diags);
  // Convenience for a single problem.
  InputError(SourceLocation where, std::string field, std::string message);
  const std::vector<Diagnostic>& diagnostics() const { return diags_; }

 private:
  std::vector<Diagnostic> diags_;
};

}  // namespace hs
