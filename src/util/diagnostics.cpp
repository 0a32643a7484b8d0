#include "util/diagnostics.hpp"

#include <cstdint>
#include <fmt/format.h>

namespace hs {

SourceLocation locate_in_text(const char* text, size_t size, const char* p, const std::string& file) {
  if (p == nullptr || p < text || p > text + size) return {file, 0, 0};
  int line = 1, col = 1;
  for (const char* q = text; q < p; ++q) {
    if (*q == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {file, line, col};
}

size_t invalid_utf8(std::string_view t) {
  size_t i = 0;
  while (i < t.size()) {
    const auto c = static_cast<unsigned char>(t[i]);
    int n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
    if (n < 0 || i + n >= t.size() + (n == 0 ? 1 : 0)) return i;
    uint32_t cp = n == 0 ? c : n == 1 ? c & 0x1F : n == 2 ? c & 0x0F : c & 0x07;
    for (int k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(t[i + k]);
      if ((d >> 6) != 2) return i;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return i;
    i += n + 1;
  }
  return std::string_view::npos;
}

std::string to_string(const Diagnostic& d) {
  std::string loc = d.where.file.empty() ? std::string("<input>") : d.where.file;
  if (d.where.line > 0) {
    loc += fmt::format(":{}", d.where.line);
    if (d.where.column > 0) loc += fmt::format(":{}", d.where.column);
  }
  const char* sev = d.severity == Severity::kError ? "error" : "warning";
  if (d.field.empty()) return fmt::format("{}: {}: {}", loc, sev, d.message);
  return fmt::format("{}: {}: {}: {}", loc, sev, d.field, d.message);
}

void Diagnostics::error(SourceLocation where, std::string field, std::string message) {
  items_.push_back({Severity::kError, std::move(where), std::move(field), std::move(message)});
  ++errors_;
}

void Diagnostics::warning(SourceLocation where, std::string field, std::string message) {
  items_.push_back({Severity::kWarning, std::move(where), std::move(field), std::move(message)});
}

std::vector<Diagnostic> Diagnostics::warnings() const {
  std::vector<Diagnostic> out;
  for (const auto& d : items_)
    if (d.severity == Severity::kWarning) out.push_back(d);
  return out;
}

void Diagnostics::throw_if_errors() const {
  if (errors_ > 0) throw InputError(items_);
}

void Diagnostics::append(const Diagnostics& other) {
  for (const auto& d : other.items_) {
    items_.push_back(d);
    if (d.severity == Severity::kError) ++errors_;
  }
}

namespace {
std::string summarize(const std::vector<Diagnostic>& diags) {
  std::string s;
  for (const auto& d : diags) {
    if (!s.empty()) s += '\n';
    s += to_string(d);
  }
  return s;
}
}  // namespace

InputError::InputError(std::vector<Diagnostic> diags)
    : std::runtime_error(summarize(diags)), diags_(std::move(diags)) {}

InputError::InputError(SourceLocation where, std::string field, std::string message)
    : InputError(std::vector<Diagnostic>{
          Diagnostic{Severity::kError, std::move(where), std::move(field), std::move(message)}}) {}

}  // namespace hs
