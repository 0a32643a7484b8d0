// Escaping for the text formats we write: a JSON string body and an RFC 4180 CSV field.
#pragma once

#include <string>

namespace hs {

std::string json_escape(const std::string& s);  // without the surrounding quotes
std::string csv_field(const std::string& s);    // quoted only when it holds , " or a line break
std::string html_escape(const std::string& s);  // < > & " as entities

}  // namespace hs
